"""The WebSocket routes (attachProc, connectPort) over the ``websockets``
package, asyncio only, and the private event-loop thread through which the
sync client uses them.

websockets 10.4 (Debian bookworm's) has no sync client, so the sync
client's WebSockets are the async ones run on a loop in a daemon thread of
its own: one implementation of the protocol, the same behaviour in both
clients, and nothing to install.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from typing import Any, Awaitable, Callable, Coroutine, Iterable, Optional, TypeVar, Union, cast

import websockets.exceptions
import websockets.legacy.client
from websockets.datastructures import Headers

from . import _core, errors
from ._schema import ProcInfo

WebSocket = websockets.legacy.client.WebSocketClientProtocol

T = TypeVar("T")


class _Protocol(WebSocket):
    """_Protocol reads the body of a refused handshake, which websockets
    drops: the executor answers a refusal (an unknown proc, a closed port)
    with the API's error body before any upgrade, and its code is what the
    caller branches on."""

    async def read_http_response(self) -> tuple[int, Headers]:
        status, headers = await super().read_http_response()
        if status != 101:
            length = headers.get("Content-Length")
            body = b""
            try:
                if length is not None and length.isdigit():
                    body = await self.reader.readexactly(min(int(length), errors.MAX_ERROR_BODY))
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            raise errors.decode_error(status, body, {k.lower(): v for k, v in headers.raw_items()})
        return status, headers


async def connect(url: str, token: Optional[str], timeout: Optional[float]) -> WebSocket:
    """connect opens a WebSocket to url (http(s) turned into ws(s)),
    mapping a refused handshake to the API's error and a failure to connect
    to TransportError."""
    ws_url = "ws" + url[len("http"):]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        return await websockets.legacy.client.connect(
            ws_url, extra_headers=headers, create_protocol=cast(Callable[[Any], WebSocket], _Protocol),
            open_timeout=timeout, max_size=_core.MAX_WS_MESSAGE, compression=None)
    except errors.SandgateError:
        raise
    except asyncio.TimeoutError as exc:
        raise errors.CallTimeoutError(f"WebSocket {url}: no handshake within {timeout}s") from exc
    except (OSError, websockets.exceptions.WebSocketException) as exc:
        raise errors.TransportError(f"WebSocket {url}: {exc}") from exc


async def _bounded(aw: Awaitable[T], timeout: Optional[float]) -> T:
    """_bounded awaits aw for at most timeout seconds (None: no bound)."""
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError as exc:
        raise errors.CallTimeoutError(f"nothing within {timeout}s") from exc


async def _detach(ws: WebSocket) -> None:
    """_detach closes ws for a task that is being cancelled: the close is
    shielded from that cancellation, so the server sees the detach."""
    try:
        await asyncio.shield(ws.close())
    except BaseException:
        ws.fail_connection()


class AsyncAttachment:
    """AsyncAttachment is a live attach to a proc (attachProc).

    Iterating it yields each AttachOutput as the proc writes it, then, last,
    the proc as it ended (a ProcInfo); an error the executor ends the attach
    with raises its SandgateError. ``write`` sends stdin; ``resize``,
    ``signal`` and ``close_stdin`` control the proc. Closing detaches: the
    proc runs on. Cancelling the task that reads it detaches too.
    """

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        #: end is the proc as it ended, once the attach has ended.
        self.end: Optional[ProcInfo] = None

    async def recv(self, timeout: Optional[float] = None) -> Union[_core.AttachOutput, ProcInfo]:
        """recv returns the next output piece, or the proc as it ended (the
        last item). After the end it raises EOFError."""
        if self.end is not None:
            raise EOFError("the attach has ended")
        while True:
            try:
                message = await _bounded(self._ws.recv(), timeout)
            except websockets.exceptions.ConnectionClosed as exc:
                raise errors.TransportError(f"attach: the connection closed before the proc's end: {exc}") from exc
            except asyncio.CancelledError:
                await _detach(self._ws)
                raise
            item = _core.attach_message(message)
            if item is None:
                continue
            if not isinstance(item, _core.AttachOutput):
                self.end = item
                await self.close()
            return item

    def __aiter__(self) -> "AsyncAttachment":
        return self

    async def __anext__(self) -> Union[_core.AttachOutput, ProcInfo]:
        if self.end is not None:
            raise StopAsyncIteration
        return await self.recv()

    async def write(self, data: Union[bytes, str]) -> None:
        """write sends data to the proc's stdin."""
        await self._send(data.encode("utf-8") if isinstance(data, str) else bytes(data))

    async def resize(self, cols: int, rows: int) -> None:
        """resize sets the proc's terminal size."""
        await self._send(_core.control("resize", {"cols": cols, "rows": rows}))

    async def signal(self, signal: str) -> None:
        """signal sends signal (TERM, KILL, INT, HUP, …) to the proc's group."""
        await self._send(_core.control("signal", signal))

    async def close_stdin(self) -> None:
        """close_stdin closes the proc's stdin (on a PTY: its EOF, ^D)."""
        await self._send(_core.control("close_stdin", True))

    async def _send(self, message: Union[str, bytes]) -> None:
        try:
            await self._ws.send(message)
        except websockets.exceptions.ConnectionClosed as exc:
            raise errors.TransportError(f"attach: the connection is closed: {exc}") from exc

    async def close(self) -> None:
        """close detaches; the proc runs on."""
        await self._ws.close()

    async def __aenter__(self) -> "AsyncAttachment":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncPortConnection:
    """AsyncPortConnection is a TCP connection to a port inside the sandbox,
    carried by a WebSocket (connectPort). ``recv`` returns b"" once the
    connection has ended; either side closing ends both (a WebSocket has no
    half-close)."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws

    async def send(self, data: bytes) -> None:
        """send writes data to the connection."""
        try:
            await self._ws.send(bytes(data))
        except websockets.exceptions.ConnectionClosed as exc:
            raise errors.TransportError(f"port connection closed: {exc}") from exc

    async def recv(self, timeout: Optional[float] = None) -> bytes:
        """recv returns the next bytes the server inside sent, b"" at the
        connection's end."""
        while True:
            try:
                message = await _bounded(self._ws.recv(), timeout)
            except websockets.exceptions.ConnectionClosedOK:
                return b""
            except websockets.exceptions.ConnectionClosed as exc:
                if exc.rcvd is not None and exc.rcvd.code in (1000, 1001):
                    return b""
                raise errors.TransportError(f"port connection broke: {exc}") from exc
            except asyncio.CancelledError:
                await _detach(self._ws)
                raise
            if isinstance(message, bytes) and message:
                return message

    def __aiter__(self) -> "AsyncPortConnection":
        return self

    async def __anext__(self) -> bytes:
        data = await self.recv()
        if not data:
            raise StopAsyncIteration
        return data

    async def close(self) -> None:
        """close ends the connection."""
        await self._ws.close()

    async def __aenter__(self) -> "AsyncPortConnection":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _shutdown(sockets: Iterable[WebSocket]) -> None:
    """_shutdown closes the WebSockets still open (a close handshake of a
    few seconds at most), then cancels every other task of the running loop
    and waits for them: what is left of their reads and keepalives."""
    await asyncio.gather(*(asyncio.wait_for(ws.close(), 2) for ws in sockets), return_exceptions=True)
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class LoopThread:
    """LoopThread is an asyncio loop on a daemon thread of its own, which
    runs the sync client's WebSocket coroutines. A call's timeout, or the
    caller's KeyboardInterrupt, cancels its coroutine on the loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sandgate-ws", daemon=True)
        self._thread.start()
        #: sockets are the WebSockets opened through this loop, closed with it.
        self.sockets: weakref.WeakSet[WebSocket] = weakref.WeakSet()

    def connect(self, url: str, token: Optional[str], timeout: Optional[float]) -> WebSocket:
        """connect opens a WebSocket on the loop (see connect)."""
        ws = self.run(connect(url, token, timeout))
        self.sockets.add(ws)
        return ws

    def run(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        """run runs coro on the loop and returns its result."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except BaseException as exc:
            # The coroutine's own error (a CallTimeoutError is a
            # TimeoutError too) when it is done; the wait's otherwise.
            if future.done():
                raise
            future.cancel()
            if isinstance(exc, concurrent.futures.TimeoutError):
                raise errors.CallTimeoutError(f"nothing within {timeout}s") from exc
            raise

    def close(self) -> None:
        """close ends the WebSockets still open (their tasks cancelled, as
        a cancelled async caller's would be), then the loop and its thread."""
        if self._loop.is_closed():
            return
        try:
            self.run(_shutdown(list(self.sockets)), 10)
        except errors.CallTimeoutError:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()
