"""What the sync and the async client share and that does no I/O: routes,
request bodies, the decoding of streamed lines, and the tar of a batch write.

Keeping it here is what lets the two clients stay thin and alike: each of
their methods names its operation, hands its arguments to a function of this
module, and sends what comes back.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import tarfile
from dataclasses import dataclass
from typing import (IO, Any, AsyncIterable, AsyncIterator, Iterable, Iterator, Literal, Mapping, Optional,
                    Sequence, Union)
from urllib.parse import quote

from . import errors
from ._schema import OPERATIONS, ExecResult, ExecStreamEventResult, ProcInfo, ProcRequest, SignPortURLResponse

#: DEFAULT_URL is the executor's default address (``make run``), used when
#: neither an argument nor SANDGATE_URL names one.
DEFAULT_URL = "http://127.0.0.1:7070"

#: CHUNK is the size of the pieces a streamed upload reads from its source
#: and a download hands out: large enough that 256 MiB is a few thousand
#: writes, small enough that nothing near a file's size is ever held.
CHUNK = 256 << 10

#: MAX_LINE bounds one NDJSON line. A line carries one piece of output, far
#: below this (as in the Go client, whose scanner stops at 8 MiB); a longer
#: one is a broken server, not a reason to grow without bound.
MAX_LINE = 8 << 20

#: MAX_WS_MESSAGE bounds a WebSocket message the SDK accepts (the Go
#: client's attach read limit is 8 MiB; an output piece is far smaller).
MAX_WS_MESSAGE = 16 << 20

Stream = Literal["stdout", "stderr"]

#: Data is what an upload takes: the bytes themselves (str as UTF-8), a
#: binary file object read piece by piece, or an iterable of byte pieces.
Data = Union[bytes, bytearray, memoryview, str, IO[bytes], Iterable[bytes]]

#: AsyncData is what the async client's uploads take: Data, or an async
#: iterable of byte pieces.
AsyncData = Union[Data, AsyncIterable[bytes]]

#: FileData is one member of a batch write: its bytes, or a file object of
#: known size.
FileData = Union[bytes, bytearray, str, IO[bytes]]


class Unset:
    """Unset is the type of UNSET, the default of a ``timeout`` argument:
    the client's own timeout applies. ``None`` means no timeout at all."""

    _instance: Optional["Unset"] = None

    def __new__(cls) -> "Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()

#: Timeout is a call's ``timeout``: seconds, None for none, or UNSET.
Timeout = Union[float, None, Unset]


#: SignedURL is signPortURL's answer: ``url`` is absolute as the request
#: reached the executor, ``path`` the same without scheme and host,
#: ``expires_at`` RFC 3339.
SignedURL = SignPortURLResponse


@dataclass(frozen=True)
class OutputChunk:
    """OutputChunk is one piece of a command's output, exact to the byte.

    ``offset`` is its place in its stream; ``dropped`` (proc output only)
    counts the bytes before it that the proc's ring no longer held.
    """

    stream: Stream
    offset: int
    data: bytes
    dropped: int = 0

    @property
    def text(self) -> str:
        """text is the piece as text, invalid UTF-8 as U+FFFD."""
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class AttachOutput:
    """AttachOutput is one piece of an attached proc's output. An attach
    carries no offsets (the WebSocket's order is the stream's)."""

    stream: Stream
    data: bytes

    @property
    def text(self) -> str:
        """text is the piece as text, invalid UTF-8 as U+FFFD."""
        return self.data.decode("utf-8", "replace")


def base_url(url: Optional[str]) -> str:
    """base_url is the API's base URL: url, SANDGATE_URL, or DEFAULT_URL,
    without a trailing slash. Only http and https are accepted, as by the Go
    client's NewClient."""
    url = url or os.environ.get("SANDGATE_URL") or DEFAULT_URL
    if not (url.startswith("http://") or url.startswith("https://")) or "://" == url[-3:]:
        raise ValueError(f"api url {url!r}: must be an absolute http or https URL")
    return url.rstrip("/")


def token_from_env(token: Optional[str]) -> Optional[str]:
    """token_from_env is token, or SANDGATE_API_TOKEN (what the CLI reads)."""
    return token if token is not None else os.environ.get("SANDGATE_API_TOKEN") or None


def route(base: str, operation: str, params: Mapping[str, Union[str, int]]) -> tuple[str, str]:
    """route returns the method and absolute URL of an operation of
    openapi.json, its path parameters escaped: an id is never a path of its
    own, so a malformed one reaches the server as it is and gets the
    server's answer (400 invalid_argument), as any other client's would."""
    method, template = OPERATIONS[operation]
    path = template
    for name, value in params.items():
        path = path.replace("{" + name + "}", quote(str(value), safe=""))
    if "{" in path:
        raise TypeError(f"{operation}: a path parameter is missing in {path}")
    return method, base + path


def new_session_id(prefix: str = "ses") -> str:
    """new_session_id returns a fresh session id: prefix, '_', then 26
    random base-32 characters (the shape of the Go side's domain.NewID)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    return prefix + "_" + "".join(secrets.choice(alphabet) for _ in range(26))


def flag(value: bool) -> Optional[str]:
    """flag is a boolean query parameter: "true", or absent."""
    return "true" if value else None


def query(**params: Any) -> dict[str, str]:
    """query drops the parameters that are None, so that an absent option
    stays absent on the wire."""
    return {k: str(v) for k, v in params.items() if v is not None}


def exec_body(command: str, timeout_ms: Optional[int]) -> dict[str, Any]:
    """exec_body is an ExecRequest."""
    body: dict[str, Any] = {"command": command}
    if timeout_ms is not None:
        body["timeout_ms"] = timeout_ms
    return body


def proc_body(command: str, tty: bool, cols: Optional[int], rows: Optional[int], ring_bytes: Optional[int],
              tag: Optional[str]) -> ProcRequest:
    """proc_body is a ProcRequest, absent options left out."""
    body: ProcRequest = {"command": command}
    if tty:
        body["tty"] = True
    if cols is not None:
        body["cols"] = cols
    if rows is not None:
        body["rows"] = rows
    if ring_bytes is not None:
        body["ring_bytes"] = ring_bytes
    if tag is not None:
        body["tag"] = tag
    return body


def output_bytes(result: ExecResult, stream: Stream = "stdout") -> bytes:
    """output_bytes is a stream of an exec's result, exact: from its
    ``*_base64`` field when the output was not UTF-8 (its text field then
    holds a display form)."""
    encoded = result.get(f"{stream}_base64")
    if isinstance(encoded, str):
        return base64.b64decode(encoded)
    return result[stream].encode("utf-8")


def chunk_of(piece: Mapping[str, Any]) -> OutputChunk:
    """chunk_of decodes an ``output`` line's piece, exact to the byte."""
    try:
        stream = piece["stream"]
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"unknown stream {stream!r}")
        encoded = piece.get("data_base64")
        data = base64.b64decode(encoded, validate=True) if encoded is not None else piece["text"].encode("utf-8")
        return OutputChunk(stream, int(piece["offset"]), data, int(piece.get("dropped", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.ProtocolError(f"a malformed output piece: {exc}") from exc


def parse_line(line: bytes) -> dict[str, Any]:
    """parse_line decodes one NDJSON line into its event object."""
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise errors.ProtocolError(f"a malformed line: {exc}") from exc
    if not isinstance(event, dict):
        raise errors.ProtocolError("a line that is not an object")
    return event


class Lines:
    """Lines splits a body's bytes into NDJSON lines as they arrive, one
    line held at most (MAX_LINE)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """feed adds data and returns the lines it completed."""
        self._buf += data
        lines: list[bytes] = []
        start = 0
        while True:
            end = self._buf.find(b"\n", start)
            if end < 0:
                break
            if end > start:
                lines.append(bytes(self._buf[start:end]))
            start = end + 1
        del self._buf[:start]
        if len(self._buf) > MAX_LINE:
            raise errors.ProtocolError(f"a line longer than {MAX_LINE} bytes")
        return lines

    def finish(self) -> list[bytes]:
        """finish returns the last line if the body did not end with a
        newline."""
        rest = bytes(self._buf).strip()
        self._buf.clear()
        return [rest] if rest else []


class ExecDecoder:
    """ExecDecoder turns exec:stream's events into OutputChunk then the
    result, checking each piece's place as the Go client does: the pieces of
    a stream are contiguous and add up to the lengths the result reports."""

    def __init__(self) -> None:
        self._seen = {"stdout": 0, "stderr": 0}
        self.result: Optional[ExecStreamEventResult] = None

    def event(self, event: Mapping[str, Any]) -> Union[OutputChunk, ExecStreamEventResult, None]:
        """event returns what a line yields: a chunk, the result (the last
        line), or None (a keepalive); an ``error`` line raises its error."""
        if "output" in event:
            chunk = chunk_of(event["output"])
            if chunk.offset != self._seen[chunk.stream]:
                raise errors.ProtocolError(
                    f"{chunk.stream} piece at offset {chunk.offset} after {self._seen[chunk.stream]} bytes")
            self._seen[chunk.stream] += len(chunk.data)
            return chunk
        if "error" in event:
            raise stream_error(event["error"])
        if "result" in event:
            result = event["result"]
            if (result.get("stdout_bytes"), result.get("stderr_bytes")) != (self._seen["stdout"], self._seen["stderr"]):
                raise errors.ProtocolError(
                    f"{self._seen['stdout']}+{self._seen['stderr']} bytes arrived, the result says "
                    f"{result.get('stdout_bytes')}+{result.get('stderr_bytes')}")
            self.result = result
            return self.result
        return None


def proc_event(event: Mapping[str, Any]) -> Union[OutputChunk, ProcInfo, None]:
    """proc_event turns a proc output line into a chunk, the proc as the
    read ended (the last line), or None (a keepalive); an ``error`` line
    raises its error."""
    if "output" in event:
        return chunk_of(event["output"])
    if "error" in event:
        raise stream_error(event["error"])
    if "end" in event:
        end: ProcInfo = event["end"]
        return end
    return None


def stream_error(detail: Any) -> errors.APIError:
    """stream_error is the exception of an ``error`` line (or an attach's
    error message): the API's error, with its code's status."""
    if not isinstance(detail, Mapping):
        return errors.InternalError("a malformed error line")
    return errors.api_error(str(detail.get("code", "internal")), str(detail.get("message", "")))


def attach_message(message: Union[str, bytes]) -> Union[AttachOutput, ProcInfo, None]:
    """attach_message decodes one WebSocket message of an attach: a binary
    output piece (its first byte the stream), or the text end message (the
    proc as it ended, or an error, which raises)."""
    if isinstance(message, bytes):
        if not message:
            return None
        return AttachOutput("stderr" if message[0] == 2 else "stdout", message[1:])
    try:
        end = json.loads(message)
    except ValueError as exc:
        raise errors.ProtocolError("attach: a malformed end message") from exc
    if isinstance(end, dict) and end.get("error") is not None:
        raise stream_error(end["error"])
    if not isinstance(end, dict) or not isinstance(end.get("end"), dict):
        raise errors.ProtocolError("attach: an end message without the proc")
    info: ProcInfo = end["end"]
    return info


def control(kind: str, value: Any) -> str:
    """control is an attach's text control message."""
    return json.dumps({kind: value})


# -- upload bodies ---------------------------------------------------------

def source_size(data: Data, size: Optional[int]) -> Optional[int]:
    """source_size is the byte length of an upload: size when given, else
    what the source knows of itself (bytes, a seekable file's remainder), else
    None (an iterable, a pipe)."""
    if size is not None:
        if size < 0:
            raise ValueError(f"size {size}: must be a length")
        return size
    if isinstance(data, str):
        return len(data.encode("utf-8"))
    if isinstance(data, (bytes, bytearray)):
        return len(data)
    if isinstance(data, memoryview):
        return data.nbytes
    if hasattr(data, "read"):
        f: Any = data
        try:
            return int(os.fstat(f.fileno()).st_size - f.tell())
        except (AttributeError, OSError, ValueError):
            pass
        try:
            here = f.tell()
            end = f.seek(0, os.SEEK_END)
            f.seek(here)
            return int(end - here)
        except (AttributeError, OSError, ValueError):
            return None
    return None


def iter_source(data: Data, size: Optional[int] = None) -> Iterator[bytes]:
    """iter_source yields an upload's bytes piece by piece, never more than
    CHUNK of a file at once, and at most size bytes when size is given (a
    file that grew since is cut at its announced length)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        for start in range(0, len(view) if size is None else min(size, len(view)), CHUNK):
            end = start + CHUNK if size is None else min(start + CHUNK, size)
            yield bytes(view[start:end])
        return
    left = size
    if hasattr(data, "read"):
        f: Any = data
        while left is None or left > 0:
            piece = f.read(CHUNK if left is None else min(CHUNK, left))
            if not piece:
                return
            if left is not None:
                left -= len(piece)
            yield bytes(piece)
        return
    for piece in data:
        if left is not None:
            piece = piece[:left]
            left -= len(piece)
        if piece:
            yield bytes(piece)
        if left == 0:
            return


async def aiter_source(data: AsyncData, size: Optional[int] = None) -> AsyncIterator[bytes]:
    """aiter_source is iter_source for the async client: an async iterable
    is read as it comes; a file's reads run in a worker thread (in_thread)."""
    if hasattr(data, "__aiter__"):
        left = size
        async for piece in data:
            if left is not None:
                piece = piece[:left]
                left -= len(piece)
            if piece:
                yield bytes(piece)
            if left == 0:
                return
        return
    if hasattr(data, "read"):
        async for piece in in_thread(iter_source(data, size)):
            yield piece
        return
    for piece in iter_source(data, size):
        yield piece


def _next_piece(pieces: Iterator[bytes]) -> Optional[bytes]:
    return next(pieces, None)


async def in_thread(pieces: Iterable[bytes]) -> AsyncIterator[bytes]:
    """in_thread yields a blocking iterator's pieces (a file's reads, a
    batch's tar) from a worker thread, one piece at a time, so that a slow
    disk does not stall the event loop."""
    import asyncio

    it = iter(pieces)
    while True:
        piece = await asyncio.to_thread(_next_piece, it)
        if piece is None:
            return
        yield piece


#: Files is a batch write's members: absolute paths to their data.
Files = Union[Mapping[str, FileData], Iterable[tuple[str, FileData]]]


def batch_members(files: Files) -> list[tuple[str, FileData, int]]:
    """batch_members lists a batch write's members with their sizes, which
    a tar header needs before the member's bytes."""
    items: Iterable[tuple[str, FileData]] = files.items() if isinstance(files, Mapping) else files
    members = []
    for name, data in items:
        size = source_size(data, None)
        if size is None:
            raise ValueError(f"{name}: a batch member needs a known size (bytes, or a seekable file)")
        members.append((name, data, size))
    return members


def iter_tar(members: Sequence[tuple[str, FileData, int]]) -> Iterator[bytes]:
    """iter_tar yields a tar of regular 0644 members (as the Go client's
    writeTar), produced as it is sent: a member's bytes are read from its
    source piece by piece, never all at once. PAX headers carry any name."""
    for name, data, size in members:
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = 0o644
        info.type = tarfile.REGTYPE
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        sent = 0
        for piece in iter_source(data, size):
            sent += len(piece)
            yield piece
        if sent != size:
            raise ValueError(f"{name}: {sent} bytes read, {size} announced")
        if size % tarfile.BLOCKSIZE:
            yield tarfile.NUL * (tarfile.BLOCKSIZE - size % tarfile.BLOCKSIZE)
    yield tarfile.NUL * (2 * tarfile.BLOCKSIZE)
