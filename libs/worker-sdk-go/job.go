package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// One delivery, from lease to ack: acquire the lease (refused → ack without running the handler),
// run the handler while renewing the lease, post the result (the same bytes again after an unknown
// outcome, never running the handler twice) while still renewing, and ack only after the 202. A
// lost lease cancels the handler, withholds its result and, after AbortGrace, frees the slot.

// delivered is a delivery with when the request that brought it was sent: a lease it carries is
// counted from then (decision 0118).
type delivered struct {
	d    *pullJobResponse
	sent time.Time
}

type resultFate int

const (
	fateAccepted resultFate = iota // 202 from a gateway that ignores ackToken: ack separately
	fateAnswered                   // 202 that answered ackToken: the gateway acked (or cannot)
	fateLeaseLost
	fateRejected
	fateUndelivered
)

func (w *Worker) runDelivery(dl delivered, rt route, nextQueue string) *delivered {
	d := dl.d
	m := d.Payload
	fields := []any{"stageId", *m.StageID, "pipelineId", *m.PipelineID, "executionId", m.ExecutionID, "handler", rt.handler}
	lease, grantSent := d.Lease, dl.sent
	if lease == nil {
		var ok, requeue bool
		lease, grantSent, ok, requeue = w.acquire(d, fields)
		if !ok {
			w.ackLater(d.Token, requeue, fields)
			return nil
		}
	}
	if !*lease.Acquired {
		reason := ""
		if lease.Reason != nil {
			reason = *lease.Reason
		}
		w.log.Info("lease refused; acknowledging the delivery without running it", with(fields, "reason", reason)...)
		w.ackLater(d.Token, false, fields)
		return nil
	}
	attempt := m.PreviousAttempts + 1
	if lease.Attempt != nil {
		attempt = *lease.Attempt
	}
	w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	return w.execute(d, grantSent, rt, attempt, with(fields, "attempt", attempt), nextQueue)
}

// acquire gets the lease of a delivery that came without one, with a few retries. ok false:
// requeue says whether the delivery goes back to its queue (unreachable) or is dropped (refused).
func (w *Worker) acquire(d *pullJobResponse, fields []any) (lease *leaseResponse, sent time.Time, ok, requeue bool) {
	m := d.Payload
	tp, _ := d.Headers["traceparent"].(string)
	for i := 0; ; i++ {
		sent = time.Now()
		err := w.session.call(w.abandonCtx, func(token, workerID string) error {
			var err error
			lease, err = w.client.lease(w.abandonCtx, "acquire", token, *m.StageID, &leaseRequest{m.ExecutionID, workerID}, tp)
			return err
		})
		if err == nil {
			return lease, sent, true, false
		}
		retryable := IsRetryable(err)
		if retryable && i < 2 && sleep(w.abandonCtx, backoff(i, w.opts.RetryBaseDelay, w.opts.RetryMaxDelay)) {
			continue
		}
		if retryable {
			w.log.Warn("lease acquisition failed; returning the delivery to the queue", with(fields, "error", err)...)
		} else {
			w.log.Warn("lease acquisition rejected; dropping the delivery", with(fields, "error", err)...)
			w.events.push(workerEvent{Kind: "error", StageID: *m.StageID, PipelineID: *m.PipelineID, Message: "lease acquisition rejected: " + err.Error()})
		}
		return nil, sent, false, retryable
	}
}

func (w *Worker) execute(d *pullJobResponse, grantSent time.Time, rt route, attempt int, fields []any, nextQueue string) *delivered {
	s := newStage(d, rt.handler, attempt)
	tp := s.Traceparent()
	ctx, cancel := newCancelContext(context.Background())
	keeper := newLeaseKeeper(&w.opts, grantSent, func(kctx context.Context) (*leaseResponse, error) {
		var lease *leaseResponse
		err := w.session.call(kctx, func(token, workerID string) error {
			var err error
			lease, err = w.client.lease(kctx, "renew", token, s.StageID, &leaseRequest{s.ExecutionID, workerID}, tp)
			return err
		})
		return lease, err
	}, func(e *LeaseLostError) { cancel.cancelWith(e) }, fields)
	var timer *time.Timer
	if s.Timeout > 0 {
		timer = time.AfterFunc(s.Timeout, func() { cancel.cancelWith(&StageTimeoutError{Seconds: s.Timeout.Seconds()}) })
	}
	unregister := w.register(cancel)
	keeper.start()
	ids := func(kind string, data map[string]any) workerEvent {
		return workerEvent{Kind: kind, StageID: s.StageID, PipelineID: s.PipelineID, Data: data}
	}
	w.events.push(ids("stage_started", map[string]any{"executionId": s.ExecutionID, "attempt": attempt, "handler": rt.handler}))

	started := time.Now()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- failure("HANDLER_ERROR", fmt.Sprintf("panic: %v", p), nil)
			}
		}()
		v, err := rt.fn(ctx, s)
		done <- fromReturn(v, err, CancelCause(ctx))
	}()
	var o outcome
	finished := true
	select {
	case o = <-done:
	case <-keeper.lostCh:
		// A retry may already run elsewhere: a handler that ignores its cancellation has no claim on a slot.
		select {
		case o = <-done:
		case <-time.After(w.opts.AbortGrace):
			finished = false
			w.log.Warn("handler ignored its lost lease; freeing its slot and dropping its result", with(fields, "graceMs", w.opts.AbortGrace.Milliseconds())...)
		}
	}
	if timer != nil {
		timer.Stop()
	}
	unregister()
	// The handler is done with ctx: release its resources (nothing is cancelled that still runs, but
	// an abandoned handler sees ctx end, which it should have seen already).
	defer cancel.cancel()
	durationMs := time.Since(started).Milliseconds()

	fate := fateLeaseLost
	var next *delivered
	if finished && keeper.lostReason() == "" {
		var nreq *pullNextRequest
		// A stopping worker pulls nothing more: the delivery would only be handed back.
		if nextQueue != "" && w.pullCtx.Err() == nil {
			nreq = &pullNextRequest{Queue: nextQueue, Lease: &leaseAs{WorkerID: w.session.workerID()}}
		}
		body, err := buildResult(s, o, d.Token, nreq)
		if err != nil {
			// Only an AppendedStage input that cannot be encoded gets here.
			o = failure("RESULT_NOT_SERIALIZABLE", err.Error(), boolPtr(false))
			s.mu.Lock()
			s.appended = nil
			s.mu.Unlock()
			body, _ = buildResult(s, o, d.Token, nreq)
		}
		fate, next = w.postResult(body, s.StageID, nextQueue, keeper, fields, tp)
	}
	keeper.stop()

	data := map[string]any{"executionId": s.ExecutionID, "attempt": attempt, "handler": rt.handler, "durationMs": durationMs}
	switch {
	case (fate == fateAccepted || fate == fateAnswered) && o.success:
		w.processed.Add(1)
		data["waitingForApproval"] = o.approval
		w.events.push(ids("stage_completed", data))
		w.log.Debug("stage completed", with(fields, "durationMs", durationMs)...)
	case fate == fateAccepted || fate == fateAnswered:
		w.failed.Add(1)
		data["errorCode"] = o.code
		w.events.push(ids("stage_failed", data))
		w.log.Warn("stage failed", with(fields, "errorCode", o.code, "durationMs", durationMs)...)
	case fate == fateLeaseLost:
		w.failed.Add(1)
		reason := keeper.lostReason()
		if reason == "" {
			reason = "refused"
		}
		data["reason"] = reason
		ev := ids("lease_lost", data)
		ev.Message = "lease lost: " + reason
		w.events.push(ev)
	default:
		w.failed.Add(1)
		ev := ids("error", data)
		ev.Message = map[resultFate]string{fateRejected: "result rejected", fateUndelivered: "result undelivered"}[fate]
		w.events.push(ev)
	}
	// Ack only now: after the 202, or once no result will ever be sent for this delivery.
	if fate != fateAnswered {
		w.ackLater(d.Token, false, fields)
	}
	return next
}

// postResult sends the same body until a 202, a definitive refusal, a lost lease or the retry
// deadline. The keeper goes on renewing meanwhile, so an outage longer than the lease (a broker
// down: 503) does not turn finished work into LEASE_EXPIRED.
func (w *Worker) postResult(body []byte, stageID int64, nextQueue string, keeper *leaseKeeper, fields []any, tp string) (resultFate, *delivered) {
	deadline := time.Now().Add(w.opts.ResultRetryTimeout)
	for i := 0; ; i++ {
		if keeper.lostReason() != "" {
			return fateLeaseLost, nil
		}
		sent := time.Now()
		var r *resultAccepted
		err := w.session.call(w.abandonCtx, func(token, _ string) error {
			var err error
			r, err = w.client.result(w.abandonCtx, token, stageID, body, tp)
			return err
		})
		if err == nil {
			if r.Acked == nil {
				return fateAccepted, nil
			}
			return fateAnswered, w.nextFrom(r.Next, nextQueue, sent)
		}
		if errors.Is(err, context.Canceled) {
			w.log.Error("worker stopped before the result was delivered", fields...)
			return fateUndelivered, nil
		}
		if !IsRetryable(err) {
			w.log.Error("result rejected by the server", with(fields, "error", err)...)
			return fateRejected, nil
		}
		delay := backoff(i, w.opts.RetryBaseDelay, w.opts.RetryMaxDelay)
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			delay = ae.RetryAfter
		}
		if time.Now().Add(delay).After(deadline) {
			w.log.Error("result could not be delivered; giving up", with(fields, "error", err)...)
			return fateUndelivered, nil
		}
		w.log.Warn("result outcome unknown; sending the same result again", with(fields, "retry", i+1, "delayMs", delay.Milliseconds(), "error", err)...)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-keeper.lostCh:
			t.Stop()
			return fateLeaseLost, nil
		case <-w.abandonCtx.Done():
			t.Stop()
			w.log.Error("worker stopped before the result was delivered", fields...)
			return fateUndelivered, nil
		}
	}
}

// nextFrom is the delivery a result's next brought (decision 0100), or nil. One that cannot be run
// is acknowledged so it is not redelivered, as a pulled one would be.
func (w *Worker) nextFrom(raw json.RawMessage, queue string, sent time.Time) *delivered {
	if queue == "" || len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var r pullJobResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		w.log.Warn("unreadable next delivery in a result answer", "error", err)
		return nil
	}
	d, err := checkDelivery(&r, "result next", queue)
	if err != nil {
		var bad *malformedDelivery
		if errors.As(err, &bad) {
			w.ackLater(bad.token, false, nil)
		}
		return nil
	}
	return &delivered{d: d, sent: sent}
}

// ackLater acks in the background: the slot goes back to pulling while the ack travels.
func (w *Worker) ackLater(token string, requeue bool, fields []any) {
	w.acks.Add(1)
	go func() {
		defer w.acks.Done()
		w.ack(token, requeue, fields)
	}()
}

// ack goes to the gateway that served the pull (same base URL; sticky routing does the rest).
func (w *Worker) ack(token string, requeue bool, fields []any) {
	for i := 0; i < 3; i++ {
		err := w.client.ack(w.abandonCtx, token, requeue)
		if err == nil {
			return
		}
		if _, gone := isStatus(err, 404); gone {
			// Expired, already acknowledged (a retried ack), or held by another gateway process.
			w.log.Warn("delivery token not held by the gateway", fields...)
			return
		}
		if !IsRetryable(err) || i == 2 {
			w.log.Warn("ack failed; the delivery returns after the visibility timeout", with(fields, "error", err)...)
			return
		}
		if !sleep(w.abandonCtx, backoff(i, w.opts.RetryBaseDelay, w.opts.RetryMaxDelay)) {
			return
		}
	}
}
