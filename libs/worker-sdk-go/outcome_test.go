package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTerminalCodesAreNeverRetried(t *testing.T) {
	for _, code := range TerminalCodes {
		o := fromReturn(nil, Fail(code, "no"), nil)
		if o.code != code || o.retryable == nil || *o.retryable {
			t.Fatalf("%s: %+v", code, o)
		}
	}
	o := fromReturn(nil, Fail("FLAKY", "again"), nil)
	if o.code != "FLAKY" || o.retryable != nil {
		t.Fatalf("%+v", o)
	}
	o = fromReturn(nil, fmt.Errorf("wrapped: %w", FailRetryable("X", "m", true)), nil)
	if o.code != "X" || !*o.retryable || o.extra[0].Message != "X: m" {
		t.Fatalf("%+v", o)
	}
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err   error
		cause error
		code  string
	}{
		{errors.New("boom"), nil, "HANDLER_ERROR"},
		{errors.New("late"), &StageTimeoutError{Seconds: 1}, "TIMEOUT"},
		{errors.New("late"), &WorkerStoppingError{}, "WORKER_STOPPING"},
		{Fail("BUSINESS_REJECTED", "x"), &StageTimeoutError{}, "BUSINESS_REJECTED"},
		{Fail("bad\ncode", "x"), nil, "bad_code"},
	}
	for _, c := range cases {
		if o := fromReturn(nil, c.err, c.cause); o.code != c.code || o.success {
			t.Errorf("%v/%v: got %q", c.err, c.cause, o.code)
		}
	}
}

func TestReturnValues(t *testing.T) {
	if o := fromReturn(map[string]int{"a": 1}, nil, nil); *o.result != `{"a":1}` {
		t.Fatal(*o.result)
	}
	if o := fromReturn(nil, nil, nil); !o.success || o.result != nil {
		t.Fatal(o)
	}
	if o := fromReturn(AwaitApproval("wait"), nil, nil); !o.approval || *o.result != "wait" {
		t.Fatal(o)
	}
	if o := fromReturn(json.RawMessage(`[1]`), nil, nil); *o.result != "[1]" {
		t.Fatal(*o.result)
	}
	if o := fromReturn(func() {}, nil, nil); o.code != "RESULT_NOT_SERIALIZABLE" {
		t.Fatal(o)
	}
}

func testStage() *Stage {
	d := &pullJobResponse{Payload: &stageNextMessage{StageID: new(int64), PipelineID: new(int64), ExecutionID: "e"}}
	*d.Payload.StageID, *d.Payload.PipelineID = 3, 4
	return newStage(d, "h", 1)
}

func TestLimitsCheckedBeforeSending(t *testing.T) {
	big := strings.Repeat("x", MaxResultBytes+1)
	if o := fromReturn(big, nil, nil); o.code != "RESULT_TOO_LARGE" || *o.retryable {
		t.Fatalf("%+v", o.code)
	}
	// Log lines are cut down until the body fits.
	s := testStage()
	for i := 0; i < 150; i++ {
		s.Log(strings.Repeat("l", 5000))
	}
	body, err := buildResult(s, fromReturn(strings.Repeat("r", 200000), nil, nil), "tok", nil)
	if err != nil || len(body) > MaxResultRequestBytes {
		t.Fatalf("%d bytes, %v", len(body), err)
	}
	r := decode(t, body)
	if !r.IsSuccess || len(*r.Result) != 200000 || len(r.Logs) > MaxResultLogs {
		t.Fatalf("success %v logs %d", r.IsSuccess, len(r.Logs))
	}
	if !strings.Contains(r.Logs[len(r.Logs)-1].Message, "dropped") && len(r.Logs) == MaxResultLogs {
		t.Fatal("no marker for dropped lines")
	}
	// Context: at most 64 changes.
	for i := 0; i < MaxContextChanges; i++ {
		if err := s.SetContext(fmt.Sprint("k", i), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetContext("one-more", "v"); err == nil {
		t.Fatal("65th context change accepted")
	}
	if err := s.SetContext("k1", "again", Sensitive(true)); err != nil {
		t.Fatal("an update of a known key refused")
	}
	if v, _ := s.Value("k1"); v != "again" {
		t.Fatal(v)
	}
}

func TestInvalidJSONInputIsValidationError(t *testing.T) {
	s := testStage()
	s.Input = "{"
	var v any
	err := s.JSON(&v)
	var se *StageError
	if !errors.As(err, &se) || se.Code != "VALIDATION_ERROR" || *se.Retryable {
		t.Fatal(err)
	}
}

func TestCancelCause(t *testing.T) {
	ctx, st := newCancelContext(context.Background())
	if CancelCause(ctx) != nil {
		t.Fatal("cause before cancel")
	}
	st.cancelWith(&LeaseLostError{Reason: "not_owner"})
	st.cancelWith(&WorkerStoppingError{})
	var lost *LeaseLostError
	if !errors.As(CancelCause(ctx), &lost) {
		t.Fatal(CancelCause(ctx))
	}
}
