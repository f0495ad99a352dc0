"""sandgate is the Python SDK of the sandgate executor API.

``Client`` is the sync client, ``AsyncClient`` the asyncio one, with the
same surface: sessions, exec (plain and streamed), files (whole, streamed,
batched), export, background procs (output, stdin, signals, attach over a
WebSocket) and ports (a TCP stream over a WebSocket, signed preview URLs).
Request and answer shapes are the TypedDicts of ``sandgate._schema``,
generated from the executor's openapi.json; every error is a
``SandgateError`` (``sandgate.errors``).
"""

from . import errors
from ._async import AsyncByteStream, AsyncClient, AsyncExecStream, AsyncProcOutputStream
from ._core import UNSET, AttachOutput, OutputChunk, SignedURL, new_session_id, output_bytes
from ._schema import (CredentialRequest, ExecResult, ExecStreamEventResult, FileInfo, Networking, ProcInfo,
                      SessionInfo, SessionRequest)
from ._sync import Attachment, ByteStream, Client, ExecStream, PortConnection, ProcOutputStream
from ._ws import AsyncAttachment, AsyncPortConnection
from .errors import (APIError, CallTimeoutError, ProtocolError, SandgateError, TransportError, NotFoundError,
                     SpecMismatchError, FileNotExistError, IsDirectoryError, NotDirectoryError,
                     NotRegularFileError, NotReplaceableError, NotWritableError, FileTooLargeError,
                     NotReadableError, ImageUnavailableError, ImageUnusableError, GateUidImageError,
                     InvalidWorkdirError, InvalidArgumentError, LengthRequiredError, NotImplementedAPIError,
                     UnauthorizedError, MethodNotAllowedError, InternalError, IncompleteBodyError,
                     RequestTimeoutError, BusyError, CheckpointTooLargeError, CheckpointUnreadableError,
                     NoAgentError, ProcNotFoundError, TooManyProcsError, ProcExitedError, StdinClosedError,
                     PortClosedError, TooManyStreamsError, IsolationUnavailableError)

__all__ = [
    "Client", "AsyncClient", "ByteStream", "AsyncByteStream", "ExecStream", "AsyncExecStream",
    "ProcOutputStream", "AsyncProcOutputStream", "Attachment", "AsyncAttachment", "PortConnection",
    "AsyncPortConnection", "OutputChunk", "AttachOutput", "SignedURL", "UNSET", "new_session_id", "output_bytes",
    "CredentialRequest", "ExecResult", "ExecStreamEventResult", "FileInfo", "Networking", "ProcInfo",
    "SessionInfo", "SessionRequest",
    "errors",
] + errors.__all__[:-3]
