"""What a handler gets: the stage, its input and pipeline context, a cancellation token, and the
buffers (logs, context changes, appended stages) that travel with its result."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .errors import Cancelled, StageError

MAX_LOGS = 100
MAX_CONTEXT_ITEMS = 64
MAX_APPENDED_STAGES = 100
MAX_KEY_CHARS = 300
MAX_LEVEL_CHARS = 32


class Cancellation:
    """Tells a handler to stop; set at most once, with the reason as a :class:`Cancelled`.

    Use it like a ``threading.Event``: ``is_set()``, ``wait(timeout)``; ``reason`` is the
    exception, ``raise_if_set()`` raises it.
    """

    __slots__ = ("_event", "reason", "_callbacks", "_lock")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: Optional[Cancelled] = None
        self._callbacks: List[Callable[[Cancelled], None]] = []
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self._event.is_set()

    __bool__ = is_set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until cancelled (True) or ``timeout`` seconds pass (False)."""
        return self._event.wait(timeout)

    def raise_if_set(self) -> None:
        if self.reason is not None:
            raise self.reason

    def add_callback(self, fn: Callable[[Cancelled], None]) -> None:
        """Calls ``fn(reason)`` when cancelled (at once if already); it runs on the SDK's thread."""
        with self._lock:
            if self.reason is None:
                self._callbacks.append(fn)
                return
        fn(self.reason)

    def set(self, reason: Cancelled) -> bool:
        with self._lock:
            if self.reason is not None:
                return False
            self.reason = reason
            callbacks, self._callbacks = self._callbacks, []
        self._event.set()
        for fn in callbacks:
            try:
                fn(reason)
            except Exception:
                pass
        return True


@dataclass(frozen=True)
class StageInfo:
    application_id: int
    pipeline_id: int
    stage_id: int
    stage_name: str
    #: The handler name (stageHandlerName).
    handler: str
    #: Opaque id of this dispatch; redeliveries of one dispatch repeat it.
    execution_id: str
    #: 1-based attempt the lease granted.
    attempt: int
    previous_attempts: int
    trace_id: str
    span_id: str
    options: Mapping[str, Any]
    time_out_seconds: Optional[float]
    dispatched_at: str
    queue: str
    message_id: str


class Approval:
    """Returned by ``ctx.await_approval(result)``: parks the stage in WaitingForApproval."""

    __slots__ = ("result",)

    def __init__(self, result: Any = None) -> None:
        self.result = result


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def _check_key(key: Any, method: str) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise TypeError(f"{method}: key must be a string of 1..{MAX_KEY_CHARS} characters")
    return key


class StageContext:
    """The handler's view of one stage execution."""

    def __init__(self, delivery: Dict[str, Any], handler: str, attempt: int, cancelled: Cancellation) -> None:
        m = delivery["payload"]
        self._payload = m
        #: The stage input string ("" when none).
        self.input: str = m["input"]
        self.headers: Mapping[str, Any] = delivery["headers"]
        self.cancelled = cancelled
        self._handler = handler
        self._attempt = attempt
        self._delivery = delivery
        self._info: Optional[StageInfo] = None
        self._context: Optional[Dict[str, str]] = None
        self.logs: List[Dict[str, str]] = []
        self.dropped_logs = 0
        self.context_updates: Dict[str, Dict[str, Any]] = {}
        self.appended_stages: List[Dict[str, Any]] = []

    @property
    def stage(self) -> StageInfo:
        # Built on first use: most handlers never look, and the stage path stays cheap.
        if self._info is None:
            m, d = self._payload, self._delivery
            self._info = StageInfo(
                application_id=m.get("applicationId", 0),
                pipeline_id=m["pipelineId"],
                stage_id=m["stageId"],
                stage_name=m.get("stageName", ""),
                handler=self._handler,
                execution_id=m["executionId"],
                attempt=self._attempt,
                previous_attempts=m["previousAttempts"],
                trace_id=m.get("traceId", ""),
                span_id=m.get("spanId", ""),
                options=m.get("options") or {},
                time_out_seconds=m["timeOutSeconds"],
                dispatched_at=m.get("dispatchedAt", ""),
                queue=d.get("queue", ""),
                message_id=d.get("messageId", ""),
            )
        return self._info

    @property
    def context(self) -> Dict[str, str]:
        """Pipeline context (key → value, sensitive values included), with your own changes."""
        if self._context is None:
            self._context = {
                i["key"]: i.get("value", "")
                for i in self._payload["pipelineContextItems"]
                if isinstance(i, dict) and not i.get("isDeleted")
            }
        return self._context

    @property
    def context_items(self) -> Sequence[Mapping[str, Any]]:
        """The context items as delivered, with valueType and isSensitive."""
        return tuple(self._payload["pipelineContextItems"])

    @property
    def traceparent(self) -> Optional[str]:
        tp = self.headers.get("traceparent")
        return tp if isinstance(tp, str) else None

    def json(self, *default: Any) -> Any:
        """The input parsed as JSON; invalid (or empty without a default) fails with VALIDATION_ERROR."""
        if default and not self.input.strip():
            return default[0]
        try:
            return json.loads(self.input)
        except ValueError:
            why = "the stage input is empty" if not self.input.strip() else "the stage input is not valid JSON"
            raise StageError("VALIDATION_ERROR", why, retryable=False) from None

    def check_cancelled(self) -> None:
        """Raises the :class:`Cancelled` reason once the handler has been told to stop."""
        self.cancelled.raise_if_set()

    def sleep(self, seconds: float) -> None:
        """Sleeps, but raises the :class:`Cancelled` reason as soon as the handler is told to stop."""
        if self.cancelled.wait(seconds):
            self.cancelled.raise_if_set()

    def log(self, message: Any, level: str = "Information") -> None:
        """Buffers a stage log line sent with the result; past 100 lines they are only counted."""
        if len(self.logs) >= MAX_LOGS:
            self.dropped_logs += 1
            return
        if not isinstance(level, str) or not 1 <= len(level) <= MAX_LEVEL_CHARS:
            level = "Information"
        self.logs.append({"message": str(message), "logLevel": level, "created": _now()})

    def _put(self, update: Dict[str, Any]) -> None:
        key = update["key"]
        if key not in self.context_updates and len(self.context_updates) >= MAX_CONTEXT_ITEMS:
            raise OverflowError(f"at most {MAX_CONTEXT_ITEMS} context changes per result")
        self.context_updates.pop(key, None)  # the latest change goes last
        self.context_updates[key] = update

    def set_context(self, key: str, value: Any, *, sensitive: bool = False, value_type: Optional[str] = None) -> None:
        """Upserts a pipeline context key when the result is applied; non-strings become JSON."""
        _check_key(key, "set_context")
        if value is None:
            raise TypeError("set_context: value is None; use delete_context")
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        update: Dict[str, Any] = {"key": key, "value": text, "isSensitive": bool(sensitive)}
        if value_type is not None:
            update["valueType"] = value_type
        self._put(update)
        self.context[key] = text

    def delete_context(self, key: str) -> None:
        _check_key(key, "delete_context")
        self._put({"key": key, "isDeleted": True})
        self.context.pop(key, None)

    def append_stages(self, stages: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> None:
        """Appends stages (``stageName``, ``stageHandlerName``, …) to the end of the pipeline."""
        items = [stages] if isinstance(stages, Mapping) else list(stages)
        if len(self.appended_stages) + len(items) > MAX_APPENDED_STAGES:
            raise OverflowError(f"at most {MAX_APPENDED_STAGES} appended stages per result")
        for i, s in enumerate(items):
            if not isinstance(s, Mapping) or not s.get("stageName") or not s.get("stageHandlerName"):
                raise TypeError(f"append_stages: item {i} needs a stageName and a stageHandlerName")
        self.appended_stages.extend(dict(s) for s in items)

    def await_approval(self, result: Any = None) -> Approval:
        """``return ctx.await_approval(output)`` parks the stage until it is resumed."""
        return Approval(result)
