"""HTTP transport: http.client with one kept-alive connection per thread (a slot thread keeps its
own for every stage it runs), typed failures, and pulls that stop() can abort mid-wait."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any, Dict, Optional, Set, Tuple, Union
from urllib.parse import urlsplit

from .errors import ApiError, ProtocolError, TransportError

#: Node's HTTP server closes a kept-alive connection after 5 s idle; one idle longer than this is
#: reopened rather than risked.
_IDLE_REUSE_S = 4.0
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def encode(body: Any) -> bytes:
    """Compact UTF-8 JSON; ASCII escapes only when a string holds a lone surrogate."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode("ascii")


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _Tracked:
    """What the client remembers of a kept-alive connection."""

    served = 0
    last_used = 0.0
    aborted = False


class _Connection(_Tracked, http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        # Headers and body leave in one write, but the next request must not wait for Nagle.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _TlsConnection(_Tracked, http.client.HTTPSConnection):
    pass


_Conn = Union[_Connection, _TlsConnection]


class HttpClient:
    """Sends JSON requests to one base URL. Thread-safe: each thread uses its own connection."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._abortable: Set[_Conn] = set()
        #: Strong references: a slot thread that ends must not leave its socket to the GC.
        self._all: Set[_Conn] = set()
        self._closed = False

    def _connection(self, timeout: float) -> _Conn:
        conn: Optional[_Conn] = getattr(self._local, "conn", None)
        if conn is not None and time.monotonic() - conn.last_used > _IDLE_REUSE_S:
            self._drop()
            conn = None
        if conn is None:
            if self._tls:
                conn = _TlsConnection(self._host, self._port, timeout=timeout)
            else:
                conn = _Connection(self._host, self._port, timeout=timeout)
            self._local.conn = conn
            with self._lock:
                self._all.add(conn)
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._lock:
                self._all.discard(conn)

    def abort_all(self) -> None:
        """Breaks every abortable request in flight (pulls, at stop): the gateway requeues them."""
        with self._lock:
            self._closed = True
            conns = list(self._abortable)
        for conn in conns:
            conn.aborted = True
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        """Closes every kept-alive connection (the worker has stopped)."""
        with self._lock:
            conns = list(self._all)
            self._all.clear()
        for conn in conns:
            conn.close()

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        ok: Tuple[int, ...],
        timeout: Optional[float] = None,
        abortable: bool = False,
    ) -> Tuple[int, Any]:
        """Returns (status, parsed JSON or None). Raises ApiError, TransportError, ProtocolError."""
        t = self.timeout if timeout is None else timeout
        if abortable:
            with self._lock:
                if self._closed:
                    raise TransportError(method, path, ConnectionAbortedError("worker stopping"))
        for attempt in (0, 1):
            conn = self._connection(t)
            reused = conn.served > 0
            if abortable:
                with self._lock:
                    self._abortable.add(conn)
            try:
                conn.request(method, self._prefix + path, body, headers)
                resp = conn.getresponse()
                data = resp.read()
                status = resp.status
                retry_after = resp.getheader("retry-after") if status >= 400 else None
                if resp.will_close:
                    self._drop()
                else:
                    conn.served += 1
                    conn.last_used = time.monotonic()
            except _STALE as err:
                self._drop()
                # A kept-alive connection the server had already closed: the request never got
                # there, so it is sent once more on a fresh connection.
                if reused and attempt == 0 and not conn.aborted:
                    continue
                raise TransportError(method, path, err) from err
            except socket.timeout as err:
                self._drop()
                raise TransportError(method, path, err, timed_out=True) from err
            except (OSError, http.client.HTTPException) as err:
                self._drop()
                raise TransportError(method, path, err) from err
            finally:
                if abortable:
                    with self._lock:
                        self._abortable.discard(conn)
            break
        if status not in ok:
            code = detail = None
            try:
                problem = json.loads(data) if data else None
            except ValueError:
                problem = None
            if isinstance(problem, dict):
                code = problem.get("code") if isinstance(problem.get("code"), str) else None
                detail = problem.get("detail") if isinstance(problem.get("detail"), str) else None
            raise ApiError(method, path, status, code, detail, parse_retry_after(retry_after))
        if not data or not data.strip():
            return status, None
        try:
            return status, json.loads(data)
        except ValueError as err:
            raise ProtocolError(f"{method} {path}: response is not JSON") from err
