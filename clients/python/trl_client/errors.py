"""Typed errors: one exception class per trl error code (docs/protocol.md).

Every error the daemon answers becomes an instance of the class named for
its code, so callers write ``except SessionNotFound:`` instead of comparing
strings. Failures to reach the daemon at all are ``TransportError``.
"""

from typing import Any, Dict, Optional, Type


class TrlError(Exception):
    """An error answered by the daemon: ``code``, ``message`` and ``data``."""

    code = "UNKNOWN"

    def __init__(self, message: str, data: Any = None, code: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.data = data
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)


class SessionNotFound(TrlError):
    code = "SESSION_NOT_FOUND"


class SessionBusy(TrlError):
    code = "SESSION_BUSY"


class CommandTimeout(TrlError):
    """``check=True`` and the command timed out; ``data`` is the result."""

    code = "COMMAND_TIMEOUT"


class CommandFailed(TrlError):
    """``check=True`` and the command exited non-zero; ``data`` is the result."""

    code = "COMMAND_FAILED"


class InvalidParams(TrlError):
    code = "INVALID_PARAMS"


class InternalError(TrlError):
    code = "INTERNAL_ERROR"


class AuthFailed(TrlError):
    code = "AUTH_FAILED"


class MethodNotFound(TrlError):
    """The daemon does not know the method (an older daemon, say)."""

    code = "METHOD_NOT_FOUND"


class SessionExited(TrlError):
    code = "SESSION_EXITED"


class LimitExceeded(TrlError):
    code = "LIMIT_EXCEEDED"


class StreamNotFound(TrlError):
    code = "STREAM_NOT_FOUND"


class ShuttingDown(TrlError):
    code = "SHUTTING_DOWN"


class InvalidState(TrlError):
    """Input to a command that has ended, or is not waiting with require_waiting."""

    code = "INVALID_STATE"


class FileNotFound(TrlError):
    """No file at the path (fs.*, /files)."""

    code = "FILE_NOT_FOUND"


class PermissionDenied(TrlError):
    """The session's user may not do that to the file."""

    code = "PERMISSION_DENIED"


class Conflict(TrlError):
    """The file changed since it was read (if_sha256), or the target exists."""

    code = "CONFLICT"


class IsADirectory(TrlError):
    code = "IS_A_DIRECTORY"


class NotADirectory(TrlError):
    code = "NOT_A_DIRECTORY"


class OutsideRoot(TrlError):
    """The path leads outside the daemon's --fs-root trees."""

    code = "OUTSIDE_ROOT"


class CommandDenied(TrlError):
    """The command policy refused the command; nothing ran. ``data`` holds
    the rule and reason."""

    code = "COMMAND_DENIED"


class TransportError(ConnectionError):
    """The daemon could not be reached, or the connection broke mid-call."""


class ProtocolError(TransportError):
    """The daemon sent something that is not a trl message."""


_BY_CODE: Dict[str, Type[TrlError]] = {
    cls.code: cls
    for cls in (
        SessionNotFound,
        SessionBusy,
        CommandTimeout,
        CommandFailed,
        InvalidParams,
        InternalError,
        AuthFailed,
        MethodNotFound,
        SessionExited,
        LimitExceeded,
        StreamNotFound,
        ShuttingDown,
        InvalidState,
        FileNotFound,
        PermissionDenied,
        Conflict,
        IsADirectory,
        NotADirectory,
        OutsideRoot,
        CommandDenied,
    )
}


def error_from_wire(err: Any) -> TrlError:
    """Build the typed exception for an envelope's ``error`` object."""
    if not isinstance(err, dict):
        return InternalError("malformed error from the daemon: %r" % (err,))
    code = str(err.get("code") or "INTERNAL_ERROR")
    message = str(err.get("message") or "")
    cls = _BY_CODE.get(code)
    if cls is None:
        return TrlError(message, err.get("data"), code=code)
    return cls(message, err.get("data"))
