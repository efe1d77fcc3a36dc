package worker

import "sync"

// route pairs a queue with its handler.
type route struct {
	queue, handler string
	fn             HandlerFunc
}

// sharedWaitSeconds is the long-poll wait of a pull that must come back soon to look at the other
// queues, so that no queue goes long unvisited.
const sharedWaitSeconds = 2

// rotation picks the queue a free slot pulls next, and how long it waits: round-robin, preferring
// queues no other slot is polling.
//
// With one queue every idle slot long-polls it. With several, a pull that gets a delivery leaves its
// queue unpolled, and only a pull that ends can cover it: a pull cannot be called back without
// risking a delivery the gateway already handed to it. So the full long-poll goes only to a slot
// polling a queue of its own while there is a slot more than there are queues; a slot on a queue
// another slot already polls (a spare: at most one per queue, the rest add requests, not coverage),
// and every slot while the idle ones do not outnumber the queues, waits sharedWaitSeconds and comes
// back to pull a queue left unpolled. (The full wait for every slot while the idle ones merely
// matched the queues left a queue whose only poller took a delivery unpolled for up to PollWait,
// 20 s, while idle slots long-polled empty queues.)
type rotation struct {
	mu          sync.Mutex
	routes      []route
	concurrency int
	wait        int
	busy        int
	next        int
	polling     map[string]int
	// spares counts pulls in flight on a queue another slot was already polling, at the shared wait.
	spares int
}

func newRotation(routes []route, concurrency, wait int) *rotation {
	return &rotation{routes: routes, concurrency: concurrency, wait: wait, polling: make(map[string]int, len(routes))}
}

// take picks a queue and its wait and counts the pull as polling until release is called.
func (r *rotation) take() (rt route, wait int, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt = r.pick()
	wait = r.wait
	spare := false
	if n := len(r.routes); n > 1 && wait > sharedWaitSeconds {
		switch {
		case n >= r.concurrency-r.busy:
			// No idle slot is left over to cover a queue whose poller takes a delivery.
			wait = sharedWaitSeconds
		case r.polling[rt.queue] > 0 && r.spares < n:
			wait, spare = sharedWaitSeconds, true
			r.spares++
		}
	}
	r.polling[rt.queue]++
	var once sync.Once
	return rt, wait, func() {
		once.Do(func() {
			r.mu.Lock()
			r.polling[rt.queue]--
			if spare {
				r.spares--
			}
			r.mu.Unlock()
		})
	}
}

// pickNext is the queue a result's pull asks for (decision 0100); that pull never waits, so it is
// not counted as polling.
func (r *rotation) pickNext() route {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pick()
}

func (r *rotation) setBusy(delta int) {
	r.mu.Lock()
	r.busy += delta
	r.mu.Unlock()
}

func (r *rotation) pick() route {
	n := len(r.routes)
	for k := 0; k < n; k++ {
		i := (r.next + k) % n
		if r.polling[r.routes[i].queue] == 0 {
			r.next = (i + 1) % n
			return r.routes[i]
		}
	}
	rt := r.routes[r.next]
	r.next = (r.next + 1) % n
	return rt
}
