package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// outcome is what a handler's return decided, before it becomes a result body.
type outcome struct {
	success   bool
	approval  bool
	result    *string
	code      string
	retryable *bool
	// extra lines go after the handler's own: the failure message.
	extra []resultLog
}

func failure(code, message string, retryable *bool) outcome {
	return outcome{code: code, retryable: retryable,
		extra: []resultLog{{Message: code + ": " + message, LogLevel: "Error", Created: nowISO()}}}
}

// fromReturn turns a handler's return into an outcome; cause is why ctx was cancelled, if it was.
func fromReturn(value any, err error, cause error) outcome {
	if err != nil {
		return fromError(err, cause)
	}
	o := outcome{success: true}
	if a, ok := value.(*Approval); ok {
		o.approval = true
		value = a.Result
	}
	var s string
	switch v := value.(type) {
	case nil:
		return o
	case string:
		s = v
	case []byte:
		s = string(v)
	case json.RawMessage:
		s = string(v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return failure("RESULT_NOT_SERIALIZABLE", "the handler's return value: "+err.Error(), boolPtr(false))
		}
		if string(data) == "null" {
			return o
		}
		s = string(data)
	}
	if len(s) > MaxResultBytes {
		return failure("RESULT_TOO_LARGE", fmt.Sprintf("the result has %d bytes; at most %d are allowed", len(s), MaxResultBytes), boolPtr(false))
	}
	o.result = &s
	return o
}

// coder is an error that carries its own code (as LeaseLostError and friends do).
type coder interface{ Code() string }

func fromError(err error, cause error) outcome {
	var se *StageError
	if errors.As(err, &se) {
		code := cleanCode(se.Code)
		retryable := se.Retryable
		if retryable == nil && IsTerminalCode(code) {
			retryable = boolPtr(false)
		}
		return failure(code, truncate(se.Message, 4000), retryable)
	}
	message := truncate(err.Error(), 4000)
	switch cause.(type) {
	case *StageTimeoutError:
		return failure("TIMEOUT", message, nil)
	case *WorkerStoppingError:
		return failure("WORKER_STOPPING", message, boolPtr(true))
	}
	var c coder
	if errors.As(err, &c) && c.Code() != "" {
		return failure(cleanCode(c.Code()), message, nil)
	}
	return failure("HANDLER_ERROR", message, nil)
}

// cleanCode makes a code the server accepts: no control characters, at most 200 characters.
func cleanCode(code string) string {
	code = strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return '_'
		}
		return r
	}, code)
	code = truncate(code, maxErrorCodeChars)
	if strings.TrimSpace(code) == "" {
		return "HANDLER_ERROR"
	}
	return code
}

// truncate cuts s to at most max code points.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

// buildResult is the result body for one execution, fitted under the request size limit, and
// marshalled once: every retry sends these same bytes.
func buildResult(s *Stage, o outcome, ackToken string, next *pullNextRequest) ([]byte, error) {
	s.mu.Lock()
	body := resultSubmit{
		StageID: s.StageID, ExecutionID: s.ExecutionID, Attempt: s.Attempt, PipelineID: s.PipelineID,
		IsSuccess: o.success, IsWaitingForApproval: o.approval, Result: o.result, ErrorCode: o.code,
		Retryable: o.retryable, Logs: capLogs(s.logs, s.dropped, o.extra),
		ContextItems: append([]contextUpdate(nil), s.changes...), AppendedStages: append([]AppendedStage(nil), s.appended...),
		AckToken: ackToken, Next: next,
	}
	s.mu.Unlock()
	data, err := json.Marshal(&body)
	if err != nil || len(data) <= MaxResultRequestBytes {
		return data, err
	}
	short := make([]resultLog, len(body.Logs))
	for i, l := range body.Logs {
		l.Message = truncate(l.Message, 1000)
		short[i] = l
	}
	body.Logs = short
	if data, err = json.Marshal(&body); err != nil || len(data) <= MaxResultRequestBytes {
		return data, err
	}
	// Keep only the failure line, if any: the handler's own lines go first.
	body.Logs = short[len(short)-len(o.extra):]
	if data, err = json.Marshal(&body); err != nil || len(data) <= MaxResultRequestBytes {
		return data, err
	}
	f := failure("RESULT_TOO_LARGE", fmt.Sprintf("the result body exceeds %d bytes even without logs", MaxResultRequestBytes), boolPtr(false))
	return json.Marshal(&resultSubmit{StageID: s.StageID, ExecutionID: s.ExecutionID, Attempt: s.Attempt,
		PipelineID: s.PipelineID, ErrorCode: f.code, Retryable: f.retryable, Logs: f.extra, AckToken: ackToken, Next: next})
}

func capLogs(own []resultLog, dropped int, extra []resultLog) []resultLog {
	room := MaxResultLogs - len(extra)
	if dropped > 0 || len(own) > room {
		keep := len(own)
		if keep > room-1 {
			keep = room - 1 // one line for the marker
		}
		dropped += len(own) - keep
		own = own[:keep]
	}
	out := make([]resultLog, 0, len(own)+1+len(extra))
	out = append(out, own...)
	if dropped > 0 {
		out = append(out, resultLog{Message: fmt.Sprintf("%d more log lines were dropped (at most %d per result)", dropped, MaxResultLogs),
			LogLevel: "Warning", Created: nowISO()})
	}
	return append(out, extra...)
}
