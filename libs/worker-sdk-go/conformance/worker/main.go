// The Go SDK's conformance worker. Its environment, handlers and the JSON lines it writes are the
// kit's contract, shared by every SDK: e2e/conformance/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	worker "github.com/po-platform/worker-sdk-go"
)

var (
	logFile *os.File
	logMu   sync.Mutex
)

// report writes one line with one Write: the kit reads the file while the worker runs.
func report(line map[string]any) {
	data, _ := json.Marshal(line)
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = logFile.Write(append(data, '\n'))
}

func ran(s *worker.Stage) {
	report(map[string]any{"event": "ran", "handler": s.Handler, "stageId": s.StageID, "executionId": s.ExecutionID, "attempt": s.Attempt})
}

func cancelled(ctx context.Context, s *worker.Stage) {
	cause := worker.CancelCause(ctx)
	code, reason := "UNKNOWN", ""
	var coded interface{ Code() string }
	if errors.As(cause, &coded) {
		code = coded.Code()
	}
	var lost *worker.LeaseLostError
	if errors.As(cause, &lost) {
		reason = lost.Reason
	}
	report(map[string]any{"event": "cancelled", "stageId": s.StageID, "executionId": s.ExecutionID, "code": code, "reason": reason})
}

var handlers = map[string]worker.HandlerFunc{
	"conf-echo": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		return s.Input, nil
	},
	"conf-fail": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		var in struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable *bool  `json:"retryable"`
		}
		if err := s.JSON(&in); err != nil {
			return nil, err
		}
		return nil, &worker.StageError{Code: in.Code, Message: in.Message, Retryable: in.Retryable}
	},
	"conf-flaky": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		var in struct {
			SucceedOnAttempt int `json:"succeedOnAttempt"`
		}
		if err := s.JSON(&in); err != nil {
			return nil, err
		}
		if s.Attempt < in.SucceedOnAttempt {
			return nil, worker.FailRetryable("FLAKY", fmt.Sprintf("attempt %d", s.Attempt), true)
		}
		return fmt.Sprintf("attempt %d", s.Attempt), nil
	},
	"conf-approval": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		return worker.AwaitApproval(s.Input), nil
	},
	"conf-hold": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		var in struct {
			Seconds float64 `json:"seconds"`
		}
		if err := s.JSON(&in); err != nil {
			return nil, err
		}
		t := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
		defer t.Stop()
		select {
		case <-t.C:
			return "held", nil
		case <-ctx.Done():
			cancelled(ctx, s)
			// Go's idiom for a cancelled call: return the context's error.
			return nil, ctx.Err()
		}
	},
	"conf-context": func(ctx context.Context, s *worker.Stage) (any, error) {
		ran(s)
		var in struct {
			Key       string `json:"key"`
			Value     string `json:"value"`
			Sensitive *bool  `json:"sensitive"`
		}
		if err := s.JSON(&in); err != nil {
			return nil, err
		}
		var opts []worker.ContextOption
		if in.Sensitive != nil {
			opts = append(opts, worker.Sensitive(*in.Sensitive))
		}
		if err := s.SetContext(in.Key, in.Value, opts...); err != nil {
			return nil, err
		}
		s.Log("set " + in.Key)
		return "ok", nil
	},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	path := os.Getenv("PO_CONFORMANCE_LOG")
	if path == "" {
		return errors.New("PO_CONFORMANCE_LOG is required")
	}
	var err error
	if logFile, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return err
	}
	defer logFile.Close()

	var names []string
	if list := os.Getenv("PO_HANDLERS"); list != "" {
		for _, n := range strings.Split(list, ",") {
			if n = strings.TrimSpace(n); handlers[n] == nil {
				return fmt.Errorf("PO_HANDLERS: unknown handler %q", n)
			}
			names = append(names, strings.TrimSpace(n))
		}
	} else {
		names = []string{"conf-echo", "conf-fail", "conf-flaky", "conf-approval", "conf-hold", "conf-context"}
	}
	host, _ := os.Hostname()
	opts := worker.Options{
		BaseURL:       first(os.Getenv("PO_BASE_URL"), os.Getenv("PO_WORKER_BASE_URL"), "http://127.0.0.1:8080"),
		WorkerBaseURL: os.Getenv("PO_WORKER_BASE_URL"),
		APIKey:        os.Getenv("PO_API_KEY"),
		InstanceID:    first(os.Getenv("PO_INSTANCE_ID"), fmt.Sprintf("%s-%d", host, os.Getpid())),
		WorkerName:    "conformance-go",
		Concurrency:   4,
	}
	if opts.Concurrency, err = envInt("PO_CONCURRENCY", 4); err != nil {
		return err
	}
	ms, err := envInt("PO_LEASE_RENEW_INTERVAL_MS", 0)
	if err != nil {
		return err
	}
	opts.LeaseRenewInterval = time.Duration(ms) * time.Millisecond
	if ms, err = envInt("PO_DRAIN_TIMEOUT_MS", 0); err != nil {
		return err
	}
	opts.DrainTimeout = time.Duration(ms) * time.Millisecond
	w, err := worker.New(opts)
	if err != nil {
		return err
	}
	for _, n := range names {
		w.Register(n, handlers[n])
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		select {
		case <-w.Ready():
			report(map[string]any{"event": "ready"})
		case <-ctx.Done():
		}
	}()
	if err := w.Run(ctx); err != nil {
		return err
	}
	report(map[string]any{"event": "stopped"})
	return nil
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func envInt(name string, fallback int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s must be an integer", name)
	}
	return n, nil
}
