"""The worker session: bootstrap (retried at start), a new bootstrap when a call answers 401 (the
workerId stays the same), the heartbeat, and the shutdown announcement."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Optional, TypeVar

from ._background import Background, Timer, backoff
from ._client import WorkerClient
from .errors import is_retryable, is_status

log = logging.getLogger("po_worker")
T = TypeVar("T")


class Session:
    def __init__(self, client: WorkerClient, request: Dict[str, Any]) -> None:
        self.client = client
        self.request = request
        self.info: Optional[Dict[str, Any]] = None
        self._lock = threading.Lock()
        self._heartbeat: Optional[Timer] = None
        self._heartbeat_failing = False

    @property
    def worker_id(self) -> str:
        return self.info["workerId"] if self.info else ""

    @property
    def token(self) -> str:
        return self.info["sessionToken"] if self.info else ""

    def bootstrap(self, attempts: int, base: float, maximum: float, stopped: threading.Event) -> Dict[str, Any]:
        attempt = 0
        while True:
            attempt += 1
            try:
                self.info = self.client.bootstrap(self.request)
                return self.info
            except Exception as err:
                if not is_retryable(err) or attempt >= attempts or stopped.is_set():
                    raise
                delay = backoff(attempt - 1, base, maximum)
                log.warning("bootstrap failed; retrying in %.1f s: %s", delay, err)
                if stopped.wait(delay):
                    raise

    def refresh(self, stale: str) -> None:
        """Bootstraps again unless another thread already replaced ``stale``."""
        with self._lock:
            if self.info is not None and self.info["sessionToken"] != stale:
                return
            log.info("worker session rejected (401); bootstrapping again")
            self.info = self.client.bootstrap(self.request)

    def call(self, fn: Callable[[str, str], T]) -> T:
        """Runs a session call; on 401 bootstraps again once and repeats it with the new token."""
        info = self.info or {}
        token = info.get("sessionToken", "")
        try:
            return fn(token, info.get("workerId", ""))
        except Exception as err:
            if not is_status(err, 401):
                raise
        self.refresh(token)
        return fn(self.token, self.worker_id)

    def start_heartbeat(self, bg: Background, interval: Optional[float], counters: Callable[[], Dict[str, int]]) -> None:
        period = interval or max(1, int((self.info or {}).get("heartbeatIntervalSeconds") or 30))

        def beat() -> None:
            try:
                self.call(lambda token, wid: self.client.heartbeat(token, dict(counters(), workerId=wid)))
                if self._heartbeat_failing:
                    log.info("heartbeats are being accepted again")
                self._heartbeat_failing = False
            except Exception as err:
                if not self._heartbeat_failing:
                    log.warning("heartbeat failed: %s", err)
                self._heartbeat_failing = True
            schedule()

        def schedule() -> None:
            if self._heartbeat is not None and not self._heartbeat.cancelled:
                self._heartbeat = bg.call_later(period, lambda: bg.submit(beat))

        self._heartbeat = Timer(time.monotonic(), lambda: None)
        schedule()

    def stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()

    def shutdown(self, reason: str) -> None:
        if self.info is not None:
            self.call(lambda token, wid: self.client.shutdown(token, {"workerId": wid, "reason": reason}))
