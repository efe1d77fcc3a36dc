"""Lifecycle events (POST /workers/events), batched and sent in the background. Best effort:
push() never blocks or raises, and a full buffer drops its oldest events. An event is kept as a
tuple and turned into JSON only when it is sent, off the stage's path."""
from __future__ import annotations

import collections
import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from ._background import Background, Timer
from .errors import ApiError, ProtocolError

log = logging.getLogger("po_worker")

MAX_BATCH = 100
MAX_MESSAGE = 4000
_Event = Tuple[str, float, Optional[int], Optional[int], Optional[str], Optional[Dict[str, Any]]]


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class EventBatcher:
    def __init__(self, send: Callable[[List[Dict[str, Any]]], None], enabled: bool, interval: float, max_buffered: int = 1000) -> None:
        self._send = send
        self.enabled = enabled
        self._interval = interval
        self._buffer: Deque[_Event] = collections.deque(maxlen=max_buffered)
        self._flush_lock = threading.Lock()
        self._timer: Optional[Timer] = None
        self._bg: Optional[Background] = None
        self._failing = False

    def start(self, bg: Background) -> None:
        if not self.enabled:
            return
        self._bg = bg

        def tick() -> None:
            if self._bg is not None:
                bg.submit(self.flush)
                self._timer = bg.call_later(self._interval, tick)

        self._timer = bg.call_later(self._interval, tick)

    def push(
        self,
        kind: str,
        stage_id: Optional[int] = None,
        pipeline_id: Optional[int] = None,
        message: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
    ) -> None:
        if self.enabled:
            self._buffer.append((kind, time.time(), stage_id, pipeline_id, message, data))

    @staticmethod
    def _wire(e: _Event) -> Dict[str, Any]:
        kind, at, stage_id, pipeline_id, message, data = e
        out: Dict[str, Any] = {"kind": kind, "at": iso(at)}
        if stage_id is not None:
            out["stageId"] = stage_id
        if pipeline_id is not None:
            out["pipelineId"] = pipeline_id
        if message is not None:
            out["message"] = message[:MAX_MESSAGE]
        if data is not None:
            out["data"] = data
        return out

    def flush(self) -> None:
        """Sends what is buffered, in batches, until done or the server cannot be reached."""
        if not self._flush_lock.acquire(blocking=False):
            return
        try:
            while self._buffer:
                batch: List[_Event] = []
                while self._buffer and len(batch) < MAX_BATCH:
                    batch.append(self._buffer.popleft())
                try:
                    self._send([self._wire(e) for e in batch])
                    if self._failing:
                        log.info("lifecycle events are being delivered again")
                    self._failing = False
                except (ApiError, ProtocolError) as err:
                    if isinstance(err, ProtocolError) or err.status == 400:
                        log.warning("the server rejected %d lifecycle events; dropping them: %s", len(batch), err)
                        continue
                    self._requeue(batch, err)
                    return
                except Exception as err:
                    self._requeue(batch, err)
                    return
        finally:
            self._flush_lock.release()

    def _requeue(self, batch: List[_Event], err: BaseException) -> None:
        self._buffer.extendleft(reversed(batch))
        if not self._failing:
            log.warning("lifecycle events could not be sent; will retry: %s", err)
        self._failing = True

    def close(self) -> None:
        """Stops the timer and makes one last attempt to send."""
        self._bg = None
        if self._timer is not None:
            self._timer.cancel()
        if self.enabled:
            self.flush()
