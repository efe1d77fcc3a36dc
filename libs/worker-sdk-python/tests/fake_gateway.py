"""A small in-process worker-gateway for the unit tests: plays the protocol (with or without the
0098/0100 extensions), records every request, and lets a test script odd answers."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

# A hook returns (status, body, headers) to answer, "drop" to close without an answer, or None.
Hook = Callable[[Dict[str, Any], int], Any]


def message(stage_id: int, text: str = "hi", **extra: Any) -> Dict[str, Any]:
    m = {
        "applicationId": 1, "pipelineId": 100 + stage_id, "stageId": stage_id,
        "executionId": str(uuid.uuid4()), "stageName": f"s{stage_id}", "stageHandlerName": "echo",
        "input": text, "options": {}, "pipelineContextItems": [], "traceId": "t", "spanId": "s",
        "dispatchedAt": "2026-01-01T00:00:00.000Z", "timeOutSeconds": None, "previousAttempts": 0,
    }
    m.update(extra)
    return m


class FakeGateway:
    def __init__(self, extensions: bool = True) -> None:
        self.extensions = extensions
        self.lock = threading.Condition()
        self.queue: List[Dict[str, Any]] = []
        self.requests: List[Tuple[str, Dict[str, str], Any, bytes]] = []
        self.results: List[bytes] = []
        self.acks: List[Dict[str, Any]] = []
        self.tokens: Dict[str, Dict[str, Any]] = {}
        self.session = "session-1"
        self.bootstraps = 0
        self.lease_answer: Callable[[Dict[str, Any]], Dict[str, Any]] = lambda m: {"acquired": True, "attempt": m.get("previousAttempts", 0) + 1, "leaseExpiresAt": None, "reason": None}
        self.hooks: Dict[str, Hook] = {}
        #: A gateway that could not answer the pull's lease sends lease: null (call acquire).
        self.pull_lease_null = False
        #: A pull that waited says its message waited for a place of its handler's limit (backlog).
        self.waited_for_place = False
        self.counts: Dict[str, int] = {}
        gw = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                path = self.path
                key = path.split("/")[-1] if not path.startswith("/stages/") else "/".join(path.split("/")[3:])
                with gw.lock:
                    gw.requests.append((path, dict(self.headers), body, raw))
                    n = gw.counts[key] = gw.counts.get(key, 0) + 1
                hook = gw.hooks.get(key)
                answer = hook(body, n) if hook else None
                if answer is None:
                    answer = gw.route(path, key, body, raw, dict(self.headers))
                if answer == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, out, headers = answer
                data = b"" if out is None else json.dumps(out).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a worker aborting its pulls at stop is expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def push(self, *messages: Dict[str, Any]) -> None:
        with self.lock:
            self.queue.extend(messages)
            self.lock.notify_all()

    def paths(self, suffix: str) -> List[Tuple[str, Dict[str, str], Any, bytes]]:
        with self.lock:
            return [r for r in self.requests if r[0].endswith(suffix)]

    def wait_for(self, what: Callable[[], bool], timeout: float = 5.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if what():
                return
            time.sleep(0.01)
        raise AssertionError("condition not met in time")

    def _take(self, queue: str, wait: float, lease_as: Optional[str]) -> Optional[Dict[str, Any]]:
        end = time.monotonic() + min(wait, 0.3)
        handler = queue.split("_", 2)[2].rsplit("_", 1)[0]
        waited = False
        with self.lock:
            while True:
                found = [m for m in self.queue if m["stageHandlerName"] == handler]
                if found:
                    break
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)
                waited = True
            m = found[0]
            self.queue.remove(m)
        token = str(uuid.uuid4())
        self.tokens[token] = m
        d: Dict[str, Any] = {"token": token, "queue": queue, "payload": m, "messageId": token, "headers": {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}}
        if self.extensions and lease_as:
            d["lease"] = None if self.pull_lease_null else self.lease_answer(m)
        if self.extensions and waited and self.waited_for_place:
            d["backlog"] = True
        return d

    def route(self, path: str, key: str, body: Any, raw: bytes, headers: Dict[str, str]) -> Any:
        if key == "bootstrap":
            self.bootstraps += 1
            if self.bootstraps > 1:
                self.session = f"session-{self.bootstraps}"
            return 200, {"workerId": "w-1", "sessionToken": self.session, "sessionExpiresAt": "", "applicationId": 1, "queues": [f"app_1_{h}_StageNext" for h in body["handlers"]], "heartbeatIntervalSeconds": 30, "messageBroker": {"enabled": False, "connectionString": None}}, None
        if key == "pull":
            d = self._take(body["queue"], body["waitSeconds"], (body.get("lease") or {}).get("workerId"))
            return (204, None, None) if d is None else (200, d, None)
        if key == "ack":
            self.acks.append(body)
            return (204, None, None) if self.tokens.pop(body["token"], None) is not None else (404, {"code": "not_found"}, None)
        if key in ("heartbeat", "events", "shutdown"):
            return 204, None, None
        if headers.get("X-Worker-Session") != self.session:
            return 401, {"code": "unauthorized"}, None
        if key in ("lease/acquire", "lease/renew"):
            return 200, self.lease_answer(body), None
        if key == "result":
            self.results.append(raw)
            out: Dict[str, Any] = {"accepted": True, "stageId": body["stageId"], "executionId": body["executionId"]}
            if self.extensions:
                out["acked"] = self.tokens.pop(body.get("ackToken"), None) is not None
                if body.get("next"):
                    out["next"] = self._take(body["next"]["queue"], 0, body["next"].get("lease", {}).get("workerId"))
            return 202, out, None
        return 404, {"code": "no_route"}, None
