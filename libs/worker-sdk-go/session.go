package worker

import (
	"context"
	"sync"
	"time"
)

// session holds the worker session: bootstrap (retried at start), a new bootstrap when a session
// call answers 401 (the workerId stays: it is stable per application and instanceId), heartbeat.
type session struct {
	c    *client
	o    *Options
	req  *bootstrapRequest
	mu   sync.Mutex
	info *bootstrapResponse
	// refreshing is closed when the bootstrap in progress ends; nil when none is.
	refreshing chan struct{}
	refreshErr error
}

func (s *session) current() *bootstrapResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *session) workerID() string {
	if i := s.current(); i != nil {
		return i.WorkerID
	}
	return ""
}

// bootstrap is the first one: network errors and 5xx are retried StartupAttempts times.
func (s *session) bootstrap(ctx context.Context) (*bootstrapResponse, error) {
	for attempt := 1; ; attempt++ {
		info, err := s.c.bootstrap(ctx, s.req)
		if err == nil {
			s.mu.Lock()
			s.info = info
			s.mu.Unlock()
			return info, nil
		}
		if ctx.Err() != nil || !IsRetryable(err) || attempt >= s.o.StartupAttempts {
			return nil, err
		}
		d := backoff(attempt-1, s.o.RetryBaseDelay, s.o.RetryMaxDelay)
		s.o.Logger.Warn("bootstrap failed; retrying", "attempt", attempt, "delayMs", d.Milliseconds(), "error", err)
		if !sleep(ctx, d) {
			return nil, ctx.Err()
		}
	}
}

// refresh bootstraps again unless someone already replaced stale; concurrent callers share one.
func (s *session) refresh(ctx context.Context, stale string) error {
	s.mu.Lock()
	if s.info != nil && s.info.SessionToken != stale {
		s.mu.Unlock()
		return nil
	}
	wait := s.refreshing
	if wait == nil {
		wait = make(chan struct{})
		s.refreshing = wait
		s.mu.Unlock()
		s.o.Logger.Info("worker session rejected (401); bootstrapping again", "workerId", s.workerID())
		info, err := s.c.bootstrap(context.Background(), s.req)
		s.mu.Lock()
		if err == nil {
			s.info = info
		}
		s.refreshErr = err
		s.refreshing = nil
		s.mu.Unlock()
		close(wait)
		return err
	}
	s.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshErr
}

// call runs a session call; on 401 it bootstraps again once and repeats the call.
func (s *session) call(ctx context.Context, fn func(token, workerID string) error) error {
	s.mu.Lock()
	wait := s.refreshing
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	info := s.current()
	err := fn(info.SessionToken, info.WorkerID)
	if _, unauthorized := isStatus(err, 401); !unauthorized {
		return err
	}
	if rerr := s.refresh(ctx, info.SessionToken); rerr != nil {
		return rerr
	}
	info = s.current()
	return fn(info.SessionToken, info.WorkerID)
}

// heartbeat beats until ctx ends, with the counters of the moment.
func (s *session) heartbeat(ctx context.Context, counters func() heartbeatRequest) {
	every := s.o.HeartbeatInterval
	if every == 0 {
		secs := s.current().HeartbeatIntervalSeconds
		if secs < 1 {
			secs = 1
		}
		every = time.Duration(secs * float64(time.Second))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.call(ctx, func(token, workerID string) error {
			body := counters()
			body.WorkerID = workerID
			return s.c.post(ctx, "/workers/heartbeat", token, &body)
		})
		if err != nil && ctx.Err() == nil && !failing {
			s.o.Logger.Warn("heartbeat failed", "error", err)
		} else if err == nil && failing {
			s.o.Logger.Info("heartbeats are being accepted again")
		}
		failing = err != nil
	}
}

// shutdown announces the stop (the server checks the token, not its expiry).
func (s *session) shutdown(ctx context.Context, reason string) error {
	return s.call(ctx, func(token, workerID string) error {
		return s.c.post(ctx, "/workers/shutdown", token, &shutdownRequest{WorkerID: workerID, Reason: reason})
	})
}
