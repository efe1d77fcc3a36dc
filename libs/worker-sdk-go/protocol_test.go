package worker

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The wire types stay checked against docs/openapi.json: every JSON field a struct reads or writes
// must be a property of its schema there.
func TestWireTypesMatchOpenAPI(t *testing.T) {
	data, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Skipf("docs/openapi.json not found (the SDK outside its monorepo): %v", err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	types := map[string]any{
		"StageOptions": StageOptions{}, "StageOptionsInput": StageOptionsInput{}, "ContextItem": ContextItem{},
		"ResultContextItem": contextUpdate{}, "StageInfo": AppendedStage{}, "StageNextMessage": stageNextMessage{},
		"PullJobResponse": pullJobResponse{}, "PullJobRequest": pullJobRequest{}, "PullLeaseRequest": leaseAs{},
		"AckJobRequest": ackJobRequest{}, "BootstrapRequest": bootstrapRequest{}, "BootstrapResponse": bootstrapResponse{},
		"HeartbeatRequest": heartbeatRequest{}, "WorkerEvent": workerEvent{}, "WorkerEventsRequest": workerEventsRequest{},
		"ShutdownRequest": shutdownRequest{}, "StageLeaseRequest": leaseRequest{}, "StageLeaseResponse": leaseResponse{},
		"StageResultLog": resultLog{}, "PullNextRequest": pullNextRequest{}, "StageResultSubmit": resultSubmit{},
		"StageResultAccepted": resultAccepted{},
	}
	for name, v := range types {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("no schema %s in docs/openapi.json", name)
			continue
		}
		rt := reflect.TypeOf(v)
		fields := map[string]bool{}
		for i := 0; i < rt.NumField(); i++ {
			tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = true
			if _, ok := schema.Properties[tag]; !ok {
				t.Errorf("%s.%s: %q is not a property of schema %s", rt.Name(), rt.Field(i).Name, tag, name)
			}
		}
		// What the SDK sends must carry every required field.
		if strings.HasSuffix(name, "Request") || name == "StageResultSubmit" || name == "StageInfo" || name == "WorkerEvent" {
			for _, req := range schema.Required {
				if !fields[req] {
					t.Errorf("%s lacks the required field %q of schema %s", rt.Name(), req, name)
				}
			}
		}
	}
}

func TestNextNullIsKeptApartFromAbsent(t *testing.T) {
	var absent, null resultAccepted
	_ = json.Unmarshal([]byte(`{"accepted":true,"acked":true}`), &absent)
	_ = json.Unmarshal([]byte(`{"accepted":true,"acked":true,"next":null}`), &null)
	if absent.Next != nil || string(null.Next) != "null" {
		t.Fatalf("absent %q null %q", absent.Next, null.Next)
	}
}
