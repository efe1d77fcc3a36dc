"""The Python SDK's conformance worker: the contract is e2e/conformance/README.md.

``python3 libs/worker-sdk-python/conformance/worker.py``; configured by PO_* environment variables;
every observation is one JSON line appended (one write) to PO_CONFORMANCE_LOG."""
import json
import logging
import os
import socket
import sys
import threading
from typing import Any, Dict

try:
    import po_worker
except ImportError:  # not installed: use the package of this checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import po_worker

from po_worker import LeaseLost, StageContext, StageError

_log_lock = threading.Lock()
_log_fd = -1


def record(event: Dict[str, Any]) -> None:
    line = (json.dumps(event, separators=(",", ":")) + "\n").encode("utf-8")
    with _log_lock:
        os.write(_log_fd, line)


def ran(ctx: StageContext, name: str) -> None:
    s = ctx.stage
    record({"event": "ran", "handler": name, "stageId": s.stage_id, "executionId": s.execution_id, "attempt": s.attempt})


def conf_echo(ctx: StageContext) -> str:
    ran(ctx, "conf-echo")
    return ctx.input


def conf_fail(ctx: StageContext) -> None:
    ran(ctx, "conf-fail")
    spec = ctx.json()
    retryable = spec.get("retryable")
    raise StageError(spec["code"], spec.get("message", ""), retryable=retryable if isinstance(retryable, bool) else None)


def conf_flaky(ctx: StageContext) -> str:
    ran(ctx, "conf-flaky")
    attempt = ctx.stage.attempt
    if attempt < int(ctx.json()["succeedOnAttempt"]):
        raise StageError("FLAKY", f"attempt {attempt}", retryable=True)
    return f"attempt {attempt}"


def conf_approval(ctx: StageContext) -> po_worker.Approval:
    ran(ctx, "conf-approval")
    return ctx.await_approval(ctx.input)


def conf_hold(ctx: StageContext) -> str:
    ran(ctx, "conf-hold")
    seconds = float(ctx.json()["seconds"])
    if ctx.cancelled.wait(seconds):
        reason = ctx.cancelled.reason
        record({
            "event": "cancelled",
            "stageId": ctx.stage.stage_id,
            "executionId": ctx.stage.execution_id,
            "code": reason.code if reason is not None else "",
            "reason": reason.reason if isinstance(reason, LeaseLost) else "",
        })
        ctx.check_cancelled()  # the SDK's idiom: raise the Cancelled reason
    return "held"


def conf_context(ctx: StageContext) -> str:
    ran(ctx, "conf-context")
    spec = ctx.json()
    ctx.set_context(spec["key"], spec["value"], sensitive=bool(spec.get("sensitive", False)))
    ctx.log(f"set {spec['key']}")
    return "ok"


HANDLERS = {
    "conf-echo": conf_echo,
    "conf-fail": conf_fail,
    "conf-flaky": conf_flaky,
    "conf-approval": conf_approval,
    "conf-hold": conf_hold,
    "conf-context": conf_context,
}


def main() -> int:
    global _log_fd
    env = os.environ
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    path = env.get("PO_CONFORMANCE_LOG")
    if not path:
        print("PO_CONFORMANCE_LOG is required", file=sys.stderr)
        return 2
    _log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    names = [n.strip() for n in (env.get("PO_HANDLERS") or "").split(",") if n.strip()] or list(HANDLERS)
    unknown = [n for n in names if n not in HANDLERS]
    if unknown:
        print(f"PO_HANDLERS: unknown handler(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    options = {}
    if env.get("PO_LEASE_RENEW_INTERVAL_MS"):
        options["lease_renew_interval"] = int(env["PO_LEASE_RENEW_INTERVAL_MS"]) / 1000
    if env.get("PO_DRAIN_TIMEOUT_MS"):
        options["drain_timeout"] = int(env["PO_DRAIN_TIMEOUT_MS"]) / 1000
    base_url = env.get("PO_BASE_URL") or "http://127.0.0.1:8080"
    worker = po_worker.Worker(
        base_url=base_url,
        worker_base_url=env.get("PO_WORKER_BASE_URL") or base_url,
        api_key=env.get("PO_API_KEY", ""),
        instance_id=env.get("PO_INSTANCE_ID") or f"{socket.gethostname()}-{os.getpid()}",
        worker_name="conformance-worker-python",
        concurrency=int(env.get("PO_CONCURRENCY") or 4),
        handlers={n: HANDLERS[n] for n in names},
        **options,
    )
    worker.run(on_ready=lambda: record({"event": "ready"}))
    record({"event": "stopped"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
