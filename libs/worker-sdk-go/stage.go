package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// HandlerFunc runs one stage execution. Its ctx is cancelled when the lease is lost, the stage
// times out, or a draining worker's DrainTimeout passes; CancelCause(ctx) says which. Return a
// string (sent as is), []byte or json.RawMessage (sent as is), nil (no output), AwaitApproval(x),
// or any other value (JSON-encoded). Return an error to fail the stage; a *StageError sets its code.
type HandlerFunc func(ctx context.Context, s *Stage) (any, error)

// Stage is what a handler knows about the execution it runs, and what it adds to the result.
// Its methods are safe for concurrent use.
type Stage struct {
	ApplicationID int64
	PipelineID    int64
	StageID       int64
	StageName     string
	// Handler is the name the handler is registered under (stageHandlerName).
	Handler string
	// ExecutionID identifies this dispatch; redeliveries of one dispatch repeat it.
	ExecutionID string
	// Attempt is the 1-based attempt the lease granted.
	Attempt int
	// PreviousAttempts is how many leases were granted for this stage before this dispatch.
	PreviousAttempts int
	TraceID, SpanID  string
	Options          StageOptions
	// Timeout is the stage's timeOutSeconds (0: none); ctx is cancelled once it has passed.
	Timeout      time.Duration
	DispatchedAt string
	Queue        string
	MessageID    string
	// Input is the stage input ("" when none).
	Input string
	// Headers of the delivery; "traceparent" is the W3C trace context of the stage's pipeline.
	Headers map[string]any
	// ContextItems are the pipeline context items as delivered, sensitive values included.
	ContextItems []ContextItem

	mu       sync.Mutex
	values   map[string]string
	logs     []resultLog
	dropped  int
	changes  []contextUpdate
	appended []AppendedStage
}

func newStage(d *pullJobResponse, handler string, attempt int) *Stage {
	m := d.Payload
	s := &Stage{
		ApplicationID: m.ApplicationID, PipelineID: *m.PipelineID, StageID: *m.StageID, StageName: m.StageName,
		Handler: handler, ExecutionID: m.ExecutionID, Attempt: attempt, PreviousAttempts: m.PreviousAttempts,
		TraceID: m.TraceID, SpanID: m.SpanID, Options: m.Options, DispatchedAt: m.DispatchedAt,
		Queue: d.Queue, MessageID: d.MessageID, Input: m.Input, Headers: d.Headers, ContextItems: m.PipelineContextItems,
	}
	if m.TimeOutSeconds != nil && *m.TimeOutSeconds > 0 {
		s.Timeout = time.Duration(*m.TimeOutSeconds * float64(time.Second))
	}
	if s.Headers == nil {
		s.Headers = map[string]any{}
	}
	return s
}

// Traceparent is the delivery's W3C traceparent, to continue the pipeline's trace from; "" if none.
func (s *Stage) Traceparent() string {
	tp, _ := s.Headers["traceparent"].(string)
	return tp
}

// JSON decodes the input into v. Invalid (or empty) input returns a VALIDATION_ERROR StageError,
// which is never retried: return it as is.
func (s *Stage) JSON(v any) error {
	if strings.TrimSpace(s.Input) == "" {
		return &StageError{Code: "VALIDATION_ERROR", Message: "the stage input is empty", Retryable: boolPtr(false)}
	}
	if err := json.Unmarshal([]byte(s.Input), v); err != nil {
		return &StageError{Code: "VALIDATION_ERROR", Message: "the stage input is not valid JSON", Retryable: boolPtr(false), Err: err}
	}
	return nil
}

// Value returns a pipeline context value, reflecting the handler's own SetContext/DeleteContext.
func (s *Stage) Value(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initValues()
	v, ok := s.values[key]
	return v, ok
}

// PipelineContext returns a copy of the pipeline context as key → value.
func (s *Stage) PipelineContext() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initValues()
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		out[k] = v
	}
	return out
}

func (s *Stage) initValues() {
	if s.values != nil {
		return
	}
	s.values = make(map[string]string, len(s.ContextItems))
	for _, it := range s.ContextItems {
		if !it.IsDeleted {
			s.values[it.Key] = it.Value
		}
	}
}

// Log adds an Information line to the stage logs sent with the result.
func (s *Stage) Log(message string) { s.LogAt("Information", message) }

// Logf is Log with formatting.
func (s *Stage) Logf(format string, args ...any) {
	s.LogAt("Information", fmt.Sprintf(format, args...))
}

// LogAt adds a line at level (Trace, Debug, Information, Warning, Error, Critical, or any 1..32
// characters). At most 100 lines are kept; later ones are counted in one marker line.
func (s *Stage) LogAt(level, message string) {
	if n := utf8.RuneCountInString(level); n < 1 || n > maxLogLevelChars {
		level = "Information"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.logs) >= MaxResultLogs {
		s.dropped++
		return
	}
	s.logs = append(s.logs, resultLog{Message: message, LogLevel: level, Created: nowISO()})
}

// ContextOption qualifies SetContext.
type ContextOption func(*contextUpdate)

// Sensitive redacts the value from status responses and persisted logs.
func Sensitive(sensitive bool) ContextOption {
	return func(u *contextUpdate) { u.IsSensitive = sensitive }
}

// ValueType records the value's type name.
func ValueType(t string) ContextOption { return func(u *contextUpdate) { u.ValueType = t } }

// SetContext upserts a pipeline context key when the result is applied. A value that is not a
// string is JSON-encoded. At most 64 keys change per result.
func (s *Stage) SetContext(key string, value any, opts ...ContextOption) error {
	if err := checkKey(key); err != nil {
		return err
	}
	var str string
	switch v := value.(type) {
	case string:
		str = v
	case nil:
		return errors.New("SetContext: value is nil; use DeleteContext")
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("SetContext: %w", err)
		}
		str = string(data)
	}
	u := contextUpdate{Key: key, Value: str}
	for _, o := range opts {
		o(&u)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.put(u); err != nil {
		return err
	}
	s.initValues()
	s.values[key] = str
	return nil
}

// DeleteContext removes a pipeline context key when the result is applied.
func (s *Stage) DeleteContext(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.put(contextUpdate{Key: key, IsDeleted: true}); err != nil {
		return err
	}
	s.initValues()
	delete(s.values, key)
	return nil
}

func checkKey(key string) error {
	if n := utf8.RuneCountInString(key); n == 0 || n > maxContextKeyChars {
		return fmt.Errorf("context key must have 1..%d characters", maxContextKeyChars)
	}
	return nil
}

// put keeps one change per key, the latest last.
func (s *Stage) put(u contextUpdate) error {
	for i, c := range s.changes {
		if c.Key == u.Key {
			s.changes = append(s.changes[:i], s.changes[i+1:]...)
			s.changes = append(s.changes, u)
			return nil
		}
	}
	if len(s.changes) >= MaxContextChanges {
		return fmt.Errorf("at most %d context changes per result", MaxContextChanges)
	}
	s.changes = append(s.changes, u)
	return nil
}

// AppendStages appends stages at the end of the pipeline when the result is applied (at most 100).
func (s *Stage) AppendStages(stages ...AppendedStage) error {
	for i, st := range stages {
		if st.StageName == "" || st.StageHandlerName == "" {
			return fmt.Errorf("AppendStages: stage %d needs a StageName and a StageHandlerName", i)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.appended)+len(stages) > MaxAppendedStages {
		return fmt.Errorf("at most %d appended stages per result", MaxAppendedStages)
	}
	s.appended = append(s.appended, stages...)
	return nil
}

// Approval is returned by AwaitApproval.
type Approval struct{ Result any }

// AwaitApproval parks the stage in WaitingForApproval until it is resumed:
// `return worker.AwaitApproval(output), nil`. The result is encoded like a handler's return value.
func AwaitApproval(result any) *Approval { return &Approval{Result: result} }

func boolPtr(b bool) *bool { return &b }

func nowISO() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }
