"""trl_client: Python client for trl, the terminal runtime layer.

``Client`` (blocking) and ``AsyncClient`` (asyncio) have the same methods
(run, stream, read, attach, cancel, input, wait, screen, resize, sessions,
ping, stats, the fs_* file methods, upload and download) over the daemon's Unix socket or its HTTP transport. Standard
library only. Errors the daemon answers are typed: ``except SessionNotFound``.
"""

from ._api import eof, key, paste
from ._core import Chunk, Result
from .aio import AsyncClient, AsyncStream
from .client import Client, Stream
from .errors import (
    AuthFailed,
    CommandDenied,
    CommandFailed,
    CommandTimeout,
    Conflict,
    FileNotFound,
    InternalError,
    InvalidParams,
    InvalidState,
    IsADirectory,
    LimitExceeded,
    MethodNotFound,
    NotADirectory,
    OutsideRoot,
    PermissionDenied,
    ProtocolError,
    SessionBusy,
    SessionExited,
    SessionNotFound,
    ShuttingDown,
    StreamNotFound,
    TransportError,
    TrlError,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "AsyncStream",
    "AuthFailed",
    "Chunk",
    "Client",
    "CommandDenied",
    "CommandFailed",
    "CommandTimeout",
    "Conflict",
    "FileNotFound",
    "InternalError",
    "InvalidParams",
    "InvalidState",
    "IsADirectory",
    "LimitExceeded",
    "MethodNotFound",
    "NotADirectory",
    "OutsideRoot",
    "PermissionDenied",
    "ProtocolError",
    "Result",
    "SessionBusy",
    "SessionExited",
    "SessionNotFound",
    "ShuttingDown",
    "Stream",
    "StreamNotFound",
    "TransportError",
    "TrlError",
    "eof",
    "key",
    "paste",
]
