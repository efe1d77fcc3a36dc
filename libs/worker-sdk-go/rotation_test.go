package worker

import (
	"fmt"
	"testing"
)

func testRoutes(n int) []route {
	rs := make([]route, n)
	for i := range rs {
		rs[i] = route{queue: fmt.Sprintf("app_7_h%d_StageNext", i), handler: fmt.Sprintf("h%d", i)}
	}
	return rs
}

type takenPull struct {
	rt      route
	wait    int
	release func()
}

func takeAll(r *rotation, n int) []takenPull {
	out := make([]takenPull, n)
	for i := range out {
		rt, wait, release := r.take()
		out[i] = takenPull{rt, wait, release}
	}
	return out
}

func TestRotationOneQueueEverySlotLongPolls(t *testing.T) {
	r := newRotation(testRoutes(1), 4, 20)
	for _, p := range takeAll(r, 4) {
		if p.wait != 20 {
			t.Fatalf("wait %d on the only queue, want 20", p.wait)
		}
	}
}

// The conformance worker's shape (issue: the Go redelivery scenario timed out): six queues, eight
// slots. When the only poller of a queue takes a delivery, a pull still in flight must come back
// within the shared wait to cover that queue; with every slot long-polling 20 s, a message arriving
// on it waited up to 20 s while slots sat idle on empty queues.
func TestRotationQueueLeftByItsPollerIsCoveredWithinTheSharedWait(t *testing.T) {
	r := newRotation(testRoutes(6), 8, 20)
	pulls := takeAll(r, 8)
	seen := map[string]int{}
	for _, p := range pulls {
		seen[p.rt.queue]++
	}
	if len(seen) != 6 {
		t.Fatalf("queues polled: %v, want all 6", seen)
	}
	for _, taker := range []int{0, 3, 5} {
		// This pull brings a delivery: its slot runs it, its queue may be left without a poller.
		pulls[taker].release()
		r.setBusy(1)
		short := 0
		for i, p := range pulls {
			if i != taker && p.wait <= sharedWaitSeconds && p.release != nil {
				short++
			}
		}
		if short == 0 {
			t.Fatalf("after the pull of %s brought a delivery, every other pull waits 20 s", pulls[taker].rt.queue)
		}
		pulls[taker].release = nil
	}
}

func TestRotationLongPollsOnlyWithASlotMoreThanQueues(t *testing.T) {
	// As many slots as queues: no slot is left over, every pull comes back within the shared wait.
	r := newRotation(testRoutes(3), 3, 20)
	for _, p := range takeAll(r, 3) {
		if p.wait != sharedWaitSeconds {
			t.Fatalf("wait %d with no spare slot, want %d", p.wait, sharedWaitSeconds)
		}
	}
	// Fewer slots than queues: as before.
	r = newRotation(testRoutes(4), 2, 20)
	for _, p := range takeAll(r, 2) {
		if p.wait != sharedWaitSeconds {
			t.Fatalf("wait %d with more queues than slots, want %d", p.wait, sharedWaitSeconds)
		}
	}
}

func TestRotationSparesAreCappedAtOnePerQueue(t *testing.T) {
	r := newRotation(testRoutes(2), 10, 20)
	pulls := takeAll(r, 10)
	short := 0
	for _, p := range pulls {
		if p.wait == sharedWaitSeconds {
			short++
		}
	}
	// Two queues long-polled by a slot each, two spares at the shared wait, six more long-poll.
	if short != 2 {
		t.Fatalf("%d pulls at the shared wait, want 2", short)
	}
	// A spare that returns frees its place for the next one.
	for _, p := range pulls {
		if p.wait == sharedWaitSeconds {
			p.release()
			break
		}
	}
	if _, wait, _ := r.take(); wait != sharedWaitSeconds {
		t.Fatalf("the next spare waits %d, want %d", wait, sharedWaitSeconds)
	}
}

func TestRotationPollWaitBelowSharedWaitIsKept(t *testing.T) {
	r := newRotation(testRoutes(3), 3, 1)
	for _, p := range takeAll(r, 3) {
		if p.wait != 1 {
			t.Fatalf("wait %d, want the configured 1", p.wait)
		}
	}
	r = newRotation(testRoutes(3), 3, 0)
	if _, wait, _ := r.take(); wait != 0 {
		t.Fatalf("wait %d, want 0 (no long-poll)", wait)
	}
}
