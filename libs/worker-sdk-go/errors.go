package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// StageError fails a stage with a machine-readable code. Return it (or wrap it) from a handler.
// Retryable nil leaves retries to the stage's policy; false turns them off for this failure. The
// codes in TerminalCodes are never retried, whatever Retryable says.
type StageError struct {
	Code      string
	Message   string
	Retryable *bool
	// Err is the underlying cause, if any (see Unwrap).
	Err error
}

func (e *StageError) Error() string { return e.Code + ": " + e.Message }

func (e *StageError) Unwrap() error { return e.Err }

// Fail returns a StageError with the given code whose retries follow the stage's policy.
func Fail(code, message string) *StageError { return &StageError{Code: code, Message: message} }

// FailRetryable returns a StageError that allows (true) or forbids (false) an automatic retry.
func FailRetryable(code, message string, retryable bool) *StageError {
	return &StageError{Code: code, Message: message, Retryable: &retryable}
}

// TerminalCodes are error codes the server never retries.
var TerminalCodes = []string{"BUSINESS_REJECTED", "VALIDATION_ERROR", "INVALID_STATE", "MISSING_REQUIRED_DATA"}

// IsTerminalCode reports whether code is one of TerminalCodes.
func IsTerminalCode(code string) bool {
	for _, c := range TerminalCodes {
		if c == code {
			return true
		}
	}
	return false
}

// LeaseLostError is the cancel cause when the lease is no longer this worker's: the server may
// already run another attempt of the stage. Reason is the gateway's refusal (pipeline_cancelled,
// stage_terminal, stale_execution, lease_expired, not_owner), not_found (404), a 409's problem
// code, or "lapsed" when no renewal got through before the lease ran out on the SDK's own clock.
type LeaseLostError struct{ Reason string }

func (e *LeaseLostError) Error() string { return "lease lost: " + e.Reason }

// Code is LEASE_LOST.
func (e *LeaseLostError) Code() string { return "LEASE_LOST" }

// ReasonLapsed is LeaseLostError.Reason when the SDK's clock saw the lease run out.
const ReasonLapsed = "lapsed"

// StageTimeoutError is the cancel cause when the stage's timeOutSeconds passed since the lease
// grant. A handler that then fails gets the code TIMEOUT.
type StageTimeoutError struct{ Seconds float64 }

func (e *StageTimeoutError) Error() string {
	return fmt.Sprintf("stage timed out after %g s", e.Seconds)
}

// Code is TIMEOUT.
func (e *StageTimeoutError) Code() string { return "TIMEOUT" }

// WorkerStoppingError is the cancel cause when the worker is draining and its drain timeout
// passed. A handler that then fails gets the code WORKER_STOPPING.
type WorkerStoppingError struct{}

func (e *WorkerStoppingError) Error() string { return "worker is stopping" }

// Code is WORKER_STOPPING.
func (e *WorkerStoppingError) Code() string { return "WORKER_STOPPING" }

// causeKey finds the stage's cancel state from any context derived from the handler's.
type causeKey struct{}

type cancelState struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	cause  error
}

// newCancelContext is context.WithCancelCause for Go 1.19, which lacks it.
func newCancelContext(parent context.Context) (context.Context, *cancelState) {
	ctx, cancel := context.WithCancel(parent)
	st := &cancelState{cancel: cancel}
	return context.WithValue(ctx, causeKey{}, st), st
}

// cancelWith cancels with cause; only the first cause counts.
func (s *cancelState) cancelWith(cause error) {
	s.mu.Lock()
	first := s.cause == nil
	if first {
		s.cause = cause
	}
	s.mu.Unlock()
	if first {
		s.cancel()
	}
}

func (s *cancelState) get() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// CancelCause returns why the SDK cancelled a handler's context: a *LeaseLostError, a
// *StageTimeoutError or a *WorkerStoppingError. It returns nil while ctx is not done, and ctx.Err()
// for a context cancelled by something else.
func CancelCause(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if st, ok := ctx.Value(causeKey{}).(*cancelState); ok {
		if cause := st.get(); cause != nil {
			return cause
		}
	}
	return err
}

// APIError is a non-2xx answer. Code is the problem-details code when the body has one.
type APIError struct {
	Method, Path string
	Status       int
	Code, Detail string
	// RetryAfter from the answer's Retry-After header; 0 when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s answered %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// TransportError means the request may or may not have reached the server.
type TransportError struct {
	Method, Path string
	TimedOut     bool
	Err          error
}

func (e *TransportError) Error() string {
	if e.TimedOut {
		return e.Method + " " + e.Path + " failed: timed out"
	}
	return e.Method + " " + e.Path + " failed: " + e.Err.Error()
}

func (e *TransportError) Unwrap() error { return e.Err }

// ProtocolError means the server answered 2xx with a body the SDK cannot use.
type ProtocolError struct{ Message string }

func (e *ProtocolError) Error() string { return e.Message }

// ConfigError lists every problem of invalid Options.
type ConfigError struct{ Problems []string }

func (e *ConfigError) Error() string {
	return "invalid worker options:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// IsRetryable reports whether a call's outcome is unknown or temporary, so the same request may be
// sent again: network errors, timeouts, 408, 429 and 5xx.
func IsRetryable(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == 408 || ae.Status == 429
	}
	return false
}

func isStatus(err error, status int) (*APIError, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == status {
		return ae, true
	}
	return nil, false
}
