"""Worker options: keyword arguments of :class:`~po_worker.Worker`, checked all at once."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional
from urllib.parse import urlsplit

from .errors import WorkerConfigError

LEASE_SECONDS = 60.0


def _url(value: Any, name: str, problems: List[str]) -> str:
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{name} is required: the API base URL, for example http://127.0.0.1:8080")
        return ""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append(f"{name} must be an http or https URL, got {value!r}")
    elif parts.query or parts.fragment:
        problems.append(f"{name} must not carry a query or fragment")
    return value.strip().rstrip("/")


@dataclass(frozen=True)
class WorkerOptions:
    """Durations are in seconds."""

    #: API base URL, for example ``http://127.0.0.1:8080`` (a path prefix is kept).
    base_url: str
    #: The application's API key (X-API-Key).
    api_key: str
    #: 1..200 characters, unique per process.
    instance_id: str
    #: Base URL of /workers/*, /jobs/*, /stages/*; default ``base_url``.
    worker_base_url: Optional[str] = None
    #: Handler slots: at most this many pulls plus running handlers.
    concurrency: int = 1
    #: Long-poll wait of a pull, 0..20.
    wait_seconds: int = 20
    worker_name: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    #: How long stop() lets running handlers finish before cancelling them.
    drain_timeout: float = 30.0
    #: After that cancellation (or a lost lease), how long a handler keeps its slot.
    abort_grace: float = 5.0
    #: Per HTTP call; a pull adds its wait.
    request_timeout: float = 10.0
    lease_renew_interval: float = 20.0
    #: The lease as the SDK counts it from when the granting request was sent; lower only cancels sooner.
    lease_duration: float = LEASE_SECONDS
    #: Default: the bootstrap's heartbeatIntervalSeconds.
    heartbeat_interval: Optional[float] = None
    event_flush_interval: float = 1.0
    send_events: bool = True
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    #: How long a result is re-sent after unknown outcomes.
    result_retry_timeout: float = 300.0
    #: Bootstrap attempts on network errors and 5xx before start() raises.
    startup_attempts: int = 5

    def __post_init__(self) -> None:
        p: List[str] = []
        set_ = object.__setattr__
        set_(self, "base_url", _url(self.base_url, "base_url", p))
        set_(self, "worker_base_url", self.base_url if self.worker_base_url is None else _url(self.worker_base_url, "worker_base_url", p))
        if not isinstance(self.api_key, str) or not self.api_key.strip():
            p.append("api_key is required (the application API key; did you set PO_API_KEY?)")
        if not isinstance(self.instance_id, str) or not 1 <= len(self.instance_id) <= 200:
            p.append("instance_id is required: 1..200 characters, unique per process")
        for name, lo, hi in (("concurrency", 1, 1000), ("wait_seconds", 0, 20), ("startup_attempts", 1, 1000)):
            v = getattr(self, name)
            if type(v) is not int or not lo <= v <= hi:
                p.append(f"{name} must be an integer {lo}..{hi}, got {v!r}")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("float", "Optional[float]") and v is not None:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                    p.append(f"{f.name} must be a number of seconds >= 0, got {v!r}")
        if isinstance(self.lease_duration, (int, float)) and not 0.002 <= self.lease_duration <= LEASE_SECONDS:
            p.append(f"lease_duration must be 0.002..{LEASE_SECONDS:g} seconds")
        if isinstance(self.lease_renew_interval, (int, float)) and isinstance(self.lease_duration, (int, float)):
            if not 0 < self.lease_renew_interval < self.lease_duration:
                p.append("lease_renew_interval must be above 0 and below lease_duration: a lease must be renewed before it runs out")
        if self.worker_name is not None and (not isinstance(self.worker_name, str) or len(self.worker_name) > 200):
            p.append("worker_name must be a string of at most 200 characters")
        if self.metadata is not None and not isinstance(self.metadata, dict):
            p.append("metadata must be a dict")
        if p:
            raise WorkerConfigError(p)
