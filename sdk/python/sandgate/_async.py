"""The async client, ``sandgate.AsyncClient``: the sync client's surface,
awaited. Cancelling the task of a call ends the request; cancelling the task
that reads a stream closes the stream (which, for exec:stream, kills the
command)."""

from __future__ import annotations

import asyncio
from typing import IO, Any, AsyncIterable, AsyncIterator, Mapping, Optional, Self, Union

import httpx

from . import _core, _http, _ws, errors
from ._core import UNSET, AsyncData, OutputChunk, SignedURL, Timeout
from ._schema import (ExecResult, ExecStreamEventResult, FileInfo, FileList, ListProcsResponse, ListSessionsResponse,
                      ProcInfo, SessionInfo, SessionRequest, SignPortURLRequest)
from ._ws import AsyncAttachment, AsyncPortConnection

Route = tuple[str, str]


class _AsyncResponse:
    """_AsyncResponse is an open streamed answer, read as the caller takes
    its pieces and closed at its end, on aclose(), when its async with-block
    ends, or when the task reading it is cancelled."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        self._response = response
        self._what = what

    async def _pieces(self) -> AsyncIterator[bytes]:
        try:
            with _http.mapped(self._what):
                async for piece in self._response.aiter_bytes():
                    yield piece
        finally:
            # Shielded: a cancelled reader's close still reaches the socket.
            await asyncio.shield(self.aclose())

    async def aclose(self) -> None:
        """aclose ends the answer; the rest is not read."""
        await self._response.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncByteStream(_AsyncResponse):
    """AsyncByteStream is a streamed download (readFile, export): iterate
    it with ``async for``, or ``read_into`` a file object. ``size`` is the
    announced length (None for a tar)."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        length = response.headers.get("Content-Length")
        self.size: Optional[int] = int(length) if length is not None and length.isdigit() else None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces()

    async def read_into(self, dest: IO[bytes]) -> int:
        """read_into writes every piece to dest as it arrives (in a worker
        thread: a file write may block) and returns the number of bytes."""
        n = 0
        async for piece in self:
            await asyncio.to_thread(dest.write, piece)
            n += len(piece)
        return n

    async def read(self) -> bytes:
        """read returns the whole answer: for small files only."""
        return b"".join([piece async for piece in self])


class AsyncExecStream(_AsyncResponse):
    """AsyncExecStream is a running exec:stream: ``async for`` yields each
    OutputChunk then, last, the result (ExecStreamEventResult); an error line
    raises its SandgateError. Closing it early cancels the command."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        self._decoder = _core.ExecDecoder()

    @property
    def result(self) -> Optional[ExecStreamEventResult]:
        """result is the command's result, once the stream has ended."""
        return self._decoder.result

    async def __aiter__(self) -> AsyncIterator[Union[OutputChunk, ExecStreamEventResult]]:
        async for event in _events(self._pieces()):
            item = self._decoder.event(event)
            if item is not None:
                yield item
            if self._decoder.result is not None:
                await self.aclose()
                return
        raise errors.ProtocolError(f"{self._what}: the answer ended without a result")


class AsyncProcOutputStream(_AsyncResponse):
    """AsyncProcOutputStream is a proc's output: ``async for`` yields each
    OutputChunk then, last, the proc as the read ended (a ProcInfo)."""

    def __init__(self, response: httpx.Response, what: str) -> None:
        super().__init__(response, what)
        #: end is the proc as the read ended, once it has.
        self.end: Optional[ProcInfo] = None

    async def __aiter__(self) -> AsyncIterator[Union[OutputChunk, ProcInfo]]:
        async for event in _events(self._pieces()):
            item = _core.proc_event(event)
            if isinstance(item, OutputChunk):
                yield item
            elif item is not None:
                self.end = item
                await self.aclose()
                yield item
                return
        raise errors.ProtocolError(f"{self._what}: the answer ended without its end")


async def _events(pieces: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """_events yields the NDJSON events of an answer's pieces."""
    lines = _core.Lines()
    async for piece in pieces:
        for line in lines.feed(piece):
            yield _core.parse_line(line)
    for line in lines.finish():
        yield _core.parse_line(line)


class AsyncClient:
    """AsyncClient is the asyncio client of the executor API, with the
    surface of Client (see there for the defaults and timeouts). Use it as
    an async context manager, or aclose() it."""

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: Optional[float] = 60.0, transport: Optional[httpx.AsyncBaseTransport] = None) -> None:
        self._base = _core.base_url(base_url)
        self._token = _core.token_from_env(token)
        self._timeout = timeout
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        self._http = httpx.AsyncClient(headers=headers, transport=transport, follow_redirects=False)

    async def aclose(self) -> None:
        """aclose releases the client's connections."""
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing ----------------------------------------------------------

    def _op(self, operation: str, **params: Union[str, int]) -> Route:
        """_op is the method and URL of an operation of openapi.json (every
        method names its operationId here, literally)."""
        return _core.route(self._base, operation, params)

    async def _send(self, route: Route, *, timeout: Timeout, waits: bool = False,
                    params: Optional[Mapping[str, str]] = None, json: Any = None, content: Any = None,
                    headers: Optional[Mapping[str, str]] = None) -> httpx.Response:
        """_send sends a request and returns its 2xx answer unread; any
        other answer raises its APIError."""
        method, url = route
        what = _http.what(route)
        with _http.mapped(what):
            request = self._http.build_request(method, url, params=params, json=json, content=content, headers=headers,
                                               timeout=_http.timeout_of(self._timeout, timeout, waits))
            response = await self._http.send(request, stream=True)
            if response.is_success:
                return response
            try:
                body = bytearray()
                async for piece in response.aiter_bytes():
                    body += piece
                    if len(body) >= errors.MAX_ERROR_BODY:
                        break
            finally:
                await response.aclose()
        raise errors.decode_error(response.status_code, bytes(body), response.headers)

    async def _call(self, route: Route, *, timeout: Timeout, waits: bool = False, **kw: Any) -> Any:
        """_call sends a request and returns its JSON answer (None for an
        empty one)."""
        response = await self._send(route, timeout=timeout, waits=waits, **kw)
        try:
            with _http.mapped(_http.what(route)):
                body = await response.aread()
        finally:
            await response.aclose()
        if not body:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise errors.ProtocolError(f"{_http.what(route)}: the answer is not JSON: {exc}") from exc

    def _ws_timeout(self, timeout: Timeout) -> Optional[float]:
        return self._timeout if isinstance(timeout, _core.Unset) else timeout

    # -- sessions ----------------------------------------------------------

    async def provision_session(self, session_id: str, request: Optional[SessionRequest] = None, *,
                                timeout: Timeout = UNSET) -> SessionInfo:
        """provision_session creates the session's sandbox, or adopts the
        one it has (idempotent; a different spec is SpecMismatchError)."""
        info: SessionInfo = await self._call(self._op("provisionSession", id=session_id), json=dict(request or {}),
                                             timeout=timeout, waits=True)
        return info

    async def create_session(self, request: Optional[SessionRequest] = None, *, prefix: str = "ses",
                             timeout: Timeout = UNSET) -> SessionInfo:
        """create_session provisions a session under a fresh id (prefix_…)."""
        return await self.provision_session(_core.new_session_id(prefix), request, timeout=timeout)

    async def get_session(self, session_id: str, *, timeout: Timeout = UNSET) -> SessionInfo:
        """get_session returns the running session (NotFoundError if none)."""
        info: SessionInfo = await self._call(self._op("getSession", id=session_id), timeout=timeout)
        return info

    async def list_sessions(self, *, timeout: Timeout = UNSET) -> list[SessionInfo]:
        """list_sessions returns the sessions this executor owns."""
        answer: ListSessionsResponse = await self._call(self._op("listSessions"), timeout=timeout)
        return answer["sessions"]

    async def delete_session(self, session_id: str, *, checkpoint: bool = False, timeout: Timeout = UNSET) -> None:
        """delete_session reaps the session (success if it never existed)."""
        await self._call(self._op("deleteSession", id=session_id),
                         params=_core.query(checkpoint=_core.flag(checkpoint)), timeout=timeout, waits=True)

    # -- exec --------------------------------------------------------------

    async def exec(self, session_id: str, command: str, *, timeout_ms: Optional[int] = None,
                   timeout: Timeout = UNSET) -> ExecResult:
        """exec runs command with /bin/bash -c in the workdir and returns its
        result."""
        result: ExecResult = await self._call(self._op("exec", id=session_id),
                                              json=_core.exec_body(command, timeout_ms), timeout=timeout, waits=True)
        return result

    async def exec_stream(self, session_id: str, command: str, *, timeout_ms: Optional[int] = None,
                          timeout: Timeout = UNSET) -> AsyncExecStream:
        """exec_stream runs command and returns its output as it is
        produced: an AsyncExecStream yielding OutputChunk then the result."""
        route = self._op("execStream", id=session_id)
        response = await self._send(route, json=_core.exec_body(command, timeout_ms), timeout=timeout)
        return AsyncExecStream(response, _http.what(route))

    # -- files -------------------------------------------------------------

    async def read_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None,
                        timeout: Timeout = UNSET) -> bytes:
        """read_file returns a whole file: for small files (see open_file)."""
        async with await self.open_file(session_id, path, max_bytes=max_bytes, timeout=timeout) as stream:
            data: bytes = await stream.read()
            return data

    async def open_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None,
                        timeout: Timeout = UNSET) -> AsyncByteStream:
        """open_file streams a regular file out: an AsyncByteStream."""
        route = self._op("readFile", id=session_id)
        response = await self._send(route, params=_core.query(path=path, max_bytes=max_bytes), timeout=timeout)
        return AsyncByteStream(response, _http.what(route))

    async def download_file(self, session_id: str, path: str, dest: IO[bytes], *, max_bytes: Optional[int] = None,
                            timeout: Timeout = UNSET) -> int:
        """download_file streams a file into dest and returns its size."""
        async with await self.open_file(session_id, path, max_bytes=max_bytes, timeout=timeout) as stream:
            n: int = await stream.read_into(dest)
            return n

    async def write_file(self, session_id: str, path: str, data: AsyncData, *, size: Optional[int] = None,
                         timeout: Timeout = UNSET) -> None:
        """write_file writes a file atomically, streaming data (bytes, str, a
        binary file object, an iterable or async iterable of pieces) with its
        length: size when given, else what data knows."""
        length = size if isinstance(data, AsyncIterable) else _core.source_size(data, size)
        if length is None:
            raise ValueError("write_file: the API needs the length of the data: give size")
        await self._call(self._op("writeFile", id=session_id), params=_core.query(path=path),
                         content=_core.aiter_source(data, length),
                         headers={"Content-Length": str(length), "Content-Type": "application/octet-stream"},
                         timeout=timeout)

    async def write_files(self, session_id: str,
                          files: _core.Files, *,
                          timeout: Timeout = UNSET) -> None:
        """write_files writes several files in one call, as a tar built while
        it is sent."""
        members = _core.batch_members(files)
        await self._call(self._op("writeFiles", id=session_id), content=_core.in_thread(_core.iter_tar(members)),
                         headers={"Content-Type": "application/x-tar"}, timeout=timeout)

    async def write_archive(self, session_id: str, archive: AsyncData, *, root: Optional[str] = None,
                            timeout: Timeout = UNSET) -> None:
        """write_archive streams a caller's tar into the sandbox (names
        absolute, or relative to root)."""
        await self._call(self._op("writeFiles", id=session_id), params=_core.query(root=root),
                         content=_core.aiter_source(archive), headers={"Content-Type": "application/x-tar"},
                         timeout=timeout)

    async def stat_file(self, session_id: str, path: str, *, timeout: Timeout = UNSET) -> FileInfo:
        """stat_file describes path as lstat(2) does."""
        info: FileInfo = await self._call(self._op("statFile", id=session_id), params=_core.query(path=path),
                                          timeout=timeout)
        return info

    async def list_files(self, session_id: str, path: str, *, timeout: Timeout = UNSET) -> list[FileInfo]:
        """list_files lists a directory's entries, sorted by name."""
        answer: FileList = await self._call(self._op("listFiles", id=session_id), params=_core.query(path=path),
                                  timeout=timeout)
        return answer["entries"]

    async def remove_file(self, session_id: str, path: str, *, recursive: bool = False,
                          timeout: Timeout = UNSET) -> None:
        """remove_file removes a file, a symlink or an empty directory; a
        tree with recursive=True."""
        await self._call(self._op("removeFile", id=session_id),
                         params=_core.query(path=path, recursive=_core.flag(recursive)), timeout=timeout)

    async def make_directory(self, session_id: str, path: str, *, parents: bool = False,
                             timeout: Timeout = UNSET) -> None:
        """make_directory makes a directory 0755 (parents=True: mkdir -p)."""
        await self._call(self._op("makeDirectory", id=session_id),
                         params=_core.query(path=path, parents=_core.flag(parents)), timeout=timeout)

    mkdir = make_directory

    async def export(self, session_id: str, root: str, *, timeout: Timeout = UNSET) -> AsyncByteStream:
        """export streams a tar of root out of the sandbox."""
        route = self._op("export", id=session_id)
        return AsyncByteStream(await self._send(route, params=_core.query(root=root), timeout=timeout),
                               _http.what(route))

    async def export_to(self, session_id: str, root: str, dest: IO[bytes], *, timeout: Timeout = UNSET) -> int:
        """export_to streams a tar of root into dest and returns its size."""
        async with await self.export(session_id, root, timeout=timeout) as stream:
            n: int = await stream.read_into(dest)
            return n

    # -- procs -------------------------------------------------------------

    async def start_proc(self, session_id: str, command: str, *, tty: bool = False, cols: Optional[int] = None,
                         rows: Optional[int] = None, ring_bytes: Optional[int] = None, tag: Optional[str] = None,
                         timeout: Timeout = UNSET) -> ProcInfo:
        """start_proc starts a background proc (a PTY with tty=True)."""
        info: ProcInfo = await self._call(self._op("startProc", id=session_id),
                                          json=_core.proc_body(command, tty, cols, rows, ring_bytes, tag),
                                          timeout=timeout)
        return info

    async def list_procs(self, session_id: str, *, timeout: Timeout = UNSET) -> list[ProcInfo]:
        """list_procs returns the session's procs, oldest first."""
        answer: ListProcsResponse = await self._call(self._op("listProcs", id=session_id), timeout=timeout)
        return answer["procs"]

    async def get_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> ProcInfo:
        """get_proc returns one proc."""
        info: ProcInfo = await self._call(self._op("getProc", id=session_id, pid=proc_id), timeout=timeout)
        return info

    async def proc_output(self, session_id: str, proc_id: str, *, stream: Optional[str] = None, offset: int = 0,
                          follow: bool = False, timeout: Timeout = UNSET) -> AsyncProcOutputStream:
        """proc_output reads a proc's output from offset, following it live
        until the proc has exited with follow=True."""
        route = self._op("procOutput", id=session_id, pid=proc_id)
        params = _core.query(stream=stream, follow=_core.flag(follow), **{"from": offset or None})
        return AsyncProcOutputStream(await self._send(route, params=params, timeout=timeout), _http.what(route))

    async def write_stdin(self, session_id: str, proc_id: str, data: AsyncData, *, close: bool = False,
                          timeout: Timeout = UNSET) -> None:
        """write_stdin streams data into the proc's stdin as it is read."""
        await self._call(self._op("procStdin", id=session_id, pid=proc_id),
                         params=_core.query(close=_core.flag(close)), content=_core.aiter_source(data),
                         headers={"Content-Type": "application/octet-stream"}, timeout=timeout)

    async def signal_proc(self, session_id: str, proc_id: str, signal: str, *, timeout: Timeout = UNSET) -> None:
        """signal_proc signals the proc's process group."""
        await self._call(self._op("signalProc", id=session_id, pid=proc_id), params={"signal": signal},
                         timeout=timeout)

    async def resize_proc(self, session_id: str, proc_id: str, cols: int, rows: int, *,
                          timeout: Timeout = UNSET) -> None:
        """resize_proc resizes a PTY proc's terminal."""
        await self._call(self._op("resizeProc", id=session_id, pid=proc_id),
                         params={"cols": str(cols), "rows": str(rows)}, timeout=timeout)

    async def wait_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> ProcInfo:
        """wait_proc waits until the proc has exited and returns it."""
        info: ProcInfo = await self._call(self._op("waitProc", id=session_id, pid=proc_id), timeout=timeout,
                                          waits=True)
        return info

    async def remove_proc(self, session_id: str, proc_id: str, *, timeout: Timeout = UNSET) -> None:
        """remove_proc kills the proc's group if it runs, and forgets it."""
        await self._call(self._op("removeProc", id=session_id, pid=proc_id), timeout=timeout)

    async def attach_proc(self, session_id: str, proc_id: str, *, offset: int = 0,
                          timeout: Timeout = UNSET) -> AsyncAttachment:
        """attach_proc attaches to a proc over a WebSocket, its output from
        offset; timeout bounds the handshake."""
        _, url = self._op("attachProc", id=session_id, pid=proc_id)
        if offset:
            url += f"?from={int(offset)}"
        return AsyncAttachment(await _ws.connect(url, self._token, self._ws_timeout(timeout)))

    # -- ports -------------------------------------------------------------

    async def connect_port(self, session_id: str, port: int, *, timeout: Timeout = UNSET) -> AsyncPortConnection:
        """connect_port opens a TCP connection to port on the sandbox's
        loopback, carried by a WebSocket."""
        _, url = self._op("connectPort", id=session_id, port=port)
        return AsyncPortConnection(await _ws.connect(url, self._token, self._ws_timeout(timeout)))

    async def sign_port_url(self, session_id: str, port: int, *, ttl_seconds: Optional[int] = None,
                            timeout: Timeout = UNSET) -> SignedURL:
        """sign_port_url returns a signed URL of the port's preview."""
        body: SignPortURLRequest = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        signed: SignedURL = await self._call(self._op("signPortURL", id=session_id, port=port), json=body,
                                             timeout=timeout)
        return signed
