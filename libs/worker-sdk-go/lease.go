package worker

import (
	"context"
	"math/rand"
	"sync"
	"time"
)

// leaseKeeper renews one execution's lease in the background and counts the lease on the SDK's
// own monotonic clock (decision 0118): from when the request that got it was sent, so the SDK
// gives up no later than the server does, whatever either clock says. A refusal (acquired false,
// 404, 409) or a lapse is a loss: the handler is cancelled and its result withheld. Any other
// failure is retried sooner than the regular period while the lease is still valid locally.
type leaseKeeper struct {
	interval, duration time.Duration
	renew              func(ctx context.Context) (*leaseResponse, error)
	onLost             func(*LeaseLostError)
	log                Logger
	fields             []any

	mu       sync.Mutex
	expires  time.Time // carries a monotonic reading
	stopped  bool
	lost     *LeaseLostError
	lostCh   chan struct{}
	renewT   *time.Timer
	lapseT   *time.Timer
	failures int
	ctx      context.Context
	cancel   context.CancelFunc
}

func newLeaseKeeper(o *Options, grantSent time.Time, renew func(context.Context) (*leaseResponse, error),
	onLost func(*LeaseLostError), fields []any) *leaseKeeper {
	k := &leaseKeeper{interval: o.LeaseRenewInterval, duration: o.LeaseDuration, renew: renew, onLost: onLost,
		log: o.Logger, fields: fields, expires: grantSent.Add(o.LeaseDuration), lostCh: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k
}

func (k *leaseKeeper) start() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lapseT = time.AfterFunc(time.Until(k.expires), k.checkLapse)
	k.renewT = time.AfterFunc(k.regularDelay(), k.tick)
}

// stop ends renewals; a loss already reported stays reported.
func (k *leaseKeeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopLocked()
}

func (k *leaseKeeper) stopLocked() {
	if k.stopped {
		return
	}
	k.stopped = true
	k.renewT.Stop()
	k.lapseT.Stop()
	k.cancel()
}

// lostReason is why the lease was lost; "" while it is held.
func (k *leaseKeeper) lostReason() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost == nil {
		return ""
	}
	return k.lost.Reason
}

// regularDelay is the period, but within half of what is left: a lease counted from a long-polled
// pull starts with less than the full duration, and its renewal must still get in well before the end.
func (k *leaseKeeper) regularDelay() time.Duration {
	d := time.Until(k.expires) / 2
	if d > k.interval {
		d = k.interval
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// retryDelay is a tenth to a quarter of the period, jittered (2-5 s at the default 20 s).
func (k *leaseKeeper) retryDelay() time.Duration {
	d := k.interval/10 + time.Duration(rand.Float64()*float64(k.interval)*3/20)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

func (k *leaseKeeper) checkLapse() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	// Timers may fire a hair early against the monotonic clock: check again rather than give up early.
	if left := time.Until(k.expires); left > 0 {
		k.lapseT.Reset(left)
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	k.lose(ReasonLapsed)
}

func (k *leaseKeeper) tick() {
	// The server extends from its own now, which comes after this moment: counting from here never
	// overshoots its expiry.
	sent := time.Now()
	lease, err := k.renew(k.ctx)
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	if err == nil && !*lease.Acquired {
		k.mu.Unlock()
		reason := "refused"
		if lease.Reason != nil && *lease.Reason != "" {
			reason = *lease.Reason
		}
		k.lose(reason)
		return
	}
	if err == nil {
		if e := sent.Add(k.duration); e.After(k.expires) {
			k.expires = e
		}
		k.lapseT.Reset(time.Until(k.expires))
		if k.failures > 0 {
			k.log.Info("lease renewed again", with(k.fields, "failures", k.failures)...)
		}
		k.failures = 0
		k.renewT.Reset(k.regularDelay())
		k.mu.Unlock()
		return
	}
	if reason := refusalOf(err); reason != "" {
		k.mu.Unlock()
		k.lose(reason)
		return
	}
	k.failures++
	delay := k.retryDelay()
	k.renewT.Reset(delay)
	left := time.Until(k.expires)
	failures := k.failures
	k.mu.Unlock()
	k.log.Warn("lease renewal failed; retrying while the lease lasts",
		with(k.fields, "failures", failures, "delayMs", delay.Milliseconds(), "remainingMs", left.Milliseconds(), "error", err)...)
}

func (k *leaseKeeper) lose(reason string) {
	k.mu.Lock()
	if k.lost != nil || k.stopped {
		k.mu.Unlock()
		return
	}
	k.lost = &LeaseLostError{Reason: reason}
	k.stopLocked()
	close(k.lostCh)
	k.mu.Unlock()
	msg := "lease renewal refused; cancelling the handler"
	if reason == ReasonLapsed {
		msg = "lease ran out without a renewal; cancelling the handler"
	}
	k.log.Warn(msg, with(k.fields, "reason", reason)...)
	k.onLost(k.lost)
}

// refusalOf is the reason of an answer saying the lease is no longer this worker's; "" otherwise.
func refusalOf(err error) string {
	if _, ok := isStatus(err, 404); ok {
		return "not_found"
	}
	if ae, ok := isStatus(err, 409); ok {
		if ae.Code != "" {
			return ae.Code
		}
		return "conflict"
	}
	return ""
}
