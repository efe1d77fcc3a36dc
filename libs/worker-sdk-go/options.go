package worker

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Options configure a Worker. Zero values take the defaults given below.
type Options struct {
	// BaseURL of the API, for example http://127.0.0.1:8080 (a path prefix is kept). Required.
	BaseURL string
	// WorkerBaseURL serves /workers/*, /jobs/* and /stages/*; default BaseURL.
	WorkerBaseURL string
	// APIKey of the application (X-API-Key). Required.
	APIKey string
	// InstanceID is unique per process: 1..200 characters. Required.
	InstanceID string
	// WorkerName and Metadata are sent with the bootstrap.
	WorkerName string
	Metadata   map[string]any
	// Concurrency is the number of handler slots; default 1.
	Concurrency int
	// PollWait is the long-poll wait of a pull, at most 20 s; default 20 s. Negative: no wait.
	PollWait time.Duration
	// DrainTimeout is how long a stopping worker lets running handlers finish before cancelling
	// them with WorkerStoppingError; default 30 s.
	DrainTimeout time.Duration
	// AbortGrace is how long, after a cancellation, the worker still waits for a handler; default 5 s.
	AbortGrace time.Duration
	// RequestTimeout bounds each HTTP call (a pull adds its wait); default 10 s.
	RequestTimeout time.Duration
	// LeaseRenewInterval is the renewal period while a stage runs and its result is sent; default 20 s.
	LeaseRenewInterval time.Duration
	// LeaseDuration is the lease as the SDK counts it, from when the request that got it was sent
	// (decision 0118); at most and by default 60 s. A lower value only cancels sooner.
	LeaseDuration time.Duration
	// HeartbeatInterval defaults to the bootstrap's heartbeatIntervalSeconds.
	HeartbeatInterval time.Duration
	// EventFlushInterval is how often lifecycle events are sent; default 1 s.
	EventFlushInterval time.Duration
	// DisableEvents turns lifecycle events (POST /workers/events) off.
	DisableEvents bool
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff; defaults 500 ms and 30 s.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// ResultRetryTimeout is how long a result is re-sent after unknown outcomes; default 5 min.
	ResultRetryTimeout time.Duration
	// StartupAttempts at bootstrap on network errors and 5xx; default 5.
	StartupAttempts int
	// HTTPClient replaces the default client (keep-alive, idle connections for every slot).
	HTTPClient *http.Client
	// Logger receives the SDK's own log lines (ids, codes, counters; never stage data). Default:
	// JSON lines on stderr at info level.
	Logger Logger
}

const protocolLease = 60 * time.Second

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.WorkerBaseURL == "" {
		o.WorkerBaseURL = o.BaseURL
	}
	o.BaseURL = strings.TrimRight(strings.TrimSpace(o.BaseURL), "/")
	o.WorkerBaseURL = strings.TrimRight(strings.TrimSpace(o.WorkerBaseURL), "/")
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	def(&o.PollWait, 20*time.Second)
	def(&o.DrainTimeout, 30*time.Second)
	def(&o.AbortGrace, 5*time.Second)
	def(&o.RequestTimeout, 10*time.Second)
	def(&o.LeaseRenewInterval, 20*time.Second)
	def(&o.LeaseDuration, protocolLease)
	def(&o.EventFlushInterval, time.Second)
	def(&o.RetryBaseDelay, 500*time.Millisecond)
	def(&o.RetryMaxDelay, 30*time.Second)
	def(&o.ResultRetryTimeout, 5*time.Minute)
	if o.StartupAttempts == 0 {
		o.StartupAttempts = 5
	}
	if o.Logger == nil {
		o.Logger = NewJSONLogger(nil, LevelInfo, "instanceId", o.InstanceID)
	}
	return o
}

// validate lists every problem at once, so a misconfigured worker is fixed in one go.
func (o Options) validate() error {
	var p []string
	checkURL := func(name, v string) {
		if v == "" {
			p = append(p, name+" is required: the API base URL, for example http://127.0.0.1:8080")
			return
		}
		u, err := url.Parse(v)
		switch {
		case err != nil:
			p = append(p, name+" is not a valid URL")
		case u.Scheme != "http" && u.Scheme != "https":
			p = append(p, fmt.Sprintf("%s must use http or https, got %q", name, u.Scheme))
		case u.RawQuery != "" || u.Fragment != "":
			p = append(p, name+" must not carry a query or fragment")
		}
	}
	checkURL("BaseURL", o.BaseURL)
	if o.WorkerBaseURL != o.BaseURL {
		checkURL("WorkerBaseURL", o.WorkerBaseURL)
	}
	if strings.TrimSpace(o.APIKey) == "" {
		p = append(p, "APIKey is required (the application API key; did you set PO_API_KEY?)")
	}
	if n := utf8.RuneCountInString(o.InstanceID); n == 0 || n > maxInstanceIDChars {
		p = append(p, fmt.Sprintf("InstanceID is required: 1..%d characters, unique per process", maxInstanceIDChars))
	}
	if utf8.RuneCountInString(o.WorkerName) > maxWorkerNameChars {
		p = append(p, fmt.Sprintf("WorkerName must have at most %d characters", maxWorkerNameChars))
	}
	if o.Concurrency < 1 || o.Concurrency > 1000 {
		p = append(p, fmt.Sprintf("Concurrency must be 1..1000, got %d", o.Concurrency))
	}
	if o.PollWait > maxWaitSeconds*time.Second {
		p = append(p, "PollWait must be at most 20 s")
	}
	if o.LeaseDuration > protocolLease || o.LeaseDuration < 2*time.Millisecond {
		p = append(p, "LeaseDuration must be 2 ms..60 s: the protocol grants 60 s")
	}
	if o.LeaseRenewInterval >= o.LeaseDuration {
		p = append(p, "LeaseRenewInterval must be below LeaseDuration: a lease must be renewed before it runs out")
	}
	for name, d := range map[string]time.Duration{"DrainTimeout": o.DrainTimeout, "AbortGrace": o.AbortGrace,
		"RequestTimeout": o.RequestTimeout, "LeaseRenewInterval": o.LeaseRenewInterval, "HeartbeatInterval": o.HeartbeatInterval,
		"EventFlushInterval": o.EventFlushInterval, "RetryBaseDelay": o.RetryBaseDelay, "RetryMaxDelay": o.RetryMaxDelay,
		"ResultRetryTimeout": o.ResultRetryTimeout} {
		if d < 0 {
			p = append(p, name+" must not be negative")
		}
	}
	if o.StartupAttempts < 1 {
		p = append(p, "StartupAttempts must be at least 1")
	}
	if len(p) > 0 {
		return &ConfigError{Problems: p}
	}
	return nil
}

// pollWaitSeconds is the pull's waitSeconds.
func (o Options) pollWaitSeconds() int {
	if o.PollWait < 0 {
		return 0
	}
	return int(o.PollWait / time.Second)
}
