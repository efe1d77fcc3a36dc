package worker

import "encoding/json"

// Wire types of the worker protocol (docs/openapi.json). Declared here rather than generated so the
// SDK has no dependencies; protocol_test.go checks every field name against the OpenAPI document.

// StageOptions are the options of a dispatched stage, defaults applied.
type StageOptions struct {
	RunNextIfFailed   bool     `json:"runNextIfFailed"`
	RetryInterval     int      `json:"retryInterval"`
	MaxRetries        int      `json:"maxRetries"`
	TimeOut           *int     `json:"timeOut"`
	RetryOnErrorCodes []string `json:"retryOnErrorCodes"`
	Backoff           string   `json:"backoff"`
	MaxRetryInterval  *int     `json:"maxRetryInterval"`
	Jitter            bool     `json:"jitter"`
	DependsOn         []string `json:"dependsOn"`
	RunInParallelWith []string `json:"runInParallelWith"`
	FailIfOutputEmpty bool     `json:"failIfOutputEmpty"`
	NotifyOnFailure   bool     `json:"notifyOnFailure"`
	RunAsUser         *string  `json:"runAsUser"`
}

// StageOptionsInput are the options of an appended stage; nil fields take the server's defaults.
type StageOptionsInput struct {
	RunNextIfFailed   *bool    `json:"runNextIfFailed,omitempty"`
	RetryInterval     *int     `json:"retryInterval,omitempty"`
	MaxRetries        *int     `json:"maxRetries,omitempty"`
	TimeOut           *int     `json:"timeOut,omitempty"`
	RetryOnErrorCodes []string `json:"retryOnErrorCodes,omitempty"`
	Backoff           string   `json:"backoff,omitempty"`
	MaxRetryInterval  *int     `json:"maxRetryInterval,omitempty"`
	Jitter            *bool    `json:"jitter,omitempty"`
	DependsOn         []string `json:"dependsOn,omitempty"`
	RunInParallelWith []string `json:"runInParallelWith,omitempty"`
	FailIfOutputEmpty *bool    `json:"failIfOutputEmpty,omitempty"`
	NotifyOnFailure   *bool    `json:"notifyOnFailure,omitempty"`
	RunAsUser         string   `json:"runAsUser,omitempty"`
}

// ContextItem is a pipeline context item as delivered: real values, sensitive ones included.
type ContextItem struct {
	Key         string  `json:"key"`
	Value       string  `json:"value"`
	ValueType   *string `json:"valueType"`
	IsSensitive bool    `json:"isSensitive"`
	IsDeleted   bool    `json:"isDeleted"`
}

// contextUpdate is a context change carried by a result.
type contextUpdate struct {
	Key         string `json:"key"`
	Value       string `json:"value,omitempty"`
	ValueType   string `json:"valueType,omitempty"`
	IsSensitive bool   `json:"isSensitive,omitempty"`
	IsDeleted   bool   `json:"isDeleted,omitempty"`
}

// AppendedStage is a stage a handler appends to its pipeline (StageInfo on the wire).
type AppendedStage struct {
	StageName        string `json:"stageName"`
	StageHandlerName string `json:"stageHandlerName"`
	Description      string `json:"description,omitempty"`
	// Input: a string is used as is, any other JSON value as its compact JSON.
	Input                  any                `json:"input,omitempty"`
	Policies               []map[string]any   `json:"policies,omitempty"`
	Options                *StageOptionsInput `json:"options,omitempty"`
	IsEvent                *bool              `json:"isEvent,omitempty"`
	RunNextIfFailed        *bool              `json:"runNextIfFailed,omitempty"`
	RunNextIfCurrentFailed *bool              `json:"runNextIfCurrentFailed,omitempty"`
}

type stageNextMessage struct {
	ApplicationID        int64         `json:"applicationId"`
	PipelineID           *int64        `json:"pipelineId"`
	StageID              *int64        `json:"stageId"`
	ExecutionID          string        `json:"executionId"`
	StageName            string        `json:"stageName"`
	StageHandlerName     string        `json:"stageHandlerName"`
	Input                string        `json:"input"`
	Options              StageOptions  `json:"options"`
	PipelineContextItems []ContextItem `json:"pipelineContextItems"`
	TraceID              string        `json:"traceId"`
	SpanID               string        `json:"spanId"`
	DispatchedAt         string        `json:"dispatchedAt"`
	TimeOutSeconds       *float64      `json:"timeOutSeconds"`
	PreviousAttempts     int           `json:"previousAttempts"`
}

type pullJobResponse struct {
	Token     string            `json:"token"`
	Queue     string            `json:"queue"`
	Payload   *stageNextMessage `json:"payload"`
	MessageID string            `json:"messageId"`
	Headers   map[string]any    `json:"headers"`
	// Lease is the lease the pull acquired (decision 0098); nil when unanswered or unknown.
	Lease *leaseResponse `json:"lease"`
	// Backlog: the message waited for a place of its handler's maxConcurrent (decision 0132).
	Backlog bool `json:"backlog"`
}

type leaseAs struct {
	WorkerID string `json:"workerId"`
}

type pullJobRequest struct {
	Queue       string   `json:"queue"`
	WaitSeconds int      `json:"waitSeconds"`
	Lease       *leaseAs `json:"lease,omitempty"`
}

type ackJobRequest struct {
	Token   string `json:"token"`
	Requeue bool   `json:"requeue"`
}

type bootstrapRequest struct {
	InstanceID string         `json:"instanceId"`
	WorkerName string         `json:"workerName,omitempty"`
	Handlers   []string       `json:"handlers,omitempty"`
	SDKVersion string         `json:"sdkVersion,omitempty"`
	Hostname   string         `json:"hostname,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

type bootstrapResponse struct {
	WorkerID                 string   `json:"workerId"`
	SessionToken             string   `json:"sessionToken"`
	SessionExpiresAt         string   `json:"sessionExpiresAt"`
	ApplicationID            int64    `json:"applicationId"`
	Queues                   []string `json:"queues"`
	HeartbeatIntervalSeconds float64  `json:"heartbeatIntervalSeconds"`
}

type heartbeatRequest struct {
	WorkerID  string `json:"workerId"`
	InFlight  int64  `json:"inFlight"`
	Processed int64  `json:"processed"`
	Failed    int64  `json:"failed"`
}

type workerEvent struct {
	Kind       string         `json:"kind"`
	At         string         `json:"at,omitempty"`
	Message    string         `json:"message,omitempty"`
	StageID    int64          `json:"stageId,omitempty"`
	PipelineID int64          `json:"pipelineId,omitempty"`
	Data       map[string]any `json:"data,omitempty"`
}

type workerEventsRequest struct {
	WorkerID string        `json:"workerId"`
	Events   []workerEvent `json:"events"`
}

type shutdownRequest struct {
	WorkerID string `json:"workerId"`
	Reason   string `json:"reason,omitempty"`
}

type leaseRequest struct {
	ExecutionID string `json:"executionId"`
	WorkerID    string `json:"workerId"`
}

type leaseResponse struct {
	Acquired *bool   `json:"acquired"`
	Attempt  *int    `json:"attempt"`
	Reason   *string `json:"reason"`
}

type resultLog struct {
	Message  string `json:"message"`
	LogLevel string `json:"logLevel,omitempty"`
	Created  string `json:"created,omitempty"`
}

type pullNextRequest struct {
	Queue string   `json:"queue"`
	Lease *leaseAs `json:"lease,omitempty"`
}

type resultSubmit struct {
	StageID              int64            `json:"stageId"`
	ExecutionID          string           `json:"executionId"`
	Attempt              int              `json:"attempt"`
	PipelineID           int64            `json:"pipelineId"`
	IsSuccess            bool             `json:"isSuccess"`
	Result               *string          `json:"result,omitempty"`
	IsWaitingForApproval bool             `json:"isWaitingForApproval,omitempty"`
	ErrorCode            string           `json:"errorCode,omitempty"`
	Retryable            *bool            `json:"retryable,omitempty"`
	Logs                 []resultLog      `json:"logs,omitempty"`
	ContextItems         []contextUpdate  `json:"contextItems,omitempty"`
	AppendedStages       []AppendedStage  `json:"appendedStages,omitempty"`
	AckToken             string           `json:"ackToken,omitempty"`
	Next                 *pullNextRequest `json:"next,omitempty"`
}

type resultAccepted struct {
	Accepted *bool `json:"accepted"`
	Acked    *bool `json:"acked"`
	// Next stays raw: absent (an older gateway) and null (nothing pulled) mean different things.
	Next json.RawMessage `json:"next"`
}

// Limits of the protocol the SDK enforces before sending (api-spec.md "Limits").
const (
	MaxResultBytes        = 262144
	MaxResultRequestBytes = 327680
	MaxResultLogs         = 100
	MaxContextChanges     = 64
	MaxAppendedStages     = 100
	maxErrorCodeChars     = 200
	maxLogLevelChars      = 32
	maxEventsPerBatch     = 100
	maxEventMessageChars  = 4000
	maxShutdownReason     = 1000
	maxInstanceIDChars    = 200
	maxWorkerNameChars    = 200
	maxHandlers           = 100
	maxHandlerNameChars   = 300
	maxContextKeyChars    = 300
	maxWaitSeconds        = 20
)

// QueueName is the queue a handler's stages arrive on.
func QueueName(applicationID int64, handler string) string {
	return "app_" + itoa(applicationID) + "_" + handler + "_StageNext"
}
