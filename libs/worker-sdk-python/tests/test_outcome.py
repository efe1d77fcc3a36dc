"""What a handler returned or raised, as the result body, within the server's limits."""
from __future__ import annotations

import json
import unittest

from tests.fake_gateway import message

from po_worker import StageError, StageTimeout, WorkerStopping
from po_worker._outcome import REQUEST_BYTES, RESULT_BYTES, from_exception, from_return, result_body
from po_worker.context import Cancellation, StageContext


def ctx() -> StageContext:
    return StageContext({"payload": message(1), "headers": {}, "token": "t"}, "echo", 1, Cancellation())


def body(outcome, c=None):
    return json.loads(result_body(message(1), 1, outcome, c or ctx(), {"ackToken": "t"}))


class Outcomes(unittest.TestCase):
    def test_return_values(self) -> None:
        self.assertEqual(from_return("é")[:3], (True, False, "é"))
        self.assertEqual(from_return({"a": [1]})[2], '{"a":[1]}')
        self.assertEqual(from_return(None)[2], None)
        self.assertEqual(from_return(object())[3], "RESULT_NOT_SERIALIZABLE")

    def test_terminal_codes_and_retryable(self) -> None:
        for code in ("BUSINESS_REJECTED", "VALIDATION_ERROR", "INVALID_STATE", "MISSING_REQUIRED_DATA"):
            b = body(from_exception(StageError(code, "no"), None))
            self.assertEqual((b["isSuccess"], b["errorCode"], "retryable" in b), (False, code, False))
        self.assertIs(body(from_exception(StageError("X", "m", retryable=False), None))["retryable"], False)
        self.assertEqual(from_exception(ValueError("v"), StageTimeout(1))[3], "TIMEOUT")
        self.assertEqual(from_exception(ValueError("v"), WorkerStopping())[3:5], ("WORKER_STOPPING", True))
        self.assertEqual(from_exception(StageError("OWN", "m"), WorkerStopping())[3], "OWN")
        self.assertEqual(from_exception(StageError("A\nB", "m"), None)[3], "A_B")

    def test_result_over_the_limit_fails(self) -> None:
        o = from_return("x" * (RESULT_BYTES + 1))
        self.assertEqual((o[0], o[3], o[4]), (False, "RESULT_TOO_LARGE", False))
        self.assertTrue(from_return("x" * RESULT_BYTES)[0])

    def test_log_lines_capped_at_100_with_a_marker(self) -> None:
        c = ctx()
        for i in range(150):
            c.log(f"line {i}")
        b = body(from_exception(StageError("E", "m"), None), c)
        self.assertEqual(len(b["logs"]), 100)
        self.assertIn("52 more log lines were dropped", b["logs"][98]["message"])
        self.assertEqual(b["logs"][99]["message"], "E: m")

    def test_logs_cut_until_the_body_fits(self) -> None:
        c = ctx()
        for _ in range(10):
            c.log("y" * 60_000)
        raw = result_body(message(1), 1, from_return("x" * 200_000), c, {})
        b = json.loads(raw)
        self.assertLessEqual(len(raw), REQUEST_BYTES)
        self.assertTrue(b["isSuccess"])
        self.assertEqual(len(b["result"]), 200_000)
        self.assertLessEqual(max(len(l["message"]) for l in b["logs"]), 1000)

    def test_limits_of_context_and_appended_stages(self) -> None:
        c = ctx()
        for i in range(64):
            c.set_context(f"k{i}", i)
        with self.assertRaises(OverflowError):
            c.set_context("one-more", 1)
        with self.assertRaises(OverflowError):
            c.append_stages([{"stageName": "s", "stageHandlerName": "h"}] * 101)


if __name__ == "__main__":
    unittest.main()
