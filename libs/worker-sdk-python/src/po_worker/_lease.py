"""Lease renewal for one execution, and the lease's end on the SDK's own monotonic clock
(decision 0118). A refusal (acquired false, 404, 409) is final; any other failure is retried
sooner than the regular period while the lease is still valid locally. Either loss cancels the
handler and withholds its result: past that point the server may already run a retry."""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Callable, Dict, Optional

from ._background import Background, Timer
from .errors import LeaseLost, is_status

log = logging.getLogger("po_worker")
LAPSED = "lapsed"


def refusal_of(err: BaseException) -> Optional[str]:
    """Why an error answer says the lease is no longer ours; None when it does not say so."""
    if is_status(err, 404):
        return "not_found"
    if is_status(err, 409):
        return getattr(err, "code", None) or "conflict"
    return None


class LeaseKeeper:
    """One timer at a time: the next renewal, or the lease's end while a renewal is in flight."""

    def __init__(
        self,
        bg: Background,
        renew: Callable[[], Dict[str, Any]],
        on_lost: Callable[[LeaseLost], None],
        interval: float,
        duration: float,
        granted_sent_at: float,
        label: str,
    ) -> None:
        self._bg = bg
        self._renew_call = renew
        self._on_lost = on_lost
        self._interval = interval
        self._duration = duration
        #: Counted from when the granting request was sent: never later than the server's expiry.
        self.expires_at = granted_sent_at + duration
        self._label = label
        self._lock = threading.Lock()
        self._timer: Optional[Timer] = None
        self._in_flight = False
        self._stopped = False
        self._failures = 0
        self._renew_at = 0.0
        self.lost: Optional[str] = None

    def start(self) -> None:
        with self._lock:
            self._renew_at = time.monotonic() + self._regular_delay()
            self._arm()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()

    def _regular_delay(self) -> float:
        # Within half of what is left: a lease counted from a long-polled pull starts shorter.
        return max(0.001, min(self._interval, (self.expires_at - time.monotonic()) / 2))

    def _arm(self) -> None:
        if self._stopped:
            return
        if self._timer is not None:
            self._timer.cancel()
        at = self.expires_at if self._in_flight else min(self._renew_at, self.expires_at)
        self._timer = self._bg.call_later(at - time.monotonic(), self._wake)

    def _wake(self) -> None:
        with self._lock:
            if self._stopped:
                return
            now = time.monotonic()
            if now >= self.expires_at:
                lapsed = True
            else:
                lapsed = False
                if not self._in_flight and now >= self._renew_at:
                    self._in_flight = True
                    self._bg.submit(self._renew)
                self._arm()
        if lapsed:
            self._lose(LAPSED)

    def _renew(self) -> None:
        sent = time.monotonic()
        refused: Optional[str] = None
        try:
            lease = self._renew_call()
            if not lease.get("acquired"):
                refused = lease.get("reason") or "refused"
            else:
                with self._lock:
                    self.expires_at = max(self.expires_at, sent + self._duration)
                    if self._failures:
                        log.info("lease renewed again after %d failures (%s)", self._failures, self._label)
                    self._failures = 0
                    self._renew_at = time.monotonic() + self._regular_delay()
        except Exception as err:
            refused = refusal_of(err)
            if refused is None:
                with self._lock:
                    self._failures += 1
                    delay = self._interval / 10 + random.random() * self._interval * 3 / 20
                    self._renew_at = time.monotonic() + delay
                log.warning("lease renewal failed; retrying in %.1f s while the lease lasts (%s): %s", delay, self._label, err)
        with self._lock:
            self._in_flight = False
            if refused is None:
                self._arm()
        if refused is not None:
            self._lose(refused)

    def _lose(self, reason: str) -> None:
        with self._lock:
            if self.lost is not None or self._stopped:
                return
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
            self.lost = reason
        if reason == LAPSED:
            log.warning("lease ran out without a renewal; cancelling the handler (%s)", self._label)
        else:
            log.warning("lease renewal refused (%s); cancelling the handler (%s)", reason, self._label)
        self._on_lost(LeaseLost(reason))
