"""Turns what a handler returned or raised into the result body, within the server's limits,
encoded once: the same bytes are re-sent after an unknown outcome."""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from ._http import encode
from .context import MAX_LOGS, Approval, StageContext, _now
from .errors import Cancelled, StageError, StageTimeout, WorkerStopping

RESULT_BYTES = 262_144
REQUEST_BYTES = 327_680
ERROR_CODE_CHARS = 200
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

# (isSuccess, isWaitingForApproval, result, errorCode, retryable, extra log lines)
Outcome = Tuple[bool, bool, Optional[str], Optional[str], Optional[bool], List[Dict[str, str]]]


def utf8_len(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def failure(code: str, message: str, retryable: Optional[bool] = None) -> Outcome:
    line = {"message": f"{code}: {message}", "logLevel": "Error", "created": _now()}
    return (False, False, None, code, retryable, [line])


def clean_code(code: str) -> str:
    cleaned = _CONTROL.sub("_", code)[:ERROR_CODE_CHARS]
    return cleaned if cleaned.strip() else "HANDLER_ERROR"


def from_return(value: Any) -> Outcome:
    approval = isinstance(value, Approval)
    if approval:
        value = value.result
    if value is None:
        result = None
    elif isinstance(value, str):
        result = value
    else:
        try:
            result = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as err:
            return failure("RESULT_NOT_SERIALIZABLE", f"the handler's return value: {err}", False)
    if result is not None and utf8_len(result) > RESULT_BYTES:
        n = utf8_len(result)
        return failure("RESULT_TOO_LARGE", f"the result has {n} bytes; at most {RESULT_BYTES} are allowed", False)
    return (True, approval, result, None, None, [])


def from_exception(err: BaseException, cancelled: Optional[Cancelled]) -> Outcome:
    message = str(err)[:4000] or type(err).__name__
    if isinstance(err, StageError):
        return failure(clean_code(err.code), message, err.retryable)
    reason = err if isinstance(err, Cancelled) else cancelled
    if isinstance(reason, StageTimeout):
        return failure("TIMEOUT", message)
    if isinstance(reason, WorkerStopping):
        return failure("WORKER_STOPPING", message, True)
    code = getattr(err, "code", None)
    retryable = getattr(err, "retryable", None)
    return failure(
        clean_code(code) if isinstance(code, str) else "HANDLER_ERROR",
        message,
        retryable if isinstance(retryable, bool) else None,
    )


def _logs(ctx: StageContext, extra: List[Dict[str, str]]) -> List[Dict[str, str]]:
    own, dropped = ctx.logs, ctx.dropped_logs
    room = MAX_LOGS - len(extra)
    if dropped > 0 or len(own) > room:
        keep = min(len(own), room - 1)  # one line for the marker
        dropped += len(own) - keep
        own = own[:keep]
    if dropped:
        marker = {"message": f"{dropped} more log lines were dropped (at most {MAX_LOGS} per result)", "logLevel": "Warning", "created": _now()}
        return own + [marker] + extra
    return own + extra if extra else own


def result_body(m: Dict[str, Any], attempt: int, outcome: Outcome, ctx: StageContext, extra: Dict[str, Any]) -> bytes:
    """The encoded body; log lines are cut (then dropped) until it fits the request limit."""
    ok, approval, result, code, retryable, extra_logs = outcome
    body: Dict[str, Any] = {
        "stageId": m["stageId"],
        "executionId": m["executionId"],
        "attempt": attempt,
        "pipelineId": m["pipelineId"],
        "isSuccess": ok,
        "isWaitingForApproval": approval,
        "logs": _logs(ctx, extra_logs),
        "contextItems": list(ctx.context_updates.values()),
        "appendedStages": ctx.appended_stages,
    }
    if result is not None:
        body["result"] = result
    if code is not None:
        body["errorCode"] = code
    if retryable is not None:
        body["retryable"] = retryable
    body.update(extra)
    data = encode(body)
    if len(data) <= REQUEST_BYTES:
        return data
    body["logs"] = [dict(l, message=l["message"][:1000]) for l in body["logs"]]
    data = encode(body)
    if len(data) <= REQUEST_BYTES:
        return data
    # Only the failure line (if any) stays: the handler's own lines go first.
    body["logs"] = body["logs"][len(body["logs"]) - len(extra_logs):]
    data = encode(body)
    if len(data) <= REQUEST_BYTES:
        return data
    _, _, _, code, _, lines = failure("RESULT_TOO_LARGE", f"the result body exceeds {REQUEST_BYTES} bytes even without logs", False)
    small = {k: body[k] for k in ("stageId", "executionId", "attempt", "pipelineId")}
    small.update(isSuccess=False, isWaitingForApproval=False, errorCode=code, retryable=False, logs=lines, contextItems=[], appendedStages=[])
    small.update(extra)
    return encode(small)
