package worker

import (
	"context"
	"math/rand"
	"time"
)

// with returns base plus more in a new slice: base is shared by concurrent log calls.
func with(base []any, more ...any) []any {
	out := make([]any, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

// backoff is exponential with jitter: attempt 0 → about base, doubling, capped at max (50-100 %).
func backoff(attempt int, base, max time.Duration) time.Duration {
	if attempt > 30 {
		attempt = 30
	}
	d := base << uint(attempt)
	if d > max || d <= 0 {
		d = max
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitFor waits for done up to d; false on timeout.
func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
