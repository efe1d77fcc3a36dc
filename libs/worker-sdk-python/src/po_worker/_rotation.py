"""Which queue a free slot pulls next, and how long it waits: round-robin, preferring queues no
other slot is polling.

With one queue every idle slot long-polls it. With several, a pull that gets a delivery leaves its
queue unpolled, and only a pull that ends can cover it (a pull cannot be called back without risking
a delivery the gateway already handed to it). So the full long-poll goes only to a slot polling a
queue of its own while there is a slot more than there are queues; a slot on a queue another slot
already polls (a spare: at most one per queue, more add requests, not coverage), and every slot while
the idle ones do not outnumber the queues, waits SHARED_WAIT_SECONDS and comes back to pull a queue
left unpolled. (The full wait for every slot while the idle ones merely matched the queues left a
queue whose only poller took a delivery unpolled for up to the poll wait, 20 s, while idle slots
long-polled empty queues.)"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

#: Long-poll wait of a pull that must come back soon to look at the other queues.
SHARED_WAIT_SECONDS = 2


class Route(NamedTuple):
    queue: str
    handler: str
    fn: Callable[..., Any]


class Rotation:
    def __init__(self, routes: List[Route], concurrency: int, wait_seconds: int) -> None:
        if not routes:
            raise ValueError("a worker needs at least one queue")
        self.routes = routes
        self.busy = 0
        self._concurrency = concurrency
        self._wait = wait_seconds
        self._next = 0
        self._polling: Dict[str, int] = {r.queue: 0 for r in routes}
        #: Pulls in flight on a queue another slot was already polling, at the shared wait.
        self._spares = 0
        self._lock = threading.Lock()

    def take(self) -> Tuple[Route, int, Callable[[], None]]:
        """Picks the next queue and its wait; the pull counts as polling until ``release()``."""
        with self._lock:
            route = self._pick()
            wait = self._wait
            spare = False
            n = len(self.routes)
            if n > 1 and wait > SHARED_WAIT_SECONDS:
                if n >= self._concurrency - self.busy:
                    # No idle slot is left over to cover a queue whose poller takes a delivery.
                    wait = SHARED_WAIT_SECONDS
                elif self._polling[route.queue] > 0 and self._spares < n:
                    wait, spare = SHARED_WAIT_SECONDS, True
                    self._spares += 1
            self._polling[route.queue] += 1
        released = [False]

        def release() -> None:
            with self._lock:
                if released[0]:
                    return
                released[0] = True
                self._polling[route.queue] -= 1
                if spare:
                    self._spares -= 1

        return route, wait, release

    def pick_next(self) -> Route:
        """The queue a result's pull asks for (decision 0100); it never waits, so it is not polling."""
        with self._lock:
            return self._pick()

    def add_busy(self, n: int) -> None:
        with self._lock:
            self.busy += n

    def _pick(self) -> Route:
        n = len(self.routes)
        if n == 1:
            return self.routes[0]
        for k in range(n):
            i = (self._next + k) % n
            route = self.routes[i]
            if self._polling[route.queue] == 0:
                self._next = (i + 1) % n
                return route
        route = self.routes[self._next]
        self._next = (self._next + 1) % n
        return route
