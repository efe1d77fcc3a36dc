package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Version of the SDK, sent with the bootstrap.
const Version = "0.1.0"

// Worker runs stage handlers for one application. Create it with New, add handlers with Register,
// then call Run.
type Worker struct {
	opts    Options
	log     Logger
	client  *client
	session *session
	events  *events

	mu       sync.Mutex
	names    []string
	handlers map[string]HandlerFunc
	running  map[*cancelState]struct{}
	stopAll  bool
	started  bool

	// pullCtx ends when the worker stops pulling; abandonCtx when it stops waiting for results and acks.
	pullCtx       context.Context
	stopPulling   context.CancelFunc
	abandonCtx    context.Context
	abandon       context.CancelFunc
	pausedUntil   atomic.Int64 // unix nanos: a 429 pauses every slot
	acks          sync.WaitGroup
	inFlight      atomic.Int64
	processed     atomic.Int64
	failed        atomic.Int64
	stopRequested chan struct{}
	ready         chan struct{}
	stopOnce      sync.Once
	stopReason    atomic.Value // string
}

// New validates opts (a *ConfigError lists every problem) and returns a worker.
func New(opts Options) (*Worker, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	httpClient := o.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Transport: newTransport(o.Concurrency)}
	}
	w := &Worker{opts: o, log: o.Logger, handlers: map[string]HandlerFunc{}, running: map[*cancelState]struct{}{},
		stopRequested: make(chan struct{}), ready: make(chan struct{})}
	w.client = &client{base: o.WorkerBaseURL, apiKey: o.APIKey, timeout: o.RequestTimeout, http: httpClient}
	w.pullCtx, w.stopPulling = context.WithCancel(context.Background())
	w.abandonCtx, w.abandon = context.WithCancel(context.Background())
	return w, nil
}

// Register serves the handler name with fn: stages whose stageHandlerName is name arrive on the
// queue app_{applicationId}_{name}_StageNext. It panics on an invalid or duplicate name, or after
// Run, as http.HandleFunc does on a bad pattern.
func (w *Worker) Register(name string, fn HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.started:
		panic("worker: Register after Run")
	case fn == nil:
		panic("worker: nil handler for " + name)
	case name == "" || utf8.RuneCountInString(name) > maxHandlerNameChars:
		panic(fmt.Sprintf("worker: handler name must have 1..%d characters", maxHandlerNameChars))
	case w.handlers[name] != nil:
		panic("worker: handler " + name + " registered twice")
	case len(w.names) >= maxHandlers:
		panic(fmt.Sprintf("worker: at most %d handlers", maxHandlers))
	}
	w.handlers[name] = fn
	w.names = append(w.names, name)
}

// Stats are the worker's counters.
type Stats struct {
	WorkerID string
	// InFlight counts deliveries between lease grant and result.
	InFlight int64
	// Processed counts executions whose success (or approval request) the server accepted.
	Processed int64
	// Failed counts failures, lost leases, and results that could not be delivered.
	Failed int64
}

// Stats returns the counters of the moment.
func (w *Worker) Stats() Stats {
	id := ""
	if w.session != nil {
		id = w.session.workerID()
	}
	return Stats{WorkerID: id, InFlight: w.inFlight.Load(), Processed: w.processed.Load(), Failed: w.failed.Load()}
}

// Ready is closed once the worker has bootstrapped and its slots are pulling.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// Stop asks a running worker to drain, as cancelling Run's context does, with reason sent to
// POST /workers/shutdown. It does not wait: Run returns once the drain is done.
func (w *Worker) Stop(reason string) {
	w.stopOnce.Do(func() {
		w.stopReason.Store(reason)
		close(w.stopRequested)
	})
}

// Run bootstraps, pulls and runs stages until ctx is cancelled (or Stop is called), then drains:
// it stops pulling, lets running handlers finish for DrainTimeout, cancels them with
// WorkerStoppingError, waits AbortGrace more, and announces the shutdown. It returns nil after a
// drain, or the bootstrap's error.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("worker: Run called twice")
	}
	w.started = true
	names := append([]string(nil), w.names...)
	w.mu.Unlock()
	if len(names) == 0 {
		return &ConfigError{Problems: []string{"register at least one handler before Run"}}
	}
	host, _ := os.Hostname()
	w.session = &session{c: w.client, o: &w.opts, req: &bootstrapRequest{InstanceID: w.opts.InstanceID,
		WorkerName: w.opts.WorkerName, Handlers: names, SDKVersion: "worker-sdk-go " + Version,
		Hostname: truncate(host, 255), Metadata: w.opts.Metadata}}
	w.events = newEvents(!w.opts.DisableEvents, w.opts.EventFlushInterval, w.log, func(ctx context.Context, batch []workerEvent) error {
		return w.session.call(ctx, func(token, workerID string) error {
			return w.client.post(ctx, "/workers/events", token, &workerEventsRequest{WorkerID: workerID, Events: batch})
		})
	})

	startCtx, cancelStart := context.WithCancel(ctx)
	go func() {
		select {
		case <-w.stopRequested:
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	info, err := w.session.bootstrap(startCtx)
	cancelStart()
	if err != nil {
		w.log.Error("bootstrap failed", "error", err)
		return err
	}
	if len(info.Queues) != len(names) {
		return &ProtocolError{fmt.Sprintf("bootstrap returned %d queues for %d handlers", len(info.Queues), len(names))}
	}
	routes := make([]route, len(names))
	for i, n := range names {
		routes[i] = route{queue: info.Queues[i], handler: n, fn: w.handlers[n]}
	}
	rot := newRotation(routes, w.opts.Concurrency, w.opts.pollWaitSeconds())

	w.events.start()
	beatCtx, stopBeat := context.WithCancel(context.Background())
	go w.session.heartbeat(beatCtx, func() heartbeatRequest {
		return heartbeatRequest{InFlight: w.inFlight.Load(), Processed: w.processed.Load(), Failed: w.failed.Load()}
	})
	w.events.push(workerEvent{Kind: "started", Data: map[string]any{"concurrency": w.opts.Concurrency, "handlers": names, "sdkVersion": Version}})
	w.log.Info("worker started", "workerId", info.WorkerID, "concurrency", w.opts.Concurrency, "queues", info.Queues)

	var slots sync.WaitGroup
	for i := 0; i < w.opts.Concurrency; i++ {
		slots.Add(1)
		go func() {
			defer slots.Done()
			w.slot(rot)
		}()
	}
	close(w.ready)
	select {
	case <-ctx.Done():
		w.Stop("context done: " + ctx.Err().Error())
	case <-w.stopRequested:
	}
	reason := truncate(w.stopReason.Load().(string), maxShutdownReason)
	w.drain(&slots, reason)
	stopBeat()
	w.shutdown(reason)
	return nil
}

func (w *Worker) drain(slots *sync.WaitGroup, reason string) {
	w.stopPulling()
	w.events.push(workerEvent{Kind: "stopping", Message: reason, Data: map[string]any{"inFlight": w.inFlight.Load()}})
	w.log.Info("worker stopping; draining running handlers", "reason", reason, "inFlight", w.inFlight.Load())
	done := make(chan struct{})
	go func() { slots.Wait(); close(done) }()
	if !waitFor(done, w.opts.DrainTimeout) {
		w.log.Warn("drain timeout passed; cancelling running handlers", "inFlight", w.inFlight.Load())
		w.cancelRunning(&WorkerStoppingError{})
		if !waitFor(done, w.opts.AbortGrace) {
			w.log.Warn("handlers did not finish; shutting down without them", "inFlight", w.inFlight.Load())
		}
	}
	acked := make(chan struct{})
	go func() { w.acks.Wait(); close(acked) }()
	waitFor(acked, minDuration(w.opts.RequestTimeout, 5*time.Second))
	w.abandon()
}

func (w *Worker) shutdown(reason string) {
	grace := minDuration(w.opts.RequestTimeout, 5*time.Second)
	w.events.push(workerEvent{Kind: "stopped", Message: reason, Data: map[string]any{
		"inFlight": w.inFlight.Load(), "processed": w.processed.Load(), "failed": w.failed.Load()}})
	w.events.close(grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := w.session.shutdown(ctx, reason); err != nil {
		w.log.Warn("shutdown call failed", "error", err)
	}
	w.log.Info("worker stopped", "processed", w.processed.Load(), "failed", w.failed.Load())
}

// register lets a drain cancel the handler; the returned func forgets it.
func (w *Worker) register(st *cancelState) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopAll {
		st.cancelWith(&WorkerStoppingError{})
		return func() {}
	}
	w.running[st] = struct{}{}
	return func() {
		w.mu.Lock()
		delete(w.running, st)
		w.mu.Unlock()
	}
}

func (w *Worker) cancelRunning(cause error) {
	w.mu.Lock()
	w.stopAll = true
	list := make([]*cancelState, 0, len(w.running))
	for st := range w.running {
		list = append(list, st)
	}
	w.mu.Unlock()
	for _, st := range list {
		st.cancelWith(cause)
	}
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
