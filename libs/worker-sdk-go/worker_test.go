package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func echoHandler(_ context.Context, s *Stage) (any, error) { return s.Input, nil }

func decode(t *testing.T, raw []byte) resultSubmit {
	t.Helper()
	var r resultSubmit
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEchoCarriesAckAndNextPull(t *testing.T) {
	f := newFake(t)
	f.add(1, "héllo")
	f.add(2, "second")
	var runs atomic.Int32
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(ctx context.Context, s *Stage) (any, error) {
		runs.Add(1)
		return s.Input, nil
	}})
	eventually(t, "two results", func() bool { r, _, _ := f.snapshot(); return len(r) == 2 })
	results, acks, _ := f.snapshot()
	first, second := decode(t, results[0]), decode(t, results[1])
	if *first.Result != "héllo" || first.AckToken != "tok-1" || first.Attempt != 1 || !first.IsSuccess {
		t.Fatalf("first result: %s", results[0])
	}
	// The first pull found its message at once: its result asks for the next delivery (decision 0100).
	if first.Next == nil || first.Next.Queue != "app_7_echo_StageNext" || first.Next.Lease.WorkerID != "w-test" {
		t.Fatalf("first result carries no next pull: %s", results[0])
	}
	if *second.Result != "second" || second.AckToken != "tok-2" {
		t.Fatalf("second result: %s", results[1])
	}
	if len(acks) != 0 {
		t.Fatalf("acks sent although the results carried them: %v", acks)
	}
	if runs.Load() != 2 {
		t.Fatalf("handler ran %d times", runs.Load())
	}
}

func TestResultResentWithSameBodyAfterDroppedResponse(t *testing.T) {
	f := newFake(t)
	f.add(1, "x")
	f.onResult = func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			// The result reached the server, the answer never reaches the worker.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return true
		}
		if n == 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(503)
			return true
		}
		return false
	}
	var runs atomic.Int32
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(ctx context.Context, s *Stage) (any, error) {
		runs.Add(1)
		s.Log("once")
		return s.Input, nil
	}})
	eventually(t, "three result posts", func() bool { r, _, _ := f.snapshot(); return len(r) >= 3 })
	time.Sleep(50 * time.Millisecond)
	results, acks, _ := f.snapshot()
	if len(results) != 3 {
		t.Fatalf("%d result posts", len(results))
	}
	for i := 1; i < 3; i++ {
		if !bytes.Equal(results[0], results[i]) {
			t.Fatalf("post %d differs:\n%s\n%s", i+1, results[0], results[i])
		}
	}
	if runs.Load() != 1 || len(acks) != 0 {
		t.Fatalf("runs %d, acks %v", runs.Load(), acks)
	}
}

func TestSessionExpiryBootstrapsAgainOnce(t *testing.T) {
	f := newFake(t)
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": echoHandler})
	f.mu.Lock()
	f.token = "session-2" // the worker's token is now stale: session calls answer 401
	f.mu.Unlock()
	f.add(1, "after expiry")
	eventually(t, "a result", func() bool { r, _, _ := f.snapshot(); return len(r) == 1 })
	_, _, boots := f.snapshot()
	f.mu.Lock()
	ids := append([]string(nil), f.workerIDs...)
	f.mu.Unlock()
	if boots != 2 || ids[0] != ids[1] {
		t.Fatalf("bootstraps %d, workerIds %v", boots, ids)
	}
}

func TestRefusedLeaseOnPullAcksWithoutRunning(t *testing.T) {
	f := newFake(t)
	f.onPull = func(n int, w http.ResponseWriter) bool {
		if n != 1 {
			return false
		}
		f.mu.Lock()
		f.add2(1)
		d := f.take(false)
		f.mu.Unlock()
		d["lease"] = map[string]any{"acquired": false, "attempt": nil, "leaseExpiresAt": nil, "reason": "lease_held"}
		writeJSON(w, 200, d)
		return true
	}
	var runs atomic.Int32
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(context.Context, *Stage) (any, error) { runs.Add(1); return nil, nil }})
	eventually(t, "an ack", func() bool { _, a, _ := f.snapshot(); return len(a) == 1 })
	results, acks, _ := f.snapshot()
	if runs.Load() != 0 || len(results) != 0 || acks[0].Requeue || acks[0].Token != "tok-1" {
		t.Fatalf("runs %d results %d acks %+v", runs.Load(), len(results), acks)
	}
}

// add2 queues a delivery; the caller holds f.mu.
func (f *fakeGateway) add2(stageID int64) {
	f.mu.Unlock()
	f.add(stageID, "x")
	f.mu.Lock()
}

func TestRefusedRenewalCancelsWithCauseAndWithholdsResult(t *testing.T) {
	f := newFake(t)
	f.add(1, "x")
	f.onRenew = func(n int, w http.ResponseWriter) bool {
		writeJSON(w, 200, map[string]any{"acquired": false, "attempt": nil, "leaseExpiresAt": nil, "reason": "pipeline_cancelled"})
		return true
	}
	causes := make(chan error, 1)
	startWorker(t, f, func(o *Options) { o.LeaseRenewInterval = 30 * time.Millisecond }, map[string]HandlerFunc{
		"echo": func(ctx context.Context, s *Stage) (any, error) {
			<-ctx.Done()
			causes <- CancelCause(ctx)
			return nil, ctx.Err()
		}})
	var cause error
	select {
	case cause = <-causes:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not cancelled")
	}
	var lost *LeaseLostError
	if !errors.As(cause, &lost) || lost.Reason != "pipeline_cancelled" || lost.Code() != "LEASE_LOST" {
		t.Fatalf("cause %v", cause)
	}
	eventually(t, "an ack", func() bool { _, a, _ := f.snapshot(); return len(a) == 1 })
	results, acks, _ := f.snapshot()
	if len(results) != 0 || acks[0].Requeue {
		t.Fatalf("results %d acks %+v", len(results), acks)
	}
}

func TestLeaseLapsesOnOwnClock(t *testing.T) {
	f := newFake(t)
	f.add(1, "x")
	f.onRenew = func(n int, w http.ResponseWriter) bool { w.WriteHeader(500); return true }
	causes := make(chan error, 1)
	started := time.Now()
	startWorker(t, f, func(o *Options) {
		o.LeaseDuration = 300 * time.Millisecond
		o.LeaseRenewInterval = 50 * time.Millisecond
	}, map[string]HandlerFunc{"echo": func(ctx context.Context, s *Stage) (any, error) {
		<-ctx.Done()
		causes <- CancelCause(ctx)
		return nil, ctx.Err()
	}})
	cause := <-causes
	var lost *LeaseLostError
	if !errors.As(cause, &lost) || lost.Reason != ReasonLapsed {
		t.Fatalf("cause %v", cause)
	}
	if el := time.Since(started); el > 2*time.Second {
		t.Fatalf("lapse took %v", el)
	}
	eventually(t, "an ack", func() bool { _, a, _ := f.snapshot(); return len(a) == 1 })
	if r, _, _ := f.snapshot(); len(r) != 0 {
		t.Fatal("a result was sent after the lease lapsed")
	}
}

func TestPullHonoursRetryAfter(t *testing.T) {
	f := newFake(t)
	f.onPull = func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, map[string]any{"code": "too_many_unacked"})
			return true
		}
		return false
	}
	startWorker(t, f, func(o *Options) { o.Concurrency = 3 }, map[string]HandlerFunc{"echo": echoHandler})
	eventually(t, "pulls after the pause", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.pulls) >= 5 })
	f.mu.Lock()
	pulls := append([]time.Time(nil), f.pulls...)
	f.mu.Unlock()
	// The other two slots were already polling; every pull after those waited out the second.
	for _, at := range pulls[3:] {
		if d := at.Sub(pulls[0]); d < 950*time.Millisecond {
			t.Fatalf("a pull %v after the 429", d)
		}
	}
}

func TestDrainCancelsWithWorkerStoppingAndShutsDown(t *testing.T) {
	f := newFake(t)
	f.add(1, "x")
	causes := make(chan error, 1)
	inside := make(chan struct{})
	_, stop := startWorker(t, f, func(o *Options) { o.DrainTimeout = 100 * time.Millisecond }, map[string]HandlerFunc{
		"echo": func(ctx context.Context, s *Stage) (any, error) {
			close(inside)
			<-ctx.Done()
			causes <- CancelCause(ctx)
			return nil, ctx.Err()
		}})
	<-inside
	stop()
	var stopping *WorkerStoppingError
	if cause := <-causes; !errors.As(cause, &stopping) {
		t.Fatalf("cause %v", cause)
	}
	results, _, _ := f.snapshot()
	if len(results) != 1 {
		t.Fatalf("%d results", len(results))
	}
	r := decode(t, results[0])
	if r.ErrorCode != "WORKER_STOPPING" || r.IsSuccess || r.Retryable == nil || !*r.Retryable {
		t.Fatalf("result %s", results[0])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdowns != 1 {
		t.Fatalf("%d shutdowns", f.shutdowns)
	}
	kinds := map[string]bool{}
	for _, e := range f.events {
		kinds[e.Kind] = true
	}
	if !kinds["stopping"] || !kinds["stopped"] || !kinds["stage_failed"] {
		t.Fatalf("events %v", kinds)
	}
}

func TestDrainLetsRunningHandlersFinish(t *testing.T) {
	f := newFake(t)
	f.add(1, "slow")
	inside := make(chan struct{})
	_, stop := startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(ctx context.Context, s *Stage) (any, error) {
		close(inside)
		time.Sleep(150 * time.Millisecond)
		return s.Input, ctx.Err()
	}})
	<-inside
	stop()
	results, _, _ := f.snapshot()
	if len(results) != 1 || !decode(t, results[0]).IsSuccess {
		t.Fatalf("results %q", results)
	}
}

func TestPlainProtocolFallback(t *testing.T) {
	f := newFake(t)
	f.plain = true
	f.add(1, "x")
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": echoHandler})
	eventually(t, "an ack", func() bool { _, a, _ := f.snapshot(); return len(a) == 1 })
	results, acks, _ := f.snapshot()
	f.mu.Lock()
	acquires := f.acquires
	f.mu.Unlock()
	if acquires != 1 || len(results) != 1 || acks[0].Requeue || acks[0].Token != "tok-1" {
		t.Fatalf("acquires %d results %d acks %+v", acquires, len(results), acks)
	}
}

func TestStageTimeoutFailsWithTimeout(t *testing.T) {
	f := newFake(t)
	f.add(1, "x")
	f.mu.Lock()
	f.pending[0]["payload"].(map[string]any)["timeOutSeconds"] = 0.05
	f.mu.Unlock()
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(ctx context.Context, s *Stage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	eventually(t, "a result", func() bool { r, _, _ := f.snapshot(); return len(r) == 1 })
	results, _, _ := f.snapshot()
	if r := decode(t, results[0]); r.ErrorCode != "TIMEOUT" {
		t.Fatalf("result %s", results[0])
	}
}

func TestConfigErrorListsEveryProblem(t *testing.T) {
	_, err := New(Options{Concurrency: -1, LeaseDuration: 2 * time.Minute})
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) < 4 {
		t.Fatalf("%v", err)
	}
}

func TestMalformedDeliveryIsAckedNotRun(t *testing.T) {
	f := newFake(t)
	f.onPull = func(n int, w http.ResponseWriter) bool {
		if n != 1 {
			return false
		}
		writeJSON(w, 200, map[string]any{"token": "bad", "queue": "q", "messageId": "m", "headers": map[string]any{},
			"payload": map[string]any{"stageId": 1}})
		return true
	}
	var runs atomic.Int32
	startWorker(t, f, nil, map[string]HandlerFunc{"echo": func(context.Context, *Stage) (any, error) { runs.Add(1); return nil, nil }})
	eventually(t, "an ack", func() bool { _, a, _ := f.snapshot(); return len(a) == 1 })
	_, acks, _ := f.snapshot()
	if runs.Load() != 0 || acks[0].Token != "bad" || acks[0].Requeue {
		t.Fatalf("runs %d acks %+v", runs.Load(), acks)
	}
}

func TestSlowPullAsksNextOnlyWhenTheGatewaySaysBacklog(t *testing.T) {
	f := newFake(t)
	f.add(1, "waited for a message")
	f.add(2, "waited for a place")
	// Both pulls answer late; only the second says its message waited for a place (decision 0132).
	f.onPull = func(n int, w http.ResponseWriter) bool {
		if n > 2 {
			return false
		}
		time.Sleep(100 * time.Millisecond)
		f.mu.Lock()
		d := f.take(true)
		f.mu.Unlock()
		if n == 2 {
			d["backlog"] = true
		}
		writeJSON(w, 200, d)
		return true
	}
	startWorker(t, f, func(o *Options) { o.Concurrency = 1 }, map[string]HandlerFunc{"echo": echoHandler})
	eventually(t, "two results", func() bool { r, _, _ := f.snapshot(); return len(r) == 2 })
	results, _, _ := f.snapshot()
	if first := decode(t, results[0]); first.Next != nil {
		t.Fatalf("a pull that waited for its message asked for the next: %s", results[0])
	}
	if second := decode(t, results[1]); second.Next == nil || second.Next.Queue != "app_7_echo_StageNext" {
		t.Fatalf("a pull whose message waited for a place did not ask for the next: %s", results[1])
	}
}
