package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGateway plays the worker protocol in process. By default it speaks the extensions (lease on
// the pull, ack with the result, next pull with the result); hooks override single answers.
type fakeGateway struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	token      string
	bootstraps int
	workerIDs  []string
	pending    []map[string]any // deliveries still to hand out
	results    [][]byte
	acks       []ackJobRequest
	acquires   int
	renewals   int
	pulls      []time.Time
	shutdowns  int
	events     []workerEvent

	plain bool // an older gateway: no lease on pull, ackToken and next ignored
	// Hooks: return true when they wrote the answer.
	onResult func(n int, w http.ResponseWriter) bool
	onPull   func(n int, w http.ResponseWriter) bool
	onRenew  func(n int, w http.ResponseWriter) bool
}

func newFake(t *testing.T) *fakeGateway {
	f := &fakeGateway{t: t, token: "session-1"}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGateway) add(stageID int64, input string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, map[string]any{
		"token": fmt.Sprintf("tok-%d", stageID), "queue": "app_7_echo_StageNext", "messageId": fmt.Sprintf("m-%d", stageID),
		"headers": map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"payload": map[string]any{"applicationId": 7, "pipelineId": stageID * 10, "stageId": stageID,
			"executionId": fmt.Sprintf("exec-%d", stageID), "stageName": "s", "stageHandlerName": "echo", "input": input,
			"options": map[string]any{}, "pipelineContextItems": []any{}, "traceId": "t", "spanId": "s",
			"dispatchedAt": "2026-01-01T00:00:00.000Z", "timeOutSeconds": nil, "previousAttempts": 0},
	})
}

func (f *fakeGateway) take(lease bool) map[string]any {
	if len(f.pending) == 0 {
		return nil
	}
	d := f.pending[0]
	f.pending = f.pending[1:]
	if lease && !f.plain {
		d["lease"] = map[string]any{"acquired": true, "attempt": 1, "leaseExpiresAt": "2026-01-01T00:01:00.000Z", "reason": nil}
	}
	return d
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := r.URL.Path
	if path == "/workers/bootstrap" {
		var req bootstrapRequest
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.bootstraps++
		token := f.token
		f.workerIDs = append(f.workerIDs, "w-"+req.InstanceID)
		f.mu.Unlock()
		queues := make([]string, len(req.Handlers))
		for i, h := range req.Handlers {
			queues[i] = QueueName(7, h)
		}
		writeJSON(w, 200, map[string]any{"workerId": "w-" + req.InstanceID, "sessionToken": token, "sessionExpiresAt": "x",
			"applicationId": 7, "queues": queues, "heartbeatIntervalSeconds": 30, "messageBroker": map[string]any{"enabled": false}})
		return
	}
	if path == "/jobs/pull" {
		var req pullJobRequest
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.pulls = append(f.pulls, time.Now())
		n := len(f.pulls)
		hook := f.onPull
		f.mu.Unlock()
		if hook != nil && hook(n, w) {
			return
		}
		f.mu.Lock()
		d := f.take(req.Lease != nil)
		f.mu.Unlock()
		if d == nil {
			select {
			case <-time.After(30 * time.Millisecond):
			case <-r.Context().Done():
			}
			w.WriteHeader(204)
			return
		}
		writeJSON(w, 200, d)
		return
	}
	if path == "/jobs/ack" {
		var req ackJobRequest
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.acks = append(f.acks, req)
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"acked": true})
		return
	}
	f.mu.Lock()
	current := f.token
	f.mu.Unlock()
	if r.Header.Get("X-Worker-Session") != current {
		writeJSON(w, 401, map[string]any{"code": "unauthorized"})
		return
	}
	switch {
	case strings.HasSuffix(path, "/lease/acquire"):
		f.mu.Lock()
		f.acquires++
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"acquired": true, "attempt": 1, "leaseExpiresAt": "x", "reason": nil})
	case strings.HasSuffix(path, "/lease/renew"):
		f.mu.Lock()
		f.renewals++
		n, hook := f.renewals, f.onRenew
		f.mu.Unlock()
		if hook != nil && hook(n, w) {
			return
		}
		writeJSON(w, 200, map[string]any{"acquired": true, "attempt": 1, "leaseExpiresAt": "x", "reason": nil})
	case strings.HasSuffix(path, "/result"):
		var req resultSubmit
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.results = append(f.results, body)
		n, hook := len(f.results), f.onResult
		f.mu.Unlock()
		if hook != nil && hook(n, w) {
			return
		}
		answer := map[string]any{"accepted": true, "stageId": req.StageID, "executionId": req.ExecutionID}
		if !f.plain && req.AckToken != "" {
			answer["acked"] = true
			if req.Next != nil {
				f.mu.Lock()
				answer["next"] = f.take(req.Next.Lease != nil)
				f.mu.Unlock()
			}
		}
		writeJSON(w, 202, answer)
	case path == "/workers/shutdown":
		f.mu.Lock()
		f.shutdowns++
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{})
	case path == "/workers/events":
		var req workerEventsRequest
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.events = append(f.events, req.Events...)
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{})
	case path == "/workers/heartbeat":
		writeJSON(w, 200, map[string]any{})
	default:
		writeJSON(w, 404, map[string]any{"code": "not_found"})
	}
}

// snapshot copies what the fake saw, under its lock.
func (f *fakeGateway) snapshot() (results [][]byte, acks []ackJobRequest, bootstraps int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.results...), append([]ackJobRequest(nil), f.acks...), f.bootstraps
}

// startWorker runs a worker with fast timings against the fake; stop drains it and waits for Run.
func startWorker(t *testing.T, f *fakeGateway, tweak func(*Options), handlers map[string]HandlerFunc) (w *Worker, stop func()) {
	t.Helper()
	o := Options{BaseURL: f.srv.URL, APIKey: "key", InstanceID: "test", Concurrency: 1, PollWait: time.Second,
		RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 50 * time.Millisecond, EventFlushInterval: 20 * time.Millisecond,
		DrainTimeout: time.Second, AbortGrace: 200 * time.Millisecond, RequestTimeout: 2 * time.Second, Logger: NopLogger()}
	if tweak != nil {
		tweak(&o)
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for name, fn := range handlers {
		w.Register(name, fn)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("worker not ready")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			w.Stop("test over")
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return")
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
