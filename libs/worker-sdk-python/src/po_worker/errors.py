"""Exceptions: what handlers raise (StageError), why a handler is told to stop (the Cancelled
family), what the HTTP client raises (ApiError, TransportError, ProtocolError), and bad options."""
from __future__ import annotations

from typing import List, Optional

#: Codes the server never retries, whatever ``retryable`` says.
TERMINAL_CODES = frozenset(
    {"BUSINESS_REJECTED", "VALIDATION_ERROR", "INVALID_STATE", "MISSING_REQUIRED_DATA"}
)


class StageError(Exception):
    """Raise from a handler to fail the stage with a machine-readable ``code``.

    ``retryable=False`` turns automatic retries off for this failure; ``True`` only allows them
    (the stage still needs ``retryInterval`` and ``maxRetries``); ``None`` leaves it to the server.
    """

    def __init__(self, code: str, message: str = "", *, retryable: Optional[bool] = None) -> None:
        if not isinstance(code, str) or not code.strip():
            raise TypeError("StageError: code must be a non-empty string")
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable


class Cancelled(Exception):
    """Why a handler was told to stop; ``ctx.check_cancelled()`` raises it.

    Subclasses: :class:`LeaseLost`, :class:`StageTimeout`, :class:`WorkerStopping`.
    """

    code = "CANCELLED"


class LeaseLost(Cancelled):
    """The lease is no longer this worker's: a retry may already run elsewhere (decision 0118).

    ``reason``: the gateway's refusal (``pipeline_cancelled``, ``stage_terminal``,
    ``stale_execution``, ``lease_expired``, ``not_owner``), ``not_found`` (404), a 409's problem
    code, or ``lapsed`` when no renewal got through before the lease ran out on the SDK's clock.
    No result is sent for the execution.
    """

    code = "LEASE_LOST"

    def __init__(self, reason: str) -> None:
        super().__init__(f"lease lost: {reason}")
        self.reason = reason


class StageTimeout(Cancelled):
    """The stage's ``timeOutSeconds`` passed since the lease grant; a failure becomes TIMEOUT."""

    code = "TIMEOUT"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"stage timed out after {seconds:g} s")
        self.seconds = seconds


class WorkerStopping(Cancelled):
    """The worker is stopping and its drain timeout passed; a failure becomes WORKER_STOPPING."""

    code = "WORKER_STOPPING"

    def __init__(self) -> None:
        super().__init__("worker is stopping")


class ApiError(Exception):
    """A non-2xx answer. ``code`` is the problem-details code when the body has one."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        code: Optional[str] = None,
        detail: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        text = f"{method} {path} answered {status}"
        if code:
            text += f" {code}"
        if detail:
            text += f": {detail}"
        super().__init__(text)
        self.method = method
        self.path = path
        self.status = status
        self.code = code
        self.detail = detail
        #: Seconds, from Retry-After.
        self.retry_after = retry_after


class TransportError(Exception):
    """The request may or may not have reached the server: network failure or timeout."""

    def __init__(self, method: str, path: str, cause: BaseException, timed_out: bool = False) -> None:
        why = "timed out" if timed_out else f"{type(cause).__name__}: {cause}"
        super().__init__(f"{method} {path} failed: {why}")
        self.timed_out = timed_out


class ProtocolError(Exception):
    """The server answered 2xx with a body the SDK cannot use."""


class MalformedDelivery(ProtocolError):
    """A delivery whose payload cannot be run; ``token`` lets the worker acknowledge it."""

    def __init__(self, token: str, message: str) -> None:
        super().__init__(message)
        self.token = token


class WorkerConfigError(ValueError):
    """Invalid worker options; ``problems`` lists every one found."""

    def __init__(self, problems: List[str]) -> None:
        super().__init__("Invalid worker options:\n  - " + "\n  - ".join(problems))
        self.problems = problems


def is_retryable(err: BaseException) -> bool:
    """True when the same request may be sent again: network errors, timeouts, 408, 429, 5xx."""
    if isinstance(err, TransportError):
        return True
    if isinstance(err, ApiError):
        return err.status >= 500 or err.status in (408, 429)
    return False


def is_status(err: BaseException, status: int) -> bool:
    return isinstance(err, ApiError) and err.status == status
