"""The worker's background machinery, shared by every stage so that no stage starts a thread: one
timer thread (lease renewals and lapses, stage timeouts, heartbeats, event flushes) and a small
pool for the calls those timers make."""
from __future__ import annotations

import heapq
import itertools
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Tuple

log = logging.getLogger("po_worker")


class Timer:
    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], Any]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    """Runs callbacks at monotonic times on one thread; callbacks must return quickly.

    Cancelled timers stay in the heap until they come up: cancelling costs nothing, and a stage
    that ends in milliseconds never wakes the thread for the renewal it did not need.
    """

    def __init__(self) -> None:
        self._heap: List[Tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="po-worker-timers", daemon=True)
        self._thread.start()

    def call_later(self, delay: float, fn: Callable[[], Any]) -> Timer:
        timer = Timer(time.monotonic() + max(0.0, delay), fn)
        with self._cond:
            earliest = not self._heap or timer.when < self._heap[0][0]
            heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
            if earliest:
                self._cond.notify()
        return timer

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    heap = self._heap
                    while heap and heap[0][2].cancelled:
                        heapq.heappop(heap)
                    if heap:
                        delay = heap[0][0] - time.monotonic()
                        if delay <= 0:
                            timer = heapq.heappop(heap)[2]
                            break
                        self._cond.wait(delay)
                    else:
                        self._cond.wait()
            try:
                timer.fn()
            except Exception:  # a broken callback must not stop every other timer
                log.exception("timer callback failed")


class Background:
    """The timer thread plus a small pool for the calls the timers (and acks) make."""

    def __init__(self, workers: int = 4) -> None:
        self.scheduler = Scheduler()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="po-worker-bg")

    def call_later(self, delay: float, fn: Callable[[], Any]) -> Timer:
        return self.scheduler.call_later(delay, fn)

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        def guarded() -> None:
            try:
                fn(*args)
            except Exception:
                log.exception("background call failed")

        try:
            self.pool.submit(guarded)
        except RuntimeError:  # the pool is shut down: the worker is gone, nothing to do
            pass

    def close(self) -> None:
        self.scheduler.close()
        self.pool.shutdown(wait=False)


def backoff(attempt: int, base: float, maximum: float) -> float:
    """Exponential backoff with jitter: about ``base`` at attempt 0, doubling, capped (50-100 %)."""
    exp = float(min(maximum, base * (2 ** min(attempt, 30))))
    return exp / 2 + random.random() * exp / 2
