package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// client makes the protocol's HTTP calls. Failures are typed: *APIError (non-2xx),
// *TransportError (unknown outcome), *ProtocolError (unusable body).
type client struct {
	base    string
	apiKey  string
	timeout time.Duration
	http    *http.Client
	// The latest session token goes on every call, pull and ack included (where the server ignores
	// it), so a load balancer hashing on X-Worker-Session keeps a pull and its ack on one gateway
	// process (decision 0014).
	routing atomic.Value // string
}

// newTransport keeps one idle connection per slot and then some: every stage reuses a connection
// instead of dialling (the gateway is on the same host or a short hop away).
func newTransport(concurrency int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4*concurrency + 16,
		MaxIdleConnsPerHost:   2*concurrency + 8,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

type call struct {
	method, path string
	body         any    // marshalled unless raw is set
	raw          []byte // a body marshalled once and sent as is on every retry
	apiKey       bool
	session      string
	traceparent  string
	timeout      time.Duration
	ok           []int
}

// do sends the call and decodes a JSON answer into out (when out is non-nil and the body is not
// empty). It returns the status.
func (c *client) do(ctx context.Context, k call, out any) (int, error) {
	body := k.raw
	if body == nil && k.body != nil {
		var err error
		if body, err = json.Marshal(k.body); err != nil {
			return 0, err
		}
	}
	timeout := k.timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, k.method, c.base+k.path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	h := req.Header
	h["Accept"] = []string{"application/json"}
	if body != nil {
		h["Content-Type"] = []string{"application/json"}
	}
	if k.apiKey {
		h["X-Api-Key"] = []string{c.apiKey}
	}
	session := k.session
	if session == "" {
		session, _ = c.routing.Load().(string)
	}
	if session != "" {
		h["X-Worker-Session"] = []string{session}
	}
	if k.traceparent != "" {
		h["Traceparent"] = []string{k.traceparent}
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, k, err)
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return 0, c.transportError(ctx, k, err)
	}
	if !contains(k.ok, res.StatusCode) {
		return res.StatusCode, apiError(k, res, data)
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return res.StatusCode, &ProtocolError{k.method + " " + k.path + ": response is not the expected JSON: " + err.Error()}
		}
	}
	return res.StatusCode, nil
}

// transportError keeps the caller's own cancellation as is: it is no unknown outcome to retry.
func (c *client) transportError(ctx context.Context, k call, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return context.Canceled
	}
	return &TransportError{Method: k.method, Path: k.path, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded), Err: err}
}

func apiError(k call, res *http.Response, data []byte) error {
	e := &APIError{Method: k.method, Path: k.path, Status: res.StatusCode, RetryAfter: parseRetryAfter(res.Header.Get("Retry-After"), time.Now())}
	var problem struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(data, &problem) == nil {
		e.Code, e.Detail = problem.Code, problem.Detail
	}
	return e
}

// parseRetryAfter reads seconds or an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (c *client) bootstrap(ctx context.Context, body *bootstrapRequest) (*bootstrapResponse, error) {
	var r bootstrapResponse
	if _, err := c.do(ctx, call{method: "POST", path: "/workers/bootstrap", body: body, apiKey: true, ok: []int{200}}, &r); err != nil {
		return nil, err
	}
	if r.WorkerID == "" || r.SessionToken == "" || r.Queues == nil {
		return nil, &ProtocolError{"/workers/bootstrap: response lacks workerId, sessionToken or queues"}
	}
	c.routing.Store(r.SessionToken)
	return &r, nil
}

func (c *client) post(ctx context.Context, path, session string, body any) error {
	_, err := c.do(ctx, call{method: "POST", path: path, body: body, session: session, ok: []int{200, 204}}, nil)
	return err
}

// pull long-polls one queue; nil when nothing arrived (204). With a workerId the gateway also
// acquires the delivered stage's lease (decision 0098).
func (c *client) pull(ctx context.Context, queue string, wait int, workerID string) (*pullJobResponse, error) {
	req := pullJobRequest{Queue: queue, WaitSeconds: wait}
	if workerID != "" {
		req.Lease = &leaseAs{WorkerID: workerID}
	}
	var r pullJobResponse
	status, err := c.do(ctx, call{method: "POST", path: "/jobs/pull", body: &req, apiKey: true,
		timeout: time.Duration(wait)*time.Second + c.timeout, ok: []int{200, 204}}, &r)
	if err != nil || status == 204 {
		return nil, err
	}
	return checkDelivery(&r, "/jobs/pull", queue)
}

// ack acknowledges a delivery; it must reach the process that served the pull (sticky routing).
func (c *client) ack(ctx context.Context, token string, requeue bool) error {
	return c.post(ctx, "/jobs/ack", "", &ackJobRequest{Token: token, Requeue: requeue})
}

func (c *client) lease(ctx context.Context, op, session string, stageID int64, body *leaseRequest, traceparent string) (*leaseResponse, error) {
	path := "/stages/" + itoa(stageID) + "/lease/" + op
	var r leaseResponse
	if _, err := c.do(ctx, call{method: "POST", path: path, body: body, session: session, traceparent: traceparent, ok: []int{200}}, &r); err != nil {
		return nil, err
	}
	if r.Acquired == nil {
		return nil, &ProtocolError{path + ": response has no acquired"}
	}
	return &r, nil
}

func (c *client) result(ctx context.Context, session string, stageID int64, raw []byte, traceparent string) (*resultAccepted, error) {
	var r resultAccepted
	_, err := c.do(ctx, call{method: "POST", path: "/stages/" + itoa(stageID) + "/result", raw: raw, apiKey: true,
		session: session, traceparent: traceparent, ok: []int{200, 202}}, &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// malformedDelivery is a delivery whose payload cannot be run; the token lets it be acknowledged.
type malformedDelivery struct {
	token, message string
}

func (e *malformedDelivery) Error() string { return e.message }

func checkDelivery(r *pullJobResponse, path, queue string) (*pullJobResponse, error) {
	if r.Token == "" {
		return nil, &ProtocolError{path + ": response has no token"}
	}
	m := r.Payload
	if m == nil || m.StageID == nil || m.PipelineID == nil || m.ExecutionID == "" {
		return nil, &malformedDelivery{r.Token, path + ": payload lacks stageId, pipelineId or executionId"}
	}
	if r.Queue == "" {
		r.Queue = queue
	}
	if r.Lease != nil && r.Lease.Acquired == nil {
		r.Lease = nil
	}
	return r, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
