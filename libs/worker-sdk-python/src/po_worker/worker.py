"""The worker: bootstrap, one thread per handler slot (a slot pulls only while it is free and
runs its handler itself, so a stage costs no thread hand-off), heartbeat and events in the
background, drain on stop."""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, TypeVar

from ._background import Background, backoff
from ._client import WorkerClient, events_body, queue_name
from ._events import EventBatcher
from ._job import ABANDONED, JobRunner, Running
from ._rotation import Route, Rotation
from ._session import Session
from .errors import MalformedDelivery, ProtocolError, WorkerConfigError, WorkerStopping, is_status
from .options import WorkerOptions

log = logging.getLogger("po_worker")
SDK_VERSION = "0.5.0"
#: A pull answered this fast found its message waiting: the queue has a backlog, so the slot's
#: result asks for the next delivery too (decision 0100).
BACKLOG_PULL_SECONDS = 0.05
Handler = Callable[..., Any]
F = TypeVar("F", bound=Handler)


class Worker:
    """Runs stage handlers for one application.

    ``Worker(base_url=..., api_key=..., instance_id=..., concurrency=4, handlers={...})``; the
    other keyword arguments are the fields of :class:`~po_worker.WorkerOptions`.
    """

    def __init__(self, *, handlers: Optional[Mapping[str, Handler]] = None, **options: Any) -> None:
        self.options = o = WorkerOptions(**options)
        self.state = "idle"
        self._handlers: Dict[str, Handler] = {}
        for name, fn in (handlers or {}).items():
            self.add_handler(name, fn)
        self.client = WorkerClient(o.worker_base_url or o.base_url, o.api_key, o.request_timeout)
        self.session: Session = Session(self.client, {})
        self.bg: Optional[Background] = None
        self.events = EventBatcher(self._send_events, o.send_events, o.event_flush_interval)
        self.counters: Dict[str, int] = {"inFlight": 0, "processed": 0, "failed": 0}
        self.counters_lock = threading.Lock()
        #: The handler each slot runs, for stop() to cancel.
        self.running: Dict[int, Running] = {}
        self.stopping_cancel: Optional[WorkerStopping] = None
        #: Set once stop() no longer waits for deliveries: result retries and acks give up.
        self.abandon = threading.Event()
        self._runner = JobRunner(self)
        self._rotation: Optional[Rotation] = None
        self._slots: Dict[int, threading.Thread] = {}
        self._slots_lock = threading.Lock()
        self._paused_until = 0.0
        self._stop_requested = threading.Event()
        self._stop_reason = "stop() called"
        self._stop_lock = threading.Lock()
        self._stopped = threading.Event()
        self._acks = 0
        self._acks_cond = threading.Condition()

    # -- handlers ---------------------------------------------------------------------------

    def add_handler(self, name: str, fn: Handler) -> None:
        if not isinstance(name, str) or not 1 <= len(name) <= 300:
            raise WorkerConfigError([f"handler name {name!r} must be 1..300 characters"])
        if not callable(fn):
            raise WorkerConfigError([f"handler {name!r} must be callable"])
        if self.state != "idle":
            raise RuntimeError("handlers must be registered before start()")
        self._handlers[name] = fn

    def handler(self, name: Optional[str] = None) -> Callable[[F], F]:
        """Decorator: ``@worker.handler("send-email")`` (default name: the function's)."""

        def register(fn: F) -> F:
            self.add_handler(name or fn.__name__, fn)
            return fn

        return register

    @property
    def stats(self) -> Dict[str, Any]:
        return dict(self.counters, state=self.state, workerId=self.session.worker_id,
                    queues=[r.queue for r in self._rotation.routes] if self._rotation else [])

    # -- start ------------------------------------------------------------------------------

    def start(self) -> None:
        """Bootstraps and starts the slots; returns once the worker is pulling."""
        if self.state != "idle":
            raise RuntimeError(f"start() needs an idle worker; this one is {self.state}")
        if not 1 <= len(self._handlers) <= 100:
            raise WorkerConfigError(["a worker needs 1..100 handlers"])
        o = self.options
        self.state = "starting"
        request: Dict[str, Any] = {
            "instanceId": o.instance_id,
            "handlers": list(self._handlers),
            "sdkVersion": f"po-worker-sdk (python) {SDK_VERSION}",
            "hostname": socket.gethostname()[:255],
        }
        if o.worker_name is not None:
            request["workerName"] = o.worker_name
        if o.metadata is not None:
            request["metadata"] = o.metadata
        self.session.request = request
        try:
            info = self.session.bootstrap(o.startup_attempts, o.retry_base_delay, o.retry_max_delay, self._stop_requested)
            queues = info["queues"]
            if len(queues) != len(self._handlers):
                raise ProtocolError(f"bootstrap returned {len(queues)} queues for {len(self._handlers)} handlers")
        except BaseException:
            self.state = "stopped"
            self._stopped.set()
            raise
        routes = [
            Route(q if isinstance(q, str) else queue_name(info["applicationId"], h), h, fn)
            for q, (h, fn) in zip(queues, self._handlers.items())
        ]
        self._rotation = Rotation(routes, o.concurrency, o.wait_seconds)
        self.bg = Background()
        self.state = "running"
        self.events.start(self.bg)
        self.session.start_heartbeat(self.bg, o.heartbeat_interval, self._counters)
        self.events.push("started", data={"concurrency": o.concurrency, "handlers": list(self._handlers), "sdkVersion": SDK_VERSION})
        log.info("worker started: workerId %s, queues %s, concurrency %d", self.session.worker_id, [r.queue for r in routes], o.concurrency)
        with self._slots_lock:
            for slot in range(o.concurrency):
                self._spawn(slot)

    def _spawn(self, slot: int) -> None:
        t = threading.Thread(target=self._slot_loop, args=(slot,), name=f"po-worker-slot-{slot}", daemon=True)
        self._slots[slot] = t
        t.start()

    def replace_slot(self, slot: int) -> None:
        """The slot's thread is stuck in a handler that lost its lease: another takes its place."""
        with self._slots_lock:
            if self.state == "running":
                self._spawn(slot)
            else:
                self._slots.pop(slot, None)

    def _counters(self) -> Dict[str, int]:
        with self.counters_lock:
            return dict(self.counters)

    def count(self, name: str, n: int = 1) -> None:
        with self.counters_lock:
            self.counters[name] += n

    def _send_events(self, events: Any) -> None:
        self.session.call(lambda token, wid: self.client.events(token, events_body(wid, events)))

    # -- slots ------------------------------------------------------------------------------

    def _slot_loop(self, slot: int) -> None:
        rotation = self._rotation
        assert rotation is not None
        client, session = self.client, self.session
        failures = 0
        carried: Any = None
        while self.state == "running":
            if carried is not None:
                delivered, route = carried
                carried = None
                backlog = True
            else:
                paused = self._paused_until - time.monotonic()
                if paused > 0:
                    self._stop_requested.wait(paused)
                    continue
                route, wait, release = rotation.take()
                asked = time.monotonic()
                try:
                    # The gateway takes the lease with the delivery: one call fewer per stage (0098).
                    delivery = client.pull(route.queue, wait, session.worker_id)
                    failures = 0
                except Exception as err:
                    release()
                    if self.state != "running":
                        break
                    self._pull_failed(err, route, failures)
                    failures += 1
                    continue
                release()
                if delivery is None:
                    if wait == 0:
                        self._stop_requested.wait(0.5)
                    continue
                # Monotonic: a lease the pull brings is counted from when it was asked (0118).
                delivered = (delivery, asked)
                # A pull that waited for a place of its handler's limit, not for a message, also
                # found a backlog: the gateway says so (decision 0132).
                backlog = time.monotonic() - asked <= BACKLOG_PULL_SECONDS or delivery.get("backlog") is True
            if self.state != "running":
                self._runner.ack(delivered[0]["token"], True)  # stop() began: hand it back
                break
            rotation.add_busy(1)
            # With a backlog the result also pulls this slot's next delivery (decision 0100).
            next_route = rotation.pick_next() if backlog else None
            try:
                result = self._runner.run(delivered, route.handler, route.fn, next_route.queue if next_route else None, slot)
            except Exception:
                log.exception("unexpected error while running a delivery")
                result = None
            finally:
                rotation.add_busy(-1)
            if result is ABANDONED:
                return
            if result is not None and next_route is not None:
                carried = (result, next_route)
        if carried is not None:
            self._runner.ack(carried[0][0]["token"], True)

    def _pull_failed(self, err: Exception, route: Route, failures: int) -> None:
        if isinstance(err, MalformedDelivery):
            log.error("malformed delivery on %s; acknowledging it so it is not redelivered: %s", route.queue, err)
            self.ack_later(err.token, False)
            return
        if is_status(err, 429):
            # The gateway holds too many unacknowledged deliveries: every slot waits.
            delay = getattr(err, "retry_after", None) or 1.0
            self._paused_until = max(self._paused_until, time.monotonic() + delay)
            log.debug("pull answered 429; every slot waits %.1f s", delay)
            return
        delay = backoff(failures, self.options.retry_base_delay, self.options.retry_max_delay)
        log.warning("pull of %s failed; backing off %.1f s: %s", route.queue, delay, err)
        self._stop_requested.wait(delay)

    def ack_later(self, token: str, requeue: bool) -> None:
        """Acks in the background; stop() waits (bounded) for these."""
        with self._acks_cond:
            self._acks += 1

        def send() -> None:
            try:
                self._runner.ack(token, requeue)
            finally:
                with self._acks_cond:
                    self._acks -= 1
                    self._acks_cond.notify_all()

        assert self.bg is not None
        self.bg.submit(send)

    # -- stop -------------------------------------------------------------------------------

    def _join_slots(self, deadline: float) -> bool:
        while True:
            with self._slots_lock:
                threads = list(self._slots.values())
            alive = [t for t in threads if t.is_alive()]
            if not alive:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            alive[0].join(min(left, 0.1))

    def stop(self, timeout: Optional[float] = None, reason: Optional[str] = None) -> None:
        """Stops pulling, lets running handlers finish (up to ``timeout``, default
        ``drain_timeout``), then cancels them with WorkerStopping, and announces the shutdown."""
        if reason:
            self._stop_reason = reason[:1000]
        self._stop_requested.set()
        if not self._stop_lock.acquire(blocking=False):
            self._stopped.wait()
            return
        while self.state == "starting":  # bootstrap retries end on _stop_requested
            time.sleep(0.02)
        if self.state != "running":
            self.state = "stopped"
            self._stopped.set()
            return
        o, reason = self.options, self._stop_reason
        self.state = "stopping"
        self.client.http.abort_all()  # pulls in flight end; the gateway hands their messages back
        self.events.push("stopping", message=reason, data={"inFlight": self.counters["inFlight"]})
        log.info("worker stopping (%s); draining %d running handlers", reason, self.counters["inFlight"])
        drain = o.drain_timeout if timeout is None else timeout
        if not self._join_slots(time.monotonic() + drain):
            log.warning("drain timeout passed; cancelling %d running handlers", self.counters["inFlight"])
            self.stopping_cancel = WorkerStopping()
            for job in list(self.running.values()):
                job.cancel.set(self.stopping_cancel)
            if not self._join_slots(time.monotonic() + o.abort_grace):
                log.warning("handlers did not finish; shutting down without them")
        with self._acks_cond:
            self._acks_cond.wait_for(lambda: self._acks == 0, min(o.request_timeout, 5.0))
        self.abandon.set()
        self.events.push("stopped", message=reason, data=dict(self.counters))
        self.events.close()
        self.session.stop_heartbeat()
        try:
            self.session.shutdown(reason)
        except Exception as err:
            log.warning("shutdown call failed: %s", err)
        if self.bg is not None:
            self.bg.close()
        self.client.http.close()
        self.state = "stopped"
        log.info("worker stopped: %d processed, %d failed", self.counters["processed"], self.counters["failed"])
        self._stopped.set()

    def run(
        self,
        signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT),
        on_ready: Optional[Callable[[], None]] = None,
    ) -> None:
        """Starts (then calls ``on_ready``), blocks until a signal or stop() from another thread,
        then drains. A second signal exits at once. Signal handlers need the main thread."""
        previous: Dict[int, Any] = {}

        def on_signal(signum: int, _frame: Any) -> None:
            if self._stop_requested.is_set():
                log.warning("second signal; exiting without waiting")
                os._exit(128 + signum)
            log.info("signal %s received; stopping", signal.Signals(signum).name)
            self._stop_reason = f"signal {signal.Signals(signum).name}"
            self._stop_requested.set()

        if threading.current_thread() is threading.main_thread():
            for sig in signals:
                previous[sig] = signal.signal(sig, on_signal)
        try:
            self.start()
            if on_ready is not None:
                on_ready()
            # A timed wait: signal handlers run on the main thread between waits.
            while not self._stop_requested.wait(0.5):
                pass
            self.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
