"""A scripted stand-in for the executor, on the standard library's HTTP
server, for the unit tests: each test says what a route answers, and reads
back what the SDK sent. It listens on loopback only."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Optional
from urllib.parse import parse_qs, urlsplit

Responder = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    """Handler dispatches a request to the responder of its method and
    path, and offers the responders their answers' shapes."""

    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass

    @property
    def query(self) -> dict[str, str]:
        """query is the request's query, one value per name."""
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query, keep_blank_values=True).items()}

    def body_pieces(self) -> Iterator[bytes]:
        """body_pieces yields the request body as it arrives (with a
        Content-Length, or chunked)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    piece = self.rfile.read(min(left, 1 << 20))
                    if not piece:
                        return
                    left -= len(piece)
                    yield piece
                self.rfile.readline()
        left = int(self.headers.get("Content-Length") or 0)
        while left:
            piece = self.rfile.read(min(left, 1 << 20))
            if not piece:
                return
            left -= len(piece)
            yield piece

    def body(self) -> bytes:
        """body is the whole request body."""
        return b"".join(self.body_pieces())

    def answer(self, status: int, body: bytes = b"", ctype: str = "application/json",
               headers: Optional[dict[str, str]] = None) -> None:
        """answer sends a whole answer."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def json(self, status: int, obj: Any) -> None:
        """json answers obj as JSON."""
        self.answer(status, json.dumps(obj).encode())

    def error(self, status: int, code: str, message: str, headers: Optional[dict[str, str]] = None) -> None:
        """error answers the API's error body."""
        self.answer(status, json.dumps({"error": {"code": code, "message": message}}).encode(), headers=headers)

    def ndjson(self, events: list[Any], delay: float = 0.0) -> None:
        """ndjson streams events as NDJSON lines, chunked, one flush per
        line, delay seconds apart."""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                if delay:
                    time.sleep(delay)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.server.fake.disconnects += 1

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        fake = self.server.fake
        fake.seen.append((self.command, path, self.query, dict(self.headers)))
        responder = fake.routes.get((self.command, path))
        if responder is None:
            self.error(404, "not_found", f"no such endpoint: {self.command} {path}")
            return
        responder(self)

    do_GET = do_PUT = do_POST = do_DELETE = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: "FakeExecutor"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (a timeout, a closed stream) is what
        # several tests do on purpose: no traceback for it.
        import sys
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeExecutor:
    """FakeExecutor serves scripted answers on 127.0.0.1 until stop()."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Responder] = {}
        self.seen: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
        self.disconnects = 0
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """url is the server's base URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def on(self, method: str, path: str, responder: Responder) -> None:
        """on sets what method path answers."""
        self.routes[(method, path)] = responder

    def stop(self) -> None:
        """stop shuts the server down."""
        self._server.shutdown()
        self._server.server_close()
