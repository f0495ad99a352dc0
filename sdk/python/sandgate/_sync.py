"""The sync client, ``sandgate.Client``."""

from __future__ import annotations

import threading
from typing import IO, Any, Iterator, Mapping, Optional, Self, Union

import httpx

from . import _core, _http, _ws, errors
from ._core import UNSET, AttachOutput, Data, OutputChunk, SignedURL, Timeout
from ._schema import (ExecResult, ExecStreamEventResult, FileInfo, FileList, ListProcsResponse, ListSessionsResponse,
                      ProcInfo, SessionInfo, SessionRequest, SignPortURLRequest)

Route = tuple[str, str]


class _Response:
    """_Response is an open streamed answer: its pieces are read as the
    caller takes them, and it is closed at its end, on close(), or when the
    with-block that holds it ends."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        self._response = response
        self._what = what

    def _pieces(self) -> Iterator[bytes]:
        try:
            with _http.mapped(self._what):
                yield from self._response.iter_bytes()
        finally:
            self.close()

    def close(self) -> None:
        """close ends the answer; the rest is not read."""
        self._response.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ByteStream(_Response):
    """ByteStream is a streamed download (readFile, export): iterate it for
    its pieces, or ``read_into`` a file object. ``size`` is the length the
    server announced (None for a tar, whose length is not known ahead)."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        length = response.headers.get("Content-Length")
        self.size: Optional[int] = int(length) if length is not None and length.isdigit() else None

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces()

    def read_into(self, dest: IO[bytes]) -> int:
        """read_into writes every piece to dest as it arrives and returns the
        number of bytes."""
        n = 0
        for piece in self:
            dest.write(piece)
            n += len(piece)
        return n

    def read(self) -> bytes:
        """read returns the whole answer: for small files only."""
        return b"".join(self)


class ExecStream(_Response):
    """ExecStream is a running exec:stream. Iterating it yields each
    OutputChunk as the command writes it, then, last, the result
    (ExecStreamEventResult); an error line raises its SandgateError. Closing
    it early (or leaving its with-block) cancels the command."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        self._decoder = _core.ExecDecoder()

    @property
    def result(self) -> Optional[ExecStreamEventResult]:
        """result is the command's result, once the stream has ended."""
        return self._decoder.result

    def __iter__(self) -> Iterator[Union[OutputChunk, ExecStreamEventResult]]:
        for event in _events(self._pieces()):
            item = self._decoder.event(event)
            if item is not None:
                yield item
            if self._decoder.result is not None:
                self.close()
                return
        raise errors.ProtocolError(f"{self._what}: the answer ended without a result")


class ProcOutputStream(_Response):
    """ProcOutputStream is a proc's output (procOutput). Iterating it
    yields each OutputChunk, then, last, the proc as the read ended (a
    ProcInfo: still running when a read without follow caught up)."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        #: end is the proc as the read ended, once it has.
        self.end: Optional[ProcInfo] = None

    def __iter__(self) -> Iterator[Union[OutputChunk, ProcInfo]]:
        for event in _events(self._pieces()):
            item = _core.proc_event(event)
            if isinstance(item, OutputChunk):
                yield item
            elif item is not None:
                self.end = item
                self.close()
                yield item
                return
        raise errors.ProtocolError(f"{self._what}: the answer ended without its end")


def _events(pieces: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """_events yields the NDJSON events of an answer's pieces."""
    lines = _core.Lines()
    for piece in pieces:
        for line in lines.feed(piece):
            yield _core.parse_line(line)
    for line in lines.finish():
        yield _core.parse_line(line)


class Attachment:
    """Attachment is a live attach to a proc (attachProc), the sync face of
    AsyncAttachment: iterate it for each AttachOutput then the ProcInfo it
    ended with; ``write``, ``resize``, ``signal``, ``close_stdin`` drive the
    proc; ``close`` detaches (the proc runs on)."""

    def __init__(self, loop: _ws.LoopThread, inner: _ws.AsyncAttachment) -> None:
        self._loop = loop
        self._inner = inner

    @property
    def end(self) -> Optional[ProcInfo]:
        """end is the proc as it ended, once the attach has ended."""
        return self._inner.end

    def recv(self, timeout: Optional[float] = None) -> Union[AttachOutput, ProcInfo]:
        """recv returns the next piece, or the ProcInfo (last); a timeout
        raises CallTimeoutError and leaves the attach open."""
        return self._loop.run(self._inner.recv(timeout))

    def __iter__(self) -> Iterator[Union[AttachOutput, ProcInfo]]:
        while self._inner.end is None:
            yield self.recv()

    def write(self, data: Union[bytes, str]) -> None:
        """write sends data to the proc's stdin."""
        self._loop.run(self._inner.write(data))

    def resize(self, cols: int, rows: int) -> None:
        """resize sets the proc's terminal size."""
        self._loop.run(self._inner.resize(cols, rows))

    def signal(self, signal: str) -> None:
        """signal sends signal (TERM, KILL, INT, …) to the proc's group."""
        self._loop.run(self._inner.signal(signal))

    def close_stdin(self) -> None:
        """close_stdin closes the proc's stdin (a PTY's gets ^D)."""
        self._loop.run(self._inner.close_stdin())

    def close(self) -> None:
        """close detaches; the proc runs on."""
        self._loop.run(self._inner.close())

    def __enter__(self) -> "Attachment":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PortConnection:
    """PortConnection is a TCP connection into the sandbox over connectPort,
    the sync face of AsyncPortConnection: ``recv`` returns b"" at its end."""

    def __init__(self, loop: _ws.LoopThread, inner: _ws.AsyncPortConnection) -> None:
        self._loop = loop
        self._inner = inner

    def send(self, data: bytes) -> None:
        """send writes data to the connection."""
        self._loop.run(self._inner.send(data))

    def recv(self, timeout: Optional[float] = None) -> bytes:
        """recv returns the next bytes, b"" at the connection's end."""
        return self._loop.run(self._inner.recv(timeout))

    def __iter__(self) -> Iterator[bytes]:
        while True:
            data = self.recv()
            if not data:
                return
            yield data

    def close(self) -> None:
        """close ends the connection."""
        self._loop.run(self._inner.close())

    def __enter__(self) -> "PortConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """Client is the sync client of the executor API.

    ``base_url`` defaults to SANDGATE_URL (else http://127.0.0.1:7070),
    ``token`` to SANDGATE_API_TOKEN. ``timeout`` (seconds, None for none)
    bounds each step of every call — connecting, sending a piece, waiting for
    the next piece of the answer — and each call takes a ``timeout`` of its
    own; exec and wait_proc wait on the sandbox without a read timeout
    unless given one. Every error is a SandgateError (sandgate.errors). Use it
    as a context manager, or close() it.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: Optional[float] = 60.0, transport: Optional[httpx.BaseTransport] = None) -> None:
        self._base = _core.base_url(base_url)
        self._token = _core.token_from_env(token)
        self._timeout = timeout
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        self._http = httpx.Client(headers=headers, transport=transport, follow_redirects=False)
        self._loop: Optional[_ws.LoopThread] = None
        self._loop_lock = threading.Lock()

    def close(self) -> None:
        """close releases the client's connections and its WebSocket thread."""
        self._http.close()
        if self._loop is not None:
            self._loop.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------

    def _op(self, operation: str, **params: Union[str, int]) -> Route:
        """_op is the method and URL of an operation of openapi.json (every
        method names its operationId here, literally)."""
        return _core.route(self._base, operation, params)

    def _send(self, route: Route, *, timeout: Timeout, waits: bool = False, params: Optional[Mapping[str, str]] = None,
              json: Any = None, content: Any = None, headers: Optional[Mapping[str, str]] = None) -> httpx.Response:
        """_send sends a request and returns its 2xx answer unread; any
        other answer raises its APIError."""
        method, url = route
        what = _http.what(route)
        with _http.mapped(what):
            request = self._http.build_request(method, url, params=params, json=json, content=content, headers=headers,
                                               timeout=_http.timeout_of(self._timeout, timeout, waits))
            response = self._http.send(request, stream=True)
            if response.is_success:
                return response
            try:
                body = bytearray()
                for piece in response.iter_bytes():
                    body += piece
                    if len(body) >= errors.MAX_ERROR_BODY:
                        break
            finally:
                response.close()
        raise errors.decode_error(response.status_code, bytes(body), response.headers)

    def _call(self, route: Route, *, timeout: Timeout, waits: bool = False, **kw: Any) -> Any:
        """_call sends a request and returns its JSON answer (None for an
        empty one)."""
        response = self._send(route, timeout=timeout, waits=waits, **kw)
        try:
            with _http.mapped(_http.what(route)):
                body = response.read()
        finally:
            response.close()
        if not body:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise errors.ProtocolError(f"{_http.what(route)}: the answer is not JSON: {exc}") from exc

    def _ws_loop(self) -> _ws.LoopThread:
        """_ws_loop is the client's WebSocket thread, started by the first
        WebSocket call (under a lock: threads may share a client)."""
        with self._loop_lock:
            if self._loop is None:
                self._loop = _ws.LoopThread()
            return self._loop

    def _ws_timeout(self, timeout: Timeout) -> Optional[float]:
        return self._timeout if isinstance(timeout, _core.Unset) else timeout

    # -- sessions ----------------------------------------------------------

    def provision_session(self, session_id: str, request: Optional[SessionRequest] = None, *,
                          timeout: Timeout = UNSET) -> SessionInfo:
        """provision_session creates the session's sandbox, or adopts the
        one it has (idempotent; a different spec is SpecMismatchError)."""
        info: SessionInfo = self._call(self._op("provisionSession", id=session_id), json=dict(request or {}),
                                       timeout=timeout, waits=True)
        return info

    def create_session(self, request: Optional[SessionRequest] = None, *, prefix: str = "ses",
                       timeout: Timeout = UNSET) -> SessionInfo:
        """create_session provisions a session under a fresh id (prefix_…)."""
        return self.provision_session(_core.new_session_id(prefix), request, timeout=timeout)

    def get_session(self, session_id: str, *, timeout: Timeout = UNSET) -> SessionInfo:
        """get_session returns the running session (NotFoundError if none)."""
        info: SessionInfo = self._call(self._op("getSession", id=session_id), timeout=timeout)
        return info

    def list_sessions(self, *, timeout: Timeout = UNSET) -> list[SessionInfo]:
        """list_sessions returns the sessions this executor owns."""
        answer: ListSessionsResponse = self._call(self._op("listSessions"), timeout=timeout)
        return answer["sessions"]

    def delete_session(self, session_id: str, *, checkpoint: bool = False, timeout: Timeout = UNSET) -> None:
        """delete_session reaps the session (success if it never existed);
        checkpoint=True keeps its workdir for the next provision."""
        self._call(self._op("deleteSession", id=session_id), params=_core.query(checkpoint=_core.flag(checkpoint)),
                   timeout=timeout, waits=True)

    # -- exec --------------------------------------------------------------

    def exec(self, session_id: str, command: str, *, timeout_ms: Optional[int] = None,
             timeout: Timeout = UNSET) -> ExecResult:
        """exec runs command with /bin/bash -c in the workdir and returns its
        result (output_bytes() gives a stream's exact bytes). timeout_ms is
        the command's; timeout the call's (none by default)."""
        result: ExecResult = self._call(self._op("exec", id=session_id), json=_core.exec_body(command, timeout_ms),
                                        timeout=timeout, waits=True)
        return result

    def exec_stream(self, session_id: str, command: str, *, timeout_ms: Optional[int] = None,
                    timeout: Timeout = UNSET) -> ExecStream:
        """exec_stream runs command as exec does and returns its output as
        it is produced: an ExecStream yielding OutputChunk then the result.
        The server sends a keepalive every 15 s, so timeout bounds silence."""
        route = self._op("execStream", id=session_id)
        response = self._send(route, json=_core.exec_body(command, timeout_ms), timeout=timeout)
        return ExecStream(response, _http.what(route))

    # -- files -------------------------------------------------------------

    def read_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None,
                  timeout: Timeout = UNSET) -> bytes:
        """read_file returns a whole file: for small files (see open_file)."""
        with self.open_file(session_id, path, max_bytes=max_bytes, timeout=timeout) as stream:
            return stream.read()

    def open_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None,
                  timeout: Timeout = UNSET) -> ByteStream:
        """open_file streams a regular file out: a ByteStream of its pieces,
        ``size`` its length. Over max_bytes is FileTooLargeError."""
        route = self._op("readFile", id=session_id)
        response = self._send(route, params=_core.query(path=path, max_bytes=max_bytes), timeout=timeout)
        return ByteStream(response, _http.what(route))

    def download_file(self, session_id: str, path: str, dest: IO[bytes], *, max_bytes: Optional[int] = None,
                      timeout: Timeout = UNSET) -> int:
        """download_file streams a file into dest and returns its size."""
        with self.open_file(session_id, path, max_bytes=max_bytes, timeout=timeout) as stream:
            return stream.read_into(dest)

    def write_file(self, session_id: str, path: str, data: Data, *, size: Optional[int] = None,
                   timeout: Timeout = UNSET) -> None:
        """write_file writes a file atomically, streaming data (bytes, str, a
        binary file object or an iterable of pieces) with its length: size
        when given, else what data knows (an iterable needs size)."""
        length = _core.source_size(data, size)
        if length is None:
            raise ValueError("write_file: the API needs the length of the data: give size")
        self._call(self._op("writeFile", id=session_id), params=_core.query(path=path),
                   content=_core.iter_source(data, length),
                   headers={"Content-Length": str(length), "Content-Type": "application/octet-stream"},
                   timeout=timeout)

    def write_files(self, session_id: str, files: _core.Files, *,
                    timeout: Timeout = UNSET) -> None:
        """write_files writes several files (absolute paths to their bytes,
        or seekable file objects) in one call, as a tar built while it is
        sent."""
        members = _core.batch_members(files)
        self._call(self._op("writeFiles", id=session_id), content=_core.iter_tar(members),
                   headers={"Content-Type": "application/x-tar"}, timeout=timeout)

    def write_archive(self, session_id: str, archive: Data, *, root: Optional[str] = None,
                      timeout: Timeout = UNSET) -> None:
        """write_archive streams a caller's tar into the sandbox: absolute
        member names, or names relative to root (``tar -C dir -cf - .``)."""
        self._call(self._op("writeFiles", id=session_id), params=_core.query(root=root),
                   content=_core.iter_source(archive), headers={"Content-Type": "application/x-tar"},
                   timeout=timeout)

    def stat_file(self, session_id: str, path: str, *, timeout: Timeout = UNSET) -> FileInfo:
        """stat_file describes path as lstat(2) does."""
        info: FileInfo = self._call(self._op("statFile", id=session_id), params=_core.query(path=path),
                                    timeout=timeout)
        return info

    def list_files(self, session_id: str, path: str, *, timeout: Timeout = UNSET) -> list[FileInfo]:
        """list_files lists a directory's entries, sorted by name."""
        answer: FileList = self._call(self._op("listFiles", id=session_id), params=_core.query(path=path),
                                      timeout=timeout)
        return answer["entries"]

    def remove_file(self, session_id: str, path: str, *, recursive: bool = False, timeout: Timeout = UNSET) -> None:
        """remove_file removes a file, a symlink or an empty directory; a
        tree with recursive=True."""
        self._call(self._op("removeFile", id=session_id),
                   params=_core.query(path=path, recursive=_core.flag(recursive)), timeout=timeout)

    def make_directory(self, session_id: str, path: str, *, parents: bool = False, timeout: Timeout = UNSET) -> None:
        """make_directory makes a directory 0755 (parents=True: mkdir -p)."""
        self._call(self._op("makeDirectory", id=session_id),
                   params=_core.query(path=path, parents=_core.flag(parents)), timeout=timeout)

    mkdir = make_directory

    def export(self, session_id: str, root: str, *, timeout: Timeout = UNSET) -> ByteStream:
        """export streams a tar of root out of the sandbox."""
        route = self._op("export", id=session_id)
        return ByteStream(self._send(route, params=_core.query(root=root), timeout=timeout), _http.what(route))

    def export_to(self, session_id: str, root: str, dest: IO[bytes], *, timeout: Timeout = UNSET) -> int:
        """export_to streams a tar of root into dest and returns its size."""
        with self.export(session_id, root, timeout=timeout) as stream:
            return stream.read_into(dest)

    # -- procs -------------------------------------------------------------

    def start_proc(self, session_id: str, command: str, *, tty: bool = False, cols: Optional[int] = None,
                   rows: Optional[int] = None, ring_bytes: Optional[int] = None, tag: Optional[str] = None,
                   timeout: Timeout = UNSET) -> ProcInfo:
        """start_proc starts a background proc (a PTY with tty=True) that
        the sandbox's agent owns past this call."""
        info: ProcInfo = self._call(self._op("startProc", id=session_id),
                                    json=_core.proc_body(command, tty, cols, rows, ring_bytes, tag), timeout=timeout)
        return info

    def list_procs(self, session_id: str, *, timeout: Timeout = UNSET) -> list[ProcInfo]:
        """list_procs returns the session's procs, oldest first."""
        answer: ListProcsResponse = self._call(self._op("listProcs", id=session_id), timeout=timeout)
        return answer["procs"]

    def get_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> ProcInfo:
        """get_proc returns one proc."""
        info: ProcInfo = self._call(self._op("getProc", id=session_id, pid=proc_id), timeout=timeout)
        return info

    def proc_output(self, session_id: str, proc_id: str, *, stream: Optional[str] = None, offset: int = 0,
                    follow: bool = False, timeout: Timeout = UNSET) -> ProcOutputStream:
        """proc_output reads a proc's output from offset (of each stream;
        stream: "stdout" or "stderr", None for both), following it live
        until the proc has exited with follow=True."""
        route = self._op("procOutput", id=session_id, pid=proc_id)
        params = _core.query(stream=stream, follow=_core.flag(follow), **{"from": offset or None})
        return ProcOutputStream(self._send(route, params=params, timeout=timeout), _http.what(route))

    def write_stdin(self, session_id: str, proc_id: str, data: Data, *, close: bool = False,
                    timeout: Timeout = UNSET) -> None:
        """write_stdin streams data into the proc's stdin as it is read (an
        iterable is sent piece by piece); close=True closes stdin after it."""
        self._call(self._op("procStdin", id=session_id, pid=proc_id), params=_core.query(close=_core.flag(close)),
                   content=_core.iter_source(data), headers={"Content-Type": "application/octet-stream"},
                   timeout=timeout)

    def signal_proc(self, session_id: str, proc_id: str, signal: str, *, timeout: Timeout = UNSET) -> None:
        """signal_proc signals the proc's process group (TERM, KILL, INT, …)."""
        self._call(self._op("signalProc", id=session_id, pid=proc_id), params={"signal": signal}, timeout=timeout)

    def resize_proc(self, session_id: str, proc_id: str, cols: int, rows: int, *, timeout: Timeout = UNSET) -> None:
        """resize_proc resizes a PTY proc's terminal."""
        self._call(self._op("resizeProc", id=session_id, pid=proc_id),
                   params={"cols": str(cols), "rows": str(rows)}, timeout=timeout)

    def wait_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> ProcInfo:
        """wait_proc blocks until the proc has exited and returns it (no
        timeout by default)."""
        info: ProcInfo = self._call(self._op("waitProc", id=session_id, pid=proc_id), timeout=timeout, waits=True)
        return info

    def remove_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> None:
        """remove_proc kills the proc's group if it runs, and forgets it."""
        self._call(self._op("removeProc", id=session_id, pid=proc_id), timeout=timeout)

    def attach_proc(self, session_id: str, proc_id: str, *, offset: int = 0, timeout: Timeout = UNSET) -> Attachment:
        """attach_proc attaches to a proc over a WebSocket, its output from
        offset; timeout bounds the handshake."""
        _, url = self._op("attachProc", id=session_id, pid=proc_id)
        if offset:
            url += f"?from={int(offset)}"
        loop = self._ws_loop()
        ws = loop.connect(url, self._token, self._ws_timeout(timeout))
        return Attachment(loop, _ws.AsyncAttachment(ws))

    # -- ports -------------------------------------------------------------

    def connect_port(self, session_id: str, port: int, *, timeout: Timeout = UNSET) -> PortConnection:
        """connect_port opens a TCP connection to port on the sandbox's
        loopback, carried by a WebSocket; timeout bounds the handshake."""
        _, url = self._op("connectPort", id=session_id, port=port)
        loop = self._ws_loop()
        ws = loop.connect(url, self._token, self._ws_timeout(timeout))
        return PortConnection(loop, _ws.AsyncPortConnection(ws))

    def sign_port_url(self, session_id: str, port: int, *, ttl_seconds: Optional[int] = None,
                      timeout: Timeout = UNSET) -> SignedURL:
        """sign_port_url returns a URL of the port's preview that a browser
        opens without the API token until it expires (default an hour)."""
        body: SignPortURLRequest = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        signed: SignedURL = self._call(self._op("signPortURL", id=session_id, port=port), json=body, timeout=timeout)
        return signed
