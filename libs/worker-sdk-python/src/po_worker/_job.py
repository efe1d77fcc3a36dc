"""One delivery, lease to ack, run on its slot's thread: take the lease (refused → ack without
running), run the handler while the lease is renewed in the background, post the result (the
same bytes again after an unknown outcome; the handler never runs twice), and ack only after the
202. A lost lease cancels the handler and withholds its result; a handler that ignores that for
``abort_grace`` seconds loses its slot to a fresh thread (decision 0118)."""
from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

from ._background import backoff
from ._client import delivery_from, lease_from
from ._lease import LeaseKeeper
from ._outcome import Outcome, from_exception, from_return, result_body
from .context import Cancellation, StageContext
from .errors import ApiError, Cancelled, LeaseLost, MalformedDelivery, StageTimeout, is_retryable, is_status

if TYPE_CHECKING:
    from .worker import Worker

log = logging.getLogger("po_worker")
Delivered = Tuple[Dict[str, Any], float]
#: What run() returns when the handler lost its slot: the slot's thread is replaced and ends.
ABANDONED = object()


class Running:
    """A handler in progress, as stop() and the lease keeper see it."""

    __slots__ = ("cancel", "lock", "finished", "abandoned")

    def __init__(self) -> None:
        self.cancel = Cancellation()
        self.lock = threading.Lock()
        self.finished = False
        self.abandoned = False


def _call_async(coro: Any, ctx: StageContext) -> Any:
    """Runs a coroutine handler on its own event loop; cancellation cancels its task."""

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(coro)
        def cancel_task(_reason: Cancelled) -> None:
            loop.call_soon_threadsafe(task.cancel)

        ctx.cancelled.add_callback(cancel_task)
        try:
            return await task
        except asyncio.CancelledError:
            if ctx.cancelled.reason is not None:
                raise ctx.cancelled.reason from None
            raise

    return asyncio.run(main())


class JobRunner:
    def __init__(self, worker: "Worker") -> None:
        self.w = worker

    def run(self, delivered: Delivered, handler: str, fn: Callable[[StageContext], Any], next_queue: Optional[str], slot: int) -> Any:
        delivery, sent_at = delivered
        m = delivery["payload"]
        label = f"stage {m['stageId']} execution {m['executionId']}"
        lease = lease_from(delivery.get("lease"))
        if lease is None:
            got = self._acquire(delivery, label)
            if isinstance(got, str):
                self.w.ack_later(delivery["token"], got == "unavailable")
                return None
            lease, sent_at = got
        if not lease["acquired"]:
            log.info("lease refused (%s); acknowledging without running (%s)", lease.get("reason"), label)
            self.w.ack_later(delivery["token"], False)
            return None
        attempt = lease.get("attempt")
        if type(attempt) is not int:
            attempt = m["previousAttempts"] + 1
        self.w.count("inFlight")
        try:
            return self._execute(delivery, sent_at, handler, fn, attempt, label, next_queue, slot)
        finally:
            self.w.count("inFlight", -1)

    def _acquire(self, delivery: Dict[str, Any], label: str) -> Any:
        w, m = self.w, delivery["payload"]
        body = {"executionId": m["executionId"]}
        tp = delivery["headers"].get("traceparent")
        for i in range(3):
            sent = time.monotonic()
            try:
                lease = w.session.call(lambda token, wid: w.client.lease("acquire", token, m["stageId"], dict(body, workerId=wid), tp))
                return lease, sent
            except Exception as err:
                retryable = is_retryable(err)
                if retryable and i < 2 and not w.abandon.wait(backoff(i, w.options.retry_base_delay, w.options.retry_max_delay)):
                    continue
                if retryable:
                    log.warning("lease acquisition failed; returning the delivery (%s): %s", label, err)
                    return "unavailable"
                log.warning("lease acquisition rejected; dropping the delivery (%s): %s", label, err)
                w.events.push("error", m["stageId"], m["pipelineId"], f"lease acquisition rejected: {err}")
                return "rejected"
        return "unavailable"

    def _execute(self, delivery: Dict[str, Any], lease_sent_at: float, handler: str, fn: Callable[[StageContext], Any], attempt: int, label: str, next_queue: Optional[str], slot: int) -> Any:
        w, o, bg = self.w, self.w.options, self.w.bg
        assert bg is not None  # set by start()
        m = delivery["payload"]
        stage_id, pipeline_id = m["stageId"], m["pipelineId"]
        tp = delivery["headers"].get("traceparent")
        job = Running()
        cancel = job.cancel
        renew_body = {"executionId": m["executionId"]}

        def on_lost(err: LeaseLost) -> None:
            cancel.set(err)
            bg.call_later(o.abort_grace, lambda: self._abandon(job, delivery["token"], slot, label))

        keeper = LeaseKeeper(
            bg,
            lambda: w.session.call(lambda token, wid: w.client.lease("renew", token, stage_id, dict(renew_body, workerId=wid), tp)),
            on_lost,
            o.lease_renew_interval,
            o.lease_duration,
            lease_sent_at,
            label,
        )
        timeout = m["timeOutSeconds"]
        timer = bg.call_later(timeout, lambda: cancel.set(StageTimeout(timeout))) if timeout else None
        keeper.start()
        w.running[slot] = job
        if w.stopping_cancel is not None:
            cancel.set(w.stopping_cancel)
        w.events.push("stage_started", stage_id, pipeline_id, None, {"executionId": m["executionId"], "attempt": attempt, "handler": handler})
        started = time.monotonic()
        ctx = StageContext(delivery, handler, attempt, cancel)
        outcome: Outcome
        try:
            value = fn(ctx)
            if inspect.iscoroutine(value):
                value = _call_async(value, ctx)
            outcome = from_return(value)
        except BaseException as err:  # even SystemExit: the slot's thread must live on
            outcome = from_exception(err, cancel.reason)
        with job.lock:
            job.finished = True
            abandoned = job.abandoned
        if w.running.get(slot) is job:
            del w.running[slot]
        if timer is not None:
            timer.cancel()
        if abandoned:
            log.warning("a handler that ignored its lost lease returned; its result is dropped (%s)", label)
            return ABANDONED
        duration_ms = int((time.monotonic() - started) * 1000)

        status, next_delivery, acked = "lease_lost", None, False
        if keeper.lost is None:
            extra: Dict[str, Any] = {"ackToken": delivery["token"]}
            if next_queue is not None:
                extra["next"] = {"queue": next_queue, "lease": {"workerId": w.session.worker_id}}
            body = result_body(m, attempt, outcome, ctx, extra)
            status, next_delivery, acked = self._post(body, stage_id, next_queue, keeper, tp, label)
        keeper.stop()

        data = {"executionId": m["executionId"], "attempt": attempt, "handler": handler, "durationMs": duration_ms}
        if status == "accepted" and outcome[0]:
            w.count("processed")
            data["waitingForApproval"] = outcome[1]
            w.events.push("stage_completed", stage_id, pipeline_id, None, data)
        elif status == "accepted":
            w.count("failed")
            data["errorCode"] = outcome[3]
            w.events.push("stage_failed", stage_id, pipeline_id, None, data)
            log.warning("stage failed with %s (%s)", outcome[3], label)
        else:
            w.count("failed")
            if status == "lease_lost":
                reason = keeper.lost or "refused"
                data["reason"] = reason
                w.events.push("lease_lost", stage_id, pipeline_id, f"lease lost: {reason}", data)
            else:
                w.events.push("error", stage_id, pipeline_id, f"result {status}", data)
        # Acked by the result itself when the gateway knew ackToken; otherwise only now, after the
        # 202 or once no result will ever be sent. The slot pulls again while the ack travels.
        if not acked:
            w.ack_later(delivery["token"], False)
        return next_delivery

    def _abandon(self, job: Running, token: str, slot: int, label: str) -> None:
        with job.lock:
            if job.finished:
                return
            job.abandoned = True
        log.warning("handler ignored its lost lease; freeing its slot and dropping its result (%s)", label)
        self.w.ack_later(token, False)
        self.w.replace_slot(slot)

    def _post(self, body: bytes, stage_id: int, next_queue: Optional[str], keeper: LeaseKeeper, tp: Optional[str], label: str) -> Tuple[str, Optional[Delivered], bool]:
        """Sends the same bytes until 202, a refusal, a lost lease or the deadline; the keeper
        renews meanwhile, so an outage longer than the lease (503) does not lose finished work."""
        w, o = self.w, self.w.options
        deadline = time.monotonic() + o.result_retry_timeout
        i = 0
        while True:
            if keeper.lost is not None:
                return "lease_lost", None, False
            sent = time.monotonic()
            try:
                r = w.session.call(lambda token, _wid: w.client.submit_result(token, stage_id, body, tp))
            except Exception as err:
                if not is_retryable(err):
                    log.error("result rejected by the server (%s): %s", label, err)
                    return "rejected", None, False
                after = err.retry_after if isinstance(err, ApiError) else None
                delay = after if after is not None else backoff(i, o.retry_base_delay, o.retry_max_delay)
                if time.monotonic() + delay > deadline:
                    log.error("result could not be delivered; giving up (%s): %s", label, err)
                    return "undelivered", None, False
                log.warning("result outcome unknown; sending the same result again in %.1f s (%s): %s", delay, label, err)
                i += 1
                end = time.monotonic() + delay
                while keeper.lost is None:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    if w.abandon.wait(min(left, 0.25)):
                        log.error("worker stopped before the result was delivered (%s)", label)
                        return "undelivered", None, False
                continue
            acked = r.get("acked")
            if not isinstance(acked, bool):
                return "accepted", None, False  # an older gateway: ack with POST /jobs/ack
            nxt = r.get("next")
            if next_queue is None or not isinstance(nxt, dict):
                return "accepted", None, True
            try:
                return "accepted", (delivery_from(nxt, "result next"), sent), True
            except MalformedDelivery as err:
                w.ack_later(err.token, False)
            except Exception:
                pass
            return "accepted", None, True

    def ack(self, token: str, requeue: bool) -> None:
        """Acks on the gateway that served the pull (same base URL, sticky routing)."""
        w = self.w
        for i in range(3):
            try:
                w.client.ack(token, requeue)
                return
            except Exception as err:
                if is_status(err, 404):
                    log.debug("delivery token no longer held by the gateway")
                    return
                if not is_retryable(err) or i == 2:
                    log.warning("ack failed; the delivery returns after the visibility timeout: %s", err)
                    return
                if w.abandon.wait(backoff(i, w.options.retry_base_delay, w.options.retry_max_delay)):
                    return
