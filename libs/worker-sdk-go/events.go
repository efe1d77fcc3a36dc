package worker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// events batches lifecycle events and sends them in the background (POST /workers/events). Best
// effort: push never blocks, a full buffer drops its oldest events, and a batch the server rejects
// (400) is dropped rather than retried.
type events struct {
	send     func(ctx context.Context, batch []workerEvent) error
	log      Logger
	every    time.Duration
	enabled  bool
	maxBuf   int
	mu       sync.Mutex
	buf      []workerEvent
	dropped  int
	failing  bool
	kick     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	stopCh   chan struct{}
}

func newEvents(enabled bool, every time.Duration, log Logger, send func(context.Context, []workerEvent) error) *events {
	return &events{send: send, log: log, every: every, enabled: enabled, maxBuf: 1000,
		kick: make(chan struct{}, 1), done: make(chan struct{}), stopCh: make(chan struct{})}
}

func (e *events) start() {
	if !e.enabled {
		close(e.done)
		return
	}
	go e.loop()
}

func (e *events) push(ev workerEvent) {
	if !e.enabled {
		return
	}
	if ev.At == "" {
		ev.At = nowISO()
	}
	ev.Message = truncate(ev.Message, maxEventMessageChars)
	e.mu.Lock()
	e.buf = append(e.buf, ev)
	if over := len(e.buf) - e.maxBuf; over > 0 {
		e.buf = append(e.buf[:0:0], e.buf[over:]...)
		e.dropped += over
	}
	full := len(e.buf) >= maxEventsPerBatch && !e.failing
	e.mu.Unlock()
	if full {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

func (e *events) loop() {
	defer close(e.done)
	t := time.NewTicker(e.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-e.kick:
		case <-e.stopCh:
			return
		}
		e.flush(context.Background())
	}
}

// flush sends everything buffered, or stops at the first batch that could not be sent.
func (e *events) flush(ctx context.Context) {
	for {
		e.mu.Lock()
		n := len(e.buf)
		if n == 0 {
			e.mu.Unlock()
			return
		}
		if n > maxEventsPerBatch {
			n = maxEventsPerBatch
		}
		batch := append([]workerEvent(nil), e.buf[:n]...)
		e.buf = e.buf[n:]
		e.mu.Unlock()
		err := e.send(ctx, batch)
		e.mu.Lock()
		if err == nil {
			if e.failing {
				e.log.Info("lifecycle events are being delivered again")
			}
			e.failing = false
			if e.dropped > 0 {
				e.log.Warn("lifecycle events were dropped while the server was unreachable", "count", e.dropped)
				e.dropped = 0
			}
			e.mu.Unlock()
			continue
		}
		var pe *ProtocolError
		if _, bad := isStatus(err, 400); bad || errors.As(err, &pe) {
			e.mu.Unlock()
			e.log.Warn("the server rejected a batch of lifecycle events; dropping it", "count", len(batch), "error", err)
			continue
		}
		e.buf = append(batch, e.buf...)
		if over := len(e.buf) - e.maxBuf; over > 0 {
			e.buf = e.buf[over:]
			e.dropped += over
		}
		if !e.failing {
			e.log.Warn("lifecycle events could not be sent; will retry", "error", err)
		}
		e.failing = true
		e.mu.Unlock()
		return
	}
}

// close stops the loop and makes a last attempt to send, bounded by timeout.
func (e *events) close(timeout time.Duration) {
	if !e.enabled {
		return
	}
	e.stopOnce.Do(func() { close(e.stopCh) })
	<-e.done
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	e.flush(ctx)
}
