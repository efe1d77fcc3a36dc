"""The worker against the fake gateway: the protocol's ordinary path and its awkward cases."""
from __future__ import annotations

import json
import logging
import threading
import time
import unittest
from typing import Any, Dict, List

from tests.fake_gateway import FakeGateway, message

from po_worker import LeaseLost, StageContext, StageError, Worker, WorkerConfigError

logging.getLogger("po_worker").setLevel(logging.CRITICAL)


class WorkerCase(unittest.TestCase):
    extensions = True

    def setUp(self) -> None:
        self.gw = FakeGateway(extensions=self.extensions)
        self.workers: List[Worker] = []

    def tearDown(self) -> None:
        for w in self.workers:
            w.stop(timeout=1)
        self.gw.close()

    def worker(self, handlers: Dict[str, Any], **options: Any) -> Worker:
        defaults: Dict[str, Any] = dict(base_url=self.gw.url, api_key="k", instance_id="i-1", concurrency=1, wait_seconds=1,
                                        retry_base_delay=0.02, retry_max_delay=0.1, abort_grace=0.2, send_events=False)
        defaults.update(options)
        w = Worker(handlers=handlers, **defaults)
        self.workers.append(w)
        w.start()
        return w

    def result(self, i: int = 0) -> Dict[str, Any]:
        return json.loads(self.gw.results[i])


class OrdinaryPath(WorkerCase):
    def test_echo_with_lease_on_pull_ack_with_result_and_next_pull(self) -> None:
        self.gw.push(*[message(i, f"in {i} é") for i in range(1, 6)])
        self.worker({"echo": lambda ctx: ctx.input})
        self.gw.wait_for(lambda: len(self.gw.results) == 5)
        self.assertEqual([self.result(i)["result"] for i in range(5)], [f"in {i} é" for i in range(1, 6)])
        self.assertTrue(all(self.result(i)["ackToken"] for i in range(5)))
        # The first pull brought the first delivery; each result brought the next (decision 0100).
        self.assertEqual(self.gw.counts.get("pull", 0) >= 1, True)
        self.assertEqual([bool(self.result(i).get("next")) for i in range(5)], [True] * 5)
        self.assertEqual(self.gw.paths("/lease/acquire"), [])
        self.assertEqual(self.gw.acks, [])
        self.assertEqual(self.result(0)["attempt"], 1)

    def test_a_pull_that_waited_asks_for_the_next_only_when_its_message_waited_for_a_place(self) -> None:
        self.worker({"echo": lambda ctx: ctx.input})
        self.gw.wait_for(lambda: self.gw.counts.get("pull", 0) >= 1)
        time.sleep(0.12)
        self.gw.push(message(1, "waited for a message"))
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertIsNone(self.result(0).get("next"))
        # The gateway says the message waited for a place of its handler's maxConcurrent (0132).
        self.gw.waited_for_place = True
        time.sleep(0.12)
        self.gw.push(message(2, "waited for a place"))
        self.gw.wait_for(lambda: len(self.gw.results) == 2)
        self.assertEqual(self.result(1)["next"]["queue"], "app_1_echo_StageNext")

    def test_context_logs_appended_stages_and_approval(self) -> None:
        def handler(ctx: StageContext) -> Any:
            ctx.set_context("k", {"a": 1}, sensitive=True)
            ctx.log("hello", "Warning")
            ctx.append_stages({"stageName": "x", "stageHandlerName": "echo"})
            return ctx.await_approval({"ok": True})

        self.gw.push(message(1))
        self.worker({"echo": handler})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        r = self.result()
        self.assertEqual(r["contextItems"], [{"key": "k", "value": '{"a":1}', "isSensitive": True}])
        self.assertEqual((r["logs"][0]["message"], r["logs"][0]["logLevel"]), ("hello", "Warning"))
        self.assertEqual(r["appendedStages"], [{"stageName": "x", "stageHandlerName": "echo"}])
        self.assertTrue(r["isWaitingForApproval"] and r["isSuccess"])
        self.assertEqual(r["result"], '{"ok":true}')

    def test_async_handler(self) -> None:
        async def handler(ctx: StageContext) -> str:
            return ctx.input.upper()

        self.gw.push(message(1, "abc"))
        self.worker({"echo": handler})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertEqual(self.result()["result"], "ABC")

    def test_invalid_options_list_every_problem(self) -> None:
        with self.assertRaises(WorkerConfigError) as caught:
            Worker(base_url="ftp://x", api_key="", instance_id="i", concurrency=0)
        self.assertEqual(len(caught.exception.problems), 3)


class UnansweredPullLease(WorkerCase):
    def test_lease_null_on_the_pull_falls_back_to_acquire(self) -> None:
        self.gw.pull_lease_null = True
        self.gw.push(message(1, "a"))
        self.worker({"echo": lambda ctx: ctx.input})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertEqual(len(self.gw.paths("/lease/acquire")), 1)
        self.assertEqual((self.result()["result"], self.gw.acks), ("a", []))


class PlainProtocol(WorkerCase):
    extensions = False

    def test_falls_back_to_lease_acquire_and_jobs_ack(self) -> None:
        self.gw.push(message(1, "a"), message(2, "b"))
        self.worker({"echo": lambda ctx: ctx.input})
        self.gw.wait_for(lambda: len(self.gw.acks) == 2)
        self.assertEqual(len(self.gw.paths("/lease/acquire")), 2)
        self.assertEqual([self.result(i)["result"] for i in range(2)], ["a", "b"])
        self.assertEqual([a["requeue"] for a in self.gw.acks], [False, False])


class AwkwardCases(WorkerCase):
    def test_result_resent_with_the_same_body_after_a_dropped_answer_and_503(self) -> None:
        runs: List[int] = []
        self.gw.hooks["result"] = lambda body, n: "drop" if n == 1 else (503, {"code": "broker_unavailable"}, None) if n == 2 else None
        self.gw.push(message(1, "x"))
        self.worker({"echo": lambda ctx: runs.append(1) or ctx.input})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        bodies = [r[3] for r in self.gw.paths("/result")]
        self.assertEqual(len(bodies), 3)
        self.assertEqual(len(set(bodies)), 1)
        self.assertEqual(runs, [1])

    def test_401_bootstraps_again_once_with_the_same_worker(self) -> None:
        self.gw.push(message(1, "x"))
        w = self.worker({"echo": lambda ctx: ctx.input})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.gw.session = "rotated-elsewhere"  # the server forgot the session
        self.gw.bootstraps = 5
        self.gw.push(message(2, "y"))
        self.gw.wait_for(lambda: len(self.gw.results) == 2)
        self.assertEqual(self.gw.counts["bootstrap"], 2)
        self.assertEqual(w.session.worker_id, "w-1")
        self.assertEqual(self.gw.paths("/result")[-1][1]["X-Worker-Session"], "session-6")

    def test_refused_lease_acks_without_running(self) -> None:
        runs: List[int] = []
        self.gw.lease_answer = lambda m: {"acquired": False, "attempt": None, "leaseExpiresAt": None, "reason": "stage_terminal"}
        self.gw.push(message(1))
        self.worker({"echo": lambda ctx: runs.append(1)})
        self.gw.wait_for(lambda: len(self.gw.acks) == 1)
        self.assertEqual(self.gw.acks[0]["requeue"], False)
        self.assertEqual((runs, self.gw.results), ([], []))

    def _lost(self, **options: Any) -> Any:
        seen: List[Any] = []

        def hold(ctx: StageContext) -> None:
            ctx.cancelled.wait(5)
            seen.append(ctx.cancelled.reason)
            ctx.check_cancelled()

        self.gw.push(message(1))
        self.worker({"echo": hold}, **options)
        self.gw.wait_for(lambda: len(self.gw.acks) == 1)
        self.assertEqual(self.gw.acks[0]["requeue"], False)
        self.assertEqual(self.gw.results, [])
        return seen[0]

    def test_renewal_refused_cancels_the_handler_and_withholds_its_result(self) -> None:
        self.gw.lease_answer = lambda m: (
            {"acquired": False, "attempt": None, "leaseExpiresAt": None, "reason": "pipeline_cancelled"}
            if "stageId" not in m else {"acquired": True, "attempt": 1, "leaseExpiresAt": None, "reason": None}
        )
        reason = self._lost(lease_renew_interval=0.05)
        self.assertIsInstance(reason, LeaseLost)
        self.assertEqual(reason.reason, "pipeline_cancelled")

    def test_lease_lapses_on_the_sdks_own_clock(self) -> None:
        self.gw.hooks["lease/renew"] = lambda body, n: (500, {"code": "internal"}, None)
        started = time.monotonic()
        reason = self._lost(lease_renew_interval=0.1, lease_duration=0.5)
        self.assertEqual(reason.reason, "lapsed")
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertGreaterEqual(self.gw.counts["lease/renew"], 2)

    def test_a_handler_ignoring_its_lost_lease_loses_its_slot(self) -> None:
        release = threading.Event()
        self.gw.lease_answer = lambda m: (
            {"acquired": False, "attempt": None, "leaseExpiresAt": None, "reason": "not_owner"}
            if "stageId" not in m else {"acquired": True, "attempt": 1, "leaseExpiresAt": None, "reason": None}
        )
        self.gw.push(message(1, "stuck"))
        self.worker({"echo": lambda ctx: release.wait(5) and ctx.input}, lease_renew_interval=0.05, abort_grace=0.1)
        self.gw.wait_for(lambda: len(self.gw.acks) == 1)
        self.gw.lease_answer = lambda m: {"acquired": True, "attempt": 1, "leaseExpiresAt": None, "reason": None}
        self.gw.push(message(2, "next"))  # the slot runs again while the first handler hangs
        release.set()
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertEqual(self.result()["stageId"], 2)

    def test_429_pauses_every_slot_for_retry_after(self) -> None:
        self.gw.hooks["pull"] = lambda body, n: (429, {"code": "too_many"}, {"Retry-After": "1"}) if n == 1 else None
        self.gw.push(message(1))
        started = time.monotonic()
        self.worker({"echo": lambda ctx: ctx.input}, concurrency=1)
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertGreaterEqual(time.monotonic() - started, 0.95)

    def test_stage_timeout_fails_with_timeout(self) -> None:
        self.gw.push(message(1, timeOutSeconds=0.1))
        self.worker({"echo": lambda ctx: ctx.sleep(5)})
        self.gw.wait_for(lambda: len(self.gw.results) == 1)
        self.assertEqual((self.result()["isSuccess"], self.result()["errorCode"]), (False, "TIMEOUT"))

    def test_stop_drains_then_cancels_with_worker_stopping(self) -> None:
        self.gw.push(message(1), message(2))
        w = self.worker({"echo": lambda ctx: ctx.sleep(0.2 if ctx.stage.stage_id == 1 else 5) or "done"}, concurrency=2, drain_timeout=0.5)
        self.gw.wait_for(lambda: w.counters["inFlight"] == 2)
        started = time.monotonic()
        w.stop()
        self.assertLess(time.monotonic() - started, 2.0)
        by_stage = {self.result(i)["stageId"]: self.result(i) for i in range(2)}
        self.assertEqual(by_stage[1]["result"], "done")
        self.assertEqual((by_stage[2]["errorCode"], by_stage[2]["retryable"]), ("WORKER_STOPPING", True))
        self.assertEqual(len(self.gw.paths("/workers/shutdown")), 1)
        self.assertEqual(w.state, "stopped")

    def test_handler_errors_become_codes(self) -> None:
        class Coded(Exception):
            code = "ECONNRESET"

        handlers = {
            "echo": lambda ctx: (_ for _ in ()).throw(StageError("VALIDATION_ERROR", "bad", retryable=False)),
            "plain": lambda ctx: 1 / 0,
            "coded": lambda ctx: (_ for _ in ()).throw(Coded("reset")),
            "json": lambda ctx: ctx.json(),
        }
        self.gw.push(message(1), message(2, stageHandlerName="plain"), message(3, stageHandlerName="coded"),
                     message(4, "not json", stageHandlerName="json"))
        self.worker(handlers, concurrency=4)
        self.gw.wait_for(lambda: len(self.gw.results) == 4)
        by_stage = {json.loads(r)["stageId"]: json.loads(r) for r in self.gw.results}
        got = {i: (r["isSuccess"], r["errorCode"], r.get("retryable")) for i, r in by_stage.items()}
        self.assertEqual(got, {
            1: (False, "VALIDATION_ERROR", False),
            2: (False, "HANDLER_ERROR", None),
            3: (False, "ECONNRESET", None),
            4: (False, "VALIDATION_ERROR", False),
        })
        self.assertEqual(by_stage[1]["logs"][-1]["message"], "VALIDATION_ERROR: bad")


if __name__ == "__main__":
    unittest.main()
