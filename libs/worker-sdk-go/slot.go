package worker

import (
	"errors"
	"time"
)

// backlogPull: a pull answered this fast found its message waiting, so the queue has a backlog and
// the slot's result asks for the next delivery too (decision 0100). A slower one waited for it.
const backlogPull = 50 * time.Millisecond

// slot is one handler slot: pull (only while free), run, repeat, until the worker stops pulling.
func (w *Worker) slot(rot *rotation) {
	var carried *delivered
	var carriedRoute route
	failures := 0
	for w.pullCtx.Err() == nil {
		var dl *delivered
		var rt route
		backlog := true
		if carried != nil {
			dl, rt, carried = carried, carriedRoute, nil
		} else {
			if pause := time.Until(time.Unix(0, w.pausedUntil.Load())); pause > 0 {
				sleep(w.pullCtx, pause)
				continue
			}
			var wait int
			var release func()
			rt, wait, release = rot.take()
			// Monotonic: a lease the pull brings is counted from here (decision 0118).
			sent := time.Now()
			// The gateway acquires the lease with the delivery: one call fewer per stage (decision 0098).
			d, err := w.client.pull(w.pullCtx, rt.queue, wait, w.session.workerID())
			release()
			if err != nil {
				if w.pullCtx.Err() != nil {
					break
				}
				w.pullFailed(err, rt, failures)
				failures++
				continue
			}
			failures = 0
			if d == nil {
				if wait == 0 {
					sleep(w.pullCtx, 500*time.Millisecond)
				}
				continue
			}
			dl = &delivered{d: d, sent: sent}
			// A pull that waited for a place of its handler's limit, not for a message, also found
			// a backlog: the gateway says so (decision 0132).
			backlog = time.Since(sent) <= backlogPull || d.Backlog
		}
		if w.pullCtx.Err() != nil {
			// The delivery arrived as the stop began: hand it back at once.
			_ = w.client.ack(w.abandonCtx, dl.d.Token, true)
			break
		}
		rot.setBusy(1)
		nextQueue := ""
		var nextRoute route
		if backlog {
			// Under load the result pulls this slot's next delivery: one request per stage, not two.
			nextRoute = rot.pickNext()
			nextQueue = nextRoute.queue
		}
		if next := w.runDelivery(*dl, rt, nextQueue); next != nil {
			carried, carriedRoute = next, nextRoute
		}
		rot.setBusy(-1)
	}
	if carried != nil {
		_ = w.client.ack(w.abandonCtx, carried.d.Token, true)
	}
}

func (w *Worker) pullFailed(err error, rt route, failures int) {
	var bad *malformedDelivery
	if errors.As(err, &bad) {
		w.log.Error("malformed delivery; acknowledging it so it is not redelivered", "queue", rt.queue, "error", err)
		_ = w.client.ack(w.abandonCtx, bad.token, false)
		return
	}
	if ae, ok := isStatus(err, 429); ok {
		// The gateway holds too many unacknowledged deliveries: every slot waits.
		d := ae.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		until := time.Now().Add(d).UnixNano()
		for {
			cur := w.pausedUntil.Load()
			if cur >= until || w.pausedUntil.CompareAndSwap(cur, until) {
				break
			}
		}
		w.log.Debug("pull answered 429; backing off", "delayMs", d.Milliseconds())
		return
	}
	d := backoff(failures, w.opts.RetryBaseDelay, w.opts.RetryMaxDelay)
	w.log.Warn("pull failed; backing off", "queue", rt.queue, "delayMs", d.Milliseconds(), "error", err)
	sleep(w.pullCtx, d)
}
