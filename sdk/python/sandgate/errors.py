"""The exceptions the SDK raises.

Every exception is a :class:`SandgateError`. An error answer of the API is an
:class:`APIError`, subclassed once per stable error code of the API (the
``code`` of its ``{"error": {"code", "message"}}`` body), so a caller branches
with ``except sandgate.NotFoundError`` rather than on a message. A call that
never got an answer is a :class:`TransportError`; one whose deadline passed is
a :class:`CallTimeoutError`.
"""

from __future__ import annotations

import json
from typing import Mapping, Optional

__all__ = [
    "SandgateError", "APIError", "TransportError", "CallTimeoutError", "ProtocolError", "NotFoundError",
    "SpecMismatchError", "FileNotExistError", "IsDirectoryError", "NotDirectoryError", "NotRegularFileError",
    "NotReplaceableError", "NotWritableError", "FileTooLargeError", "NotReadableError", "ImageUnavailableError",
    "ImageUnusableError", "GateUidImageError", "InvalidWorkdirError", "InvalidArgumentError",
    "LengthRequiredError", "NotImplementedAPIError", "UnauthorizedError", "MethodNotAllowedError", "InternalError",
    "IncompleteBodyError", "RequestTimeoutError", "BusyError", "CheckpointTooLargeError",
    "CheckpointUnreadableError", "NoAgentError", "ProcNotFoundError", "TooManyProcsError", "ProcExitedError",
    "StdinClosedError", "PortClosedError", "TooManyStreamsError", "IsolationUnavailableError",
    "ERRORS", "api_error", "decode_error",
]


class SandgateError(Exception):
    """SandgateError is the base of every exception the SDK raises.

    ``code`` is the API's error code (or ``"transport"``/``"timeout"``/
    ``"protocol"`` for failures that never reached an answer), ``message`` its
    text, and ``status`` the HTTP status (0 when there was no answer).
    """

    code: str = "unknown"
    #: The status the executor answers this class's code with; the one given
    #: to an error that arrives inside a stream, which has no status of its own.
    default_status: int = 0

    def __init__(self, message: str, *, code: Optional[str] = None, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = self.default_status if status is None else status

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class APIError(SandgateError):
    """APIError is an error answer of the executor API.

    A code this SDK does not know (a newer executor's) is a plain APIError
    with that code, so nothing is lost.
    """

    code = "unknown"
    default_status = 500
    #: retry_after is a busy answer's Retry-After, in seconds.
    retry_after: Optional[int] = None


class TransportError(SandgateError):
    """TransportError: the call did not get a complete answer (the connection
    failed or broke mid-stream)."""

    code = "transport"


class CallTimeoutError(TransportError, TimeoutError):
    """CallTimeoutError: the call's timeout passed before the server answered
    (or, while streaming, sent the next piece). It is also a built-in
    ``TimeoutError``."""

    code = "timeout"


class ProtocolError(TransportError):
    """ProtocolError: the server's answer breaks the API's protocol (a
    malformed NDJSON line, a stream that ends without its last line)."""

    code = "protocol"


class NotFoundError(APIError):
    """NotFoundError: not_found (404), the session (or the route) does not exist."""

    code = "not_found"
    default_status = 404


class SpecMismatchError(APIError):
    """SpecMismatchError: spec_mismatch (409), the running sandbox differs from the provision request."""

    code = "spec_mismatch"
    default_status = 409


class FileNotExistError(APIError):
    """FileNotExistError: file_not_exist (404), the path does not exist in the sandbox."""

    code = "file_not_exist"
    default_status = 404


class IsDirectoryError(APIError):
    """IsDirectoryError: is_directory (422), the path is a directory."""

    code = "is_directory"
    default_status = 422


class NotDirectoryError(APIError):
    """NotDirectoryError: not_directory (422), a component of the path is not a directory."""

    code = "not_directory"
    default_status = 422


class NotRegularFileError(APIError):
    """NotRegularFileError: not_regular_file (422), the path is not a regular file."""

    code = "not_regular_file"
    default_status = 422


class NotReplaceableError(APIError):
    """NotReplaceableError: not_replaceable (422), the path cannot be replaced (e.g. a mount point)."""

    code = "not_replaceable"
    default_status = 422


class NotWritableError(APIError):
    """NotWritableError: not_writable (422), the sandbox's user may not write there."""

    code = "not_writable"
    default_status = 422


class FileTooLargeError(APIError):
    """FileTooLargeError: file_too_large (413), over a size limit."""

    code = "file_too_large"
    default_status = 413


class NotReadableError(APIError):
    """NotReadableError: not_readable (422), the sandbox's user may not read it."""

    code = "not_readable"
    default_status = 422


class ImageUnavailableError(APIError):
    """ImageUnavailableError: image_unavailable (422), the image reference is invalid or cannot be pulled."""

    code = "image_unavailable"
    default_status = 422


class ImageUnusableError(APIError):
    """ImageUnusableError: image_unusable (422), the image has no /bin/bash."""

    code = "image_unusable"
    default_status = 422


class GateUidImageError(APIError):
    """GateUidImageError: gate_uid_image (422), a limited session's image runs as the gate uid."""

    code = "gate_uid_image"
    default_status = 422


class InvalidWorkdirError(APIError):
    """InvalidWorkdirError: invalid_workdir (422), the workdir is a file in the image, or under one."""

    code = "invalid_workdir"
    default_status = 422


class InvalidArgumentError(APIError):
    """InvalidArgumentError: invalid_argument (400), the request is malformed."""

    code = "invalid_argument"
    default_status = 400


class LengthRequiredError(APIError):
    """LengthRequiredError: length_required (411), the body needs a Content-Length."""

    code = "length_required"
    default_status = 411


class NotImplementedAPIError(APIError):
    """NotImplementedAPIError: not_implemented (501), the executor cannot do this (no checkpoint store, no
    signing key). Not NotImplementedError, which would shadow the built-in."""

    code = "not_implemented"
    default_status = 501


class UnauthorizedError(APIError):
    """UnauthorizedError: unauthorized (401), the API token is missing or wrong."""

    code = "unauthorized"
    default_status = 401


class MethodNotAllowedError(APIError):
    """MethodNotAllowedError: method_not_allowed (405), the route has no such method."""

    code = "method_not_allowed"
    default_status = 405


class InternalError(APIError):
    """InternalError: internal (500), the executor failed; its log has the reason."""

    code = "internal"
    default_status = 500


class IncompleteBodyError(APIError):
    """IncompleteBodyError: incomplete_body (400), the body was shorter than its Content-Length."""

    code = "incomplete_body"
    default_status = 400


class RequestTimeoutError(APIError):
    """RequestTimeoutError: request_timeout (408), the body stalled past SANDGATE_BODY_IDLE_TIMEOUT."""

    code = "request_timeout"
    default_status = 408


class BusyError(APIError):
    """BusyError: busy (503), the executor is at a limit; retry after retry_after seconds."""

    code = "busy"
    default_status = 503


class CheckpointTooLargeError(APIError):
    """CheckpointTooLargeError: checkpoint_too_large (413), the workdir is over SANDGATE_CHECKPOINT_MAX_BYTES."""

    code = "checkpoint_too_large"
    default_status = 413


class CheckpointUnreadableError(APIError):
    """CheckpointUnreadableError: checkpoint_unreadable (409), the stored checkpoint cannot be restored."""

    code = "checkpoint_unreadable"
    default_status = 409


class NoAgentError(APIError):
    """NoAgentError: no_agent (501), the sandbox has no in-sandbox agent."""

    code = "no_agent"
    default_status = 501


class ProcNotFoundError(APIError):
    """ProcNotFoundError: proc_not_found (404), no such proc in the session."""

    code = "proc_not_found"
    default_status = 404


class TooManyProcsError(APIError):
    """TooManyProcsError: too_many_procs (429), 64 procs run in this sandbox."""

    code = "too_many_procs"
    default_status = 429


class ProcExitedError(APIError):
    """ProcExitedError: proc_exited (409), the proc has exited."""

    code = "proc_exited"
    default_status = 409


class StdinClosedError(APIError):
    """StdinClosedError: stdin_closed (409), the proc's stdin is closed."""

    code = "stdin_closed"
    default_status = 409


class PortClosedError(APIError):
    """PortClosedError: port_closed (502), nothing listens on the port in the sandbox."""

    code = "port_closed"
    default_status = 502


class IsolationUnavailableError(APIError):
    """IsolationUnavailableError: isolation_unavailable (422), the backend cannot give the isolation asked for."""

    code = "isolation_unavailable"
    default_status = 422


class TooManyStreamsError(APIError):
    """TooManyStreamsError: too_many_streams (429), the session has as many streams as it may."""

    code = "too_many_streams"
    default_status = 429


#: ERRORS maps each error code of the API to its class.
ERRORS: dict[str, type[APIError]] = {
    cls.code: cls
    for cls in (
        NotFoundError, SpecMismatchError, FileNotExistError, IsDirectoryError, NotDirectoryError,
        NotRegularFileError, NotReplaceableError, NotWritableError, FileTooLargeError, NotReadableError,
        ImageUnavailableError, ImageUnusableError, GateUidImageError, InvalidWorkdirError,
        InvalidArgumentError, LengthRequiredError, NotImplementedAPIError, UnauthorizedError,
        MethodNotAllowedError, InternalError, IncompleteBodyError, RequestTimeoutError, BusyError,
        CheckpointTooLargeError, CheckpointUnreadableError, NoAgentError, ProcNotFoundError,
        TooManyProcsError, ProcExitedError, StdinClosedError, PortClosedError, TooManyStreamsError,
        IsolationUnavailableError,
    )
}

# The error body the SDK reads is bounded, as the Go client's (maxErrorBody).
MAX_ERROR_BODY = 64 << 10


def api_error(code: str, message: str, status: Optional[int] = None,
              headers: Optional[Mapping[str, str]] = None) -> APIError:
    """api_error returns the exception of an error answer (or of an
    ``error`` line in a stream, which has no status: the code's own is
    used). A ``busy`` answer carries its Retry-After as ``retry_after``."""
    cls = ERRORS.get(code, APIError)
    err = cls(message, code=code, status=status)
    if headers is not None:
        retry = headers.get("retry-after")
        if retry is not None and retry.isdigit():
            err.retry_after = int(retry)
    return err


def decode_error(status: int, body: bytes, headers: Optional[Mapping[str, str]] = None) -> APIError:
    """decode_error reads a non-2xx answer. A body that is not the API's
    error shape (a proxy's page) is still an APIError with the status, as in
    the Go client's decodeError: ``internal`` with the status named."""
    try:
        detail = json.loads(body[:MAX_ERROR_BODY])["error"]
        code, message = detail["code"], detail["message"]
        if not isinstance(code, str) or not code or not isinstance(message, str):
            raise ValueError("not the API's error shape")
    except (ValueError, KeyError, TypeError):
        return InternalError(f"unexpected answer: HTTP {status}", status=status)
    return api_error(code, message, status, headers)
