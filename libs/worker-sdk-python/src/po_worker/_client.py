"""The worker protocol's calls, one method per endpoint (api-spec "Worker protocol", addendum §5,
§12, decisions 0098 and 0100). Bodies are dicts; a result goes as bytes encoded once, so a retry
resends exactly what was sent."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ._http import HttpClient, encode
from .errors import MalformedDelivery, ProtocolError

Json = Dict[str, Any]


def queue_name(application_id: int, handler: str) -> str:
    return f"app_{application_id}_{handler}_StageNext"


def lease_from(value: Any) -> Optional[Json]:
    """A lease answer, or None when it has no ``acquired`` (a gateway that did not answer)."""
    if not isinstance(value, dict) or not isinstance(value.get("acquired"), bool):
        return None
    return value


def delivery_from(value: Any, path: str) -> Json:
    """A pulled delivery as the SDK uses it; MalformedDelivery when its payload cannot be run."""
    if not isinstance(value, dict):
        raise ProtocolError(f"{path}: response is not a JSON object")
    token = value.get("token")
    if not isinstance(token, str) or not token:
        raise ProtocolError(f"{path}: response has no token")
    p = value.get("payload")
    if (
        not isinstance(p, dict)
        or type(p.get("stageId")) is not int
        or type(p.get("pipelineId")) is not int
        or not isinstance(p.get("executionId"), str)
        or not p["executionId"]
    ):
        raise MalformedDelivery(token, f"{path}: payload lacks stageId, pipelineId or executionId")
    if not isinstance(p.get("input"), str):
        p["input"] = ""
    if not isinstance(p.get("pipelineContextItems"), list):
        p["pipelineContextItems"] = []
    if type(p.get("previousAttempts")) is not int:
        p["previousAttempts"] = 0
    t = p.get("timeOutSeconds")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        p["timeOutSeconds"] = None
    if not isinstance(value.get("headers"), dict):
        value["headers"] = {}
    return value


class WorkerClient:
    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.http = HttpClient(base_url, timeout)
        self._api_key = api_key
        #: Sent on every call, pull and ack too, so that a load balancer hashing on
        #: X-Worker-Session keeps a worker's pull and its ack on one gateway (decision 0014).
        self.routing_session: Optional[str] = None

    def _headers(self, api_key: bool, session: Optional[str], traceparent: Optional[str] = None) -> Dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            h["X-API-Key"] = self._api_key
        s = session or self.routing_session
        if s:
            h["X-Worker-Session"] = s
        if traceparent:
            h["traceparent"] = traceparent
        return h

    def bootstrap(self, body: Json) -> Json:
        path = "/workers/bootstrap"
        _, r = self.http.request("POST", path, encode(body), self._headers(True, None), (200,))
        if (
            not isinstance(r, dict)
            or not isinstance(r.get("workerId"), str)
            or not isinstance(r.get("sessionToken"), str)
            or type(r.get("applicationId")) is not int
            or not isinstance(r.get("queues"), list)
        ):
            raise ProtocolError(f"{path}: response lacks workerId, sessionToken, applicationId or queues")
        self.routing_session = r["sessionToken"]
        return r

    def heartbeat(self, session: str, body: Json) -> None:
        self.http.request("POST", "/workers/heartbeat", encode(body), self._headers(False, session), (200, 204))

    def events(self, session: str, body: Json) -> None:
        self.http.request("POST", "/workers/events", encode(body), self._headers(False, session), (200, 204))

    def shutdown(self, session: str, body: Json) -> None:
        self.http.request("POST", "/workers/shutdown", encode(body), self._headers(False, session), (200, 204))

    def pull(self, queue: str, wait: int, lease_as: Optional[str]) -> Optional[Json]:
        """Long-polls one queue; None on 204. With ``lease_as`` the pull acquires the lease too."""
        body: Json = {"queue": queue, "waitSeconds": wait}
        if lease_as:
            body["lease"] = {"workerId": lease_as}
        _, r = self.http.request(
            "POST",
            "/jobs/pull",
            encode(body),
            self._headers(True, None),
            (200, 204),
            timeout=wait + self.http.timeout,
            abortable=True,
        )
        return None if r is None else delivery_from(r, "/jobs/pull")

    def ack(self, token: str, requeue: bool = False) -> None:
        body = encode({"token": token, "requeue": requeue})
        self.http.request("POST", "/jobs/ack", body, self._headers(False, None), (200, 204))

    def lease(self, op: str, session: str, stage_id: int, body: Json, traceparent: Optional[str]) -> Json:
        path = f"/stages/{stage_id}/lease/{op}"
        _, r = self.http.request("POST", path, encode(body), self._headers(False, session, traceparent), (200,))
        lease = lease_from(r)
        if lease is None:
            raise ProtocolError(f"{path}: response has no acquired")
        return lease

    def submit_result(self, session: str, stage_id: int, body: bytes, traceparent: Optional[str]) -> Json:
        path = f"/stages/{stage_id}/result"
        _, r = self.http.request("POST", path, body, self._headers(True, session, traceparent), (200, 202))
        return r if isinstance(r, dict) else {}


def events_body(worker_id: str, events: List[Json]) -> Json:
    return {"workerId": worker_id, "events": events}
