"""po_worker: write pipeline-orchestration workers in Python (standard library only)."""
import logging

from .context import Approval, Cancellation, StageContext, StageInfo
from .errors import (
    TERMINAL_CODES,
    ApiError,
    Cancelled,
    LeaseLost,
    ProtocolError,
    StageError,
    StageTimeout,
    TransportError,
    WorkerConfigError,
    WorkerStopping,
    is_retryable,
)
from .options import WorkerOptions
from .worker import SDK_VERSION, Worker

__version__ = SDK_VERSION
__all__ = [
    "Approval",
    "ApiError",
    "Cancellation",
    "Cancelled",
    "LeaseLost",
    "ProtocolError",
    "StageContext",
    "StageError",
    "StageInfo",
    "StageTimeout",
    "TERMINAL_CODES",
    "TransportError",
    "Worker",
    "WorkerConfigError",
    "WorkerOptions",
    "WorkerStopping",
    "is_retryable",
]

logging.getLogger("po_worker").addHandler(logging.NullHandler())
