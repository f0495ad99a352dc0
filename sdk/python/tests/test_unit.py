"""Unit tests of the SDK against a scripted stand-in of the executor
(tests/fake.py, the standard library's HTTP server; websockets' server for
the WebSocket routes): the error mapping, the streams both ways, timeouts and
cancellation, and the coverage of openapi.json's operations. No Docker."""

from __future__ import annotations

import asyncio
import hashlib
import http
import io
import json
import re
import tarfile
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
import websockets.legacy.server

import sandgate
from sandgate import errors
from sandgate._schema import ERROR_CODES, OPERATIONS, QUERY

from .fake import FakeExecutor, Handler

SDK = Path(__file__).resolve().parent.parent
OPENAPI = SDK.parent.parent / "cmd" / "executor" / "openapi.json"

#: The operations the SDK leaves out on purpose: the gate's own routes, the
#: probes and documents, and the browser's preview routes (signPortURL is the
#: SDK's way to a preview).
NOT_IN_SDK = {"gateConfig", "gateReport", "healthz", "readyz", "metrics", "openapi", "previewPortRoot",
              "previewPortGet", "previewPortPost", "previewPortPut", "previewPortPatch", "previewPortDelete"}

PROC = {"id": "p1", "pid": 7, "tty": False, "command": "true", "state": "exited", "exit_code": 3, "signaled": False,
        "started_at": "2026-12-01T00:00:00Z", "stdout_bytes": 5, "stderr_bytes": 0}


@pytest.fixture
def fake() -> Iterator[FakeExecutor]:
    server = FakeExecutor()
    yield server
    server.stop()


def run(coro: Any) -> Any:
    """run runs a coroutine of an async test (no pytest-asyncio here)."""
    return asyncio.run(coro)


# -- coverage of the API -----------------------------------------------------

def test_every_public_operation_is_reachable_from_both_clients() -> None:
    public = set(OPERATIONS) - NOT_IN_SDK
    for module in ("_sync.py", "_async.py"):
        named = set(re.findall(r'_op\("(\w+)"', (SDK / "sandgate" / module).read_text()))
        assert named == public, f"{module}: missing {public - named}, unknown {named - public}"


@pytest.mark.skipif(not OPENAPI.exists(), reason="outside the repository")
def test_operations_are_openapi_s() -> None:
    spec = json.loads(OPENAPI.read_text())
    ops = {o["operationId"]: (m.upper(), p) for p, v in spec["paths"].items() for m, o in v.items()
           if isinstance(o, dict) and "operationId" in o}
    assert ops == OPERATIONS


def test_every_error_code_of_openapi_has_its_class() -> None:
    codes = set(errors.ERRORS)
    assert set(ERROR_CODES) <= codes
    if OPENAPI.exists():
        spec = json.loads(OPENAPI.read_text())
        enum = spec["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
        assert set(enum) <= codes
    for code, cls in errors.ERRORS.items():
        assert cls.code == code and issubclass(cls, errors.APIError) and issubclass(cls, sandgate.SandgateError)
        assert getattr(sandgate, cls.__name__) is cls


# -- errors ------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(errors.ERRORS))
def test_error_answers_map_to_their_class(fake: FakeExecutor, code: str) -> None:
    cls = errors.ERRORS[code]
    fake.on("GET", "/v1/sessions/ses_x", lambda h: h.error(cls.default_status, code, f"the {code} message"))
    with sandgate.Client(fake.url, "tok") as c, pytest.raises(cls) as info:
        c.get_session("ses_x")
    assert (info.value.code, info.value.status, info.value.message) == (code, cls.default_status, f"the {code} message")

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url, "tok") as ac:
            with pytest.raises(cls):
                await ac.get_session("ses_x")
    run(main())


def test_unknown_code_and_foreign_bodies(fake: FakeExecutor) -> None:
    fake.on("GET", "/v1/sessions/ses_a", lambda h: h.error(418, "teapot", "short and stout"))
    fake.on("GET", "/v1/sessions/ses_b", lambda h: h.answer(502, b"<html>bad gateway</html>", "text/html"))
    fake.on("GET", "/v1/sessions/ses_c", lambda h: h.error(503, "busy", "later", {"Retry-After": "7"}))
    with sandgate.Client(fake.url) as c:
        with pytest.raises(sandgate.APIError) as info:
            c.get_session("ses_a")
        assert type(info.value) is sandgate.APIError and info.value.code == "teapot" and info.value.status == 418
        with pytest.raises(sandgate.InternalError) as internal:
            c.get_session("ses_b")
        assert internal.value.status == 502 and "502" in internal.value.message
        with pytest.raises(sandgate.BusyError) as busy:
            c.get_session("ses_c")
        assert busy.value.retry_after == 7


def test_token_and_escaped_path(fake: FakeExecutor) -> None:
    fake.on("GET", "/v1/sessions/a%2Fb%20c", lambda h: h.json(200, {"id": "x", "gated": False, "state": "running"}))
    with sandgate.Client(fake.url, "s3cret") as c:
        assert c.get_session("a/b c")["state"] == "running"
    _, path, _, headers = fake.seen[-1]
    assert headers["Authorization"] == "Bearer s3cret"


def test_timeouts_and_transport_errors(fake: FakeExecutor) -> None:
    def slow(h: Handler) -> None:
        time.sleep(1.5)
        h.json(200, {"sessions": []})
    fake.on("GET", "/v1/sessions", slow)
    with sandgate.Client(fake.url, timeout=0.2) as c:
        with pytest.raises(sandgate.CallTimeoutError) as info:
            c.list_sessions()
        assert isinstance(info.value, TimeoutError) and isinstance(info.value, sandgate.TransportError)
        assert c.list_sessions(timeout=5) == []
    with sandgate.Client("http://127.0.0.1:1") as c, pytest.raises(sandgate.TransportError) as refused:
        c.list_sessions()
    assert not isinstance(refused.value, sandgate.CallTimeoutError)

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url, timeout=0.2) as ac:
            with pytest.raises(sandgate.CallTimeoutError):
                await ac.list_sessions()
    run(main())


# -- exec:stream and proc output -----------------------------------------------

def out(stream: str, offset: int, text: str) -> dict[str, Any]:
    return {"output": {"stream": stream, "offset": offset, "text": text}}


def result(stdout: int, stderr: int, code: int = 0) -> dict[str, Any]:
    return {"result": {"exit_code": code, "timed_out": False, "truncated": False, "stdout_bytes": stdout,
                       "stderr_bytes": stderr}}


def test_exec_stream_yields_each_piece_as_it_comes(fake: FakeExecutor) -> None:
    got_first = threading.Event()

    def respond(h: Handler) -> None:
        assert json.loads(h.body()) == {"command": "work", "timeout_ms": 5000}
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for i, event in enumerate([out("stdout", 0, "one\n"), {"keepalive": True},
                                   {"output": {"stream": "stderr", "offset": 0, "text": "\ufffd",
                                               "data_base64": "/w=="}},
                                   out("stdout", 4, "two\n"), result(8, 1, 3)]):
            line = json.dumps(event).encode() + b"\n"
            h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            h.wfile.flush()
            if i == 0:
                # The rest waits until the client has the first piece: it
                # came while the command still ran.
                assert got_first.wait(10)
        h.wfile.write(b"0\r\n\r\n")
    fake.on("POST", "/v1/sessions/ses_x/exec:stream", respond)
    with sandgate.Client(fake.url) as c, c.exec_stream("ses_x", "work", timeout_ms=5000) as stream:
        items = []
        for item in stream:
            items.append(item)
            got_first.set()
    assert items[0] == sandgate.OutputChunk("stdout", 0, b"one\n")
    assert items[1] == sandgate.OutputChunk("stderr", 0, b"\xff")
    assert items[3] == stream.result and items[3]["exit_code"] == 3


@pytest.mark.parametrize("events,error", [
    ([out("stdout", 0, "a"), {"error": {"code": "not_found", "message": "gone"}}], sandgate.NotFoundError),
    ([out("stdout", 1, "a"), result(2, 0)], sandgate.ProtocolError),
    ([out("stdout", 0, "a"), result(5, 0)], sandgate.ProtocolError),
    ([out("stdout", 0, "a")], sandgate.ProtocolError),
    ([{"output": {"stream": "stdin", "offset": 0, "text": ""}}], sandgate.ProtocolError),
])
def test_exec_stream_failures(fake: FakeExecutor, events: list[Any], error: type[Exception]) -> None:
    fake.on("POST", "/v1/sessions/ses_x/exec:stream", lambda h: (h.body(), h.ndjson(events)))
    with sandgate.Client(fake.url) as c, pytest.raises(error):
        list(c.exec_stream("ses_x", "x"))

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url) as ac:
            with pytest.raises(error):
                async with await ac.exec_stream("ses_x", "x") as stream:
                    [item async for item in stream]
    run(main())


def test_exec_stream_refused_before_it_starts(fake: FakeExecutor) -> None:
    fake.on("POST", "/v1/sessions/Bad-Id/exec:stream", lambda h: (h.body(), h.error(400, "invalid_argument", "id")))
    with sandgate.Client(fake.url) as c, pytest.raises(sandgate.InvalidArgumentError):
        c.exec_stream("Bad-Id", "x")


def test_proc_output_pieces_then_the_proc(fake: FakeExecutor) -> None:
    events = [{"output": {"stream": "stdout", "offset": 10, "text": "late", "dropped": 10}}, {"keepalive": True},
              {"end": PROC}]
    fake.on("GET", "/v1/sessions/ses_x/procs/p1/output", lambda h: h.ndjson(events))
    with sandgate.Client(fake.url) as c:
        items = list(c.proc_output("ses_x", "p1", stream="stdout", offset=10, follow=True))
    assert items == [sandgate.OutputChunk("stdout", 10, b"late", 10), PROC]
    assert fake.seen[-1][2] == {"stream": "stdout", "from": "10", "follow": "true"}

    async def main() -> list[Any]:
        async with sandgate.AsyncClient(fake.url) as ac:
            stream = await ac.proc_output("ses_x", "p1")
            return [item async for item in stream]
    assert run(main()) == items
    assert fake.seen[-1][2] == {}


def test_closing_a_stream_early_disconnects(fake: FakeExecutor) -> None:
    def endless(h: Handler) -> None:
        h.body()
        h.ndjson([out("stdout", 0, "x")] + [{"keepalive": True}] * 200, delay=0.05)
    fake.on("POST", "/v1/sessions/ses_x/exec:stream", endless)
    with sandgate.Client(fake.url) as c:
        with c.exec_stream("ses_x", "x") as stream:
            assert next(iter(stream)) == sandgate.OutputChunk("stdout", 0, b"x")
        wait_for(lambda: fake.disconnects == 1)


def test_async_cancellation_closes_the_stream(fake: FakeExecutor) -> None:
    def endless(h: Handler) -> None:
        h.body()
        h.ndjson([out("stdout", 0, "x")] + [{"keepalive": True}] * 200, delay=0.05)
    fake.on("POST", "/v1/sessions/ses_x/exec:stream", endless)

    async def main() -> None:
        first = asyncio.Event()

        async def reader(ac: sandgate.AsyncClient) -> None:
            async for _ in await ac.exec_stream("ses_x", "x"):
                first.set()

        async with sandgate.AsyncClient(fake.url) as ac:
            task = asyncio.create_task(reader(ac))
            await asyncio.wait_for(first.wait(), 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    run(main())
    wait_for(lambda: fake.disconnects == 1)


def wait_for(cond: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- uploads and downloads -------------------------------------------------------

def recorder(fake: FakeExecutor, method: str, path: str, status: int = 204) -> dict[str, Any]:
    """recorder answers method path with status after reading the body,
    and records what came."""
    seen: dict[str, Any] = {}

    def respond(h: Handler) -> None:
        digest, n, pieces = hashlib.sha256(), 0, 0
        for piece in h.body_pieces():
            digest.update(piece)
            n += len(piece)
            pieces += 1
        seen.update(length=h.headers.get("Content-Length"), chunked=h.headers.get("Transfer-Encoding"),
                    ctype=h.headers.get("Content-Type"), n=n, sha=digest.hexdigest(), query=h.query)
        h.answer(status)
    fake.on(method, path, respond)
    return seen


def test_write_file_streams_every_kind_of_source(fake: FakeExecutor, tmp_path: Path) -> None:
    seen = recorder(fake, "PUT", "/v1/sessions/ses_x/files")
    data = bytes(range(256)) * 4099
    src = tmp_path / "src"
    src.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    with sandgate.Client(fake.url) as c:
        for source, size in [(data, None), (io.BytesIO(data), None), (src.open("rb"), None),
                             ((data[i:i + 1000] for i in range(0, len(data), 1000)), len(data))]:
            c.write_file("ses_x", "/w/f", source, size=size)
            assert (seen["length"], seen["chunked"], seen["n"], seen["sha"]) == (str(len(data)), None, len(data), want)
            assert seen["query"] == {"path": "/w/f"} and seen["ctype"] == "application/octet-stream"
        c.write_file("ses_x", "/w/empty", b"")
        assert seen["n"] == 0 and seen["length"] == "0"
        with pytest.raises(ValueError):
            c.write_file("ses_x", "/w/f", iter([b"x"]))

    async def agen() -> AsyncIterator[bytes]:
        for i in range(0, len(data), 4096):
            yield data[i:i + 4096]

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url) as ac:
            await ac.write_file("ses_x", "/w/f", agen(), size=len(data))
            assert (seen["n"], seen["sha"]) == (len(data), want)
            with src.open("rb") as f:
                await ac.write_file("ses_x", "/w/f", f)
            assert (seen["length"], seen["sha"]) == (str(len(data)), want)
    run(main())


def test_write_files_sends_a_tar(fake: FakeExecutor) -> None:
    got: dict[str, Any] = {}

    def respond(h: Handler) -> None:
        got["chunked"] = h.headers.get("Transfer-Encoding")
        with tarfile.open(fileobj=io.BytesIO(h.body())) as tar:
            got["members"] = {m.name: (tar.extractfile(m).read(), m.mode) for m in tar}  # type: ignore[union-attr]
        h.answer(204)
    fake.on("POST", "/v1/sessions/ses_x/files:batch", respond)
    long = "/w/" + "d" * 150 + "/ünïcode"
    files = {"/w/a": b"A" * 513, "/w/b": "bee", long: io.BytesIO(b"long")}
    want = {"/w/a": (b"A" * 513, 0o644), "/w/b": (b"bee", 0o644), long: (b"long", 0o644)}
    with sandgate.Client(fake.url) as c:
        c.write_files("ses_x", files)
    assert got == {"chunked": "chunked", "members": want}
    files[long] = io.BytesIO(b"long")

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url) as ac:
            await ac.write_files("ses_x", list(files.items()))
    run(main())
    assert got["members"] == want


def test_write_archive_and_stdin_are_chunked(fake: FakeExecutor) -> None:
    batch = recorder(fake, "POST", "/v1/sessions/ses_x/files:batch")
    stdin = recorder(fake, "POST", "/v1/sessions/ses_x/procs/p1/stdin")
    with sandgate.Client(fake.url) as c:
        c.write_archive("ses_x", io.BytesIO(b"t" * 2048), root="/w")
        assert (batch["chunked"], batch["n"], batch["query"]) == ("chunked", 2048, {"root": "/w"})
        c.write_stdin("ses_x", "p1", iter([b"a", b"b"]), close=True)
        assert (stdin["chunked"], stdin["n"], stdin["query"]) == ("chunked", 2, {"close": "true"})


def test_downloads_stream_into_a_file(fake: FakeExecutor) -> None:
    data = b"0123456789" * 100_000

    def respond(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for i in range(0, len(data), 65536):
            h.wfile.write(data[i:i + 65536])
    fake.on("GET", "/v1/sessions/ses_x/files", respond)
    fake.on("GET", "/v1/sessions/ses_x/export", respond)
    with sandgate.Client(fake.url) as c:
        dest = io.BytesIO()
        assert c.download_file("ses_x", "/w/f", dest, max_bytes=10**7) == len(data)
        assert dest.getvalue() == data and fake.seen[-1][2] == {"path": "/w/f", "max_bytes": "10000000"}
        with c.open_file("ses_x", "/w/f") as stream:
            assert stream.size == len(data)
            assert max(len(p) for p in stream) <= 256 << 10
        assert c.read_file("ses_x", "/w/f") == data
        dest = io.BytesIO()
        assert c.export_to("ses_x", "/w", dest) == len(data) and fake.seen[-1][2] == {"root": "/w"}

    async def main() -> None:
        async with sandgate.AsyncClient(fake.url) as ac:
            assert await ac.read_file("ses_x", "/w/f") == data
            dest = io.BytesIO()
            assert await ac.export_to("ses_x", "/w", dest) == len(data)
    run(main())


def test_truncated_download_is_a_transport_error(fake: FakeExecutor) -> None:
    def respond(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b"x" * 10)
        h.close_connection = True
    fake.on("GET", "/v1/sessions/ses_x/files", respond)
    with sandgate.Client(fake.url) as c, pytest.raises(sandgate.TransportError):
        c.read_file("ses_x", "/w/f")


# -- the plain calls' requests ---------------------------------------------------

def test_plain_calls_send_what_the_api_takes(fake: FakeExecutor) -> None:
    calls: list[tuple[str, str, dict[str, str], Any]] = []

    def echo(answer: Any, status: int = 200) -> Any:
        def respond(h: Handler) -> None:
            body = h.body()
            calls.append((h.command, h.path.split("?")[0], h.query, json.loads(body) if body else None))
            if answer is None:
                h.answer(status)
            else:
                h.json(status, answer)
        return respond
    info = {"id": "ses_x", "gated": False, "state": "running"}
    base = "/v1/sessions/ses_x"
    for method, path, answer, status in [
        ("PUT", base, info, 200), ("GET", base, info, 200), ("DELETE", base, None, 204),
        ("GET", "/v1/sessions", {"sessions": [info]}, 200),
        ("POST", base + "/exec", {"stdout": "hi\ufffd", "stdout_base64": "aGn/", "stderr": "", "exit_code": 0,
                                  "timed_out": False, "truncated": False}, 200),
        ("GET", base + "/files:stat", {"name": "/w", "type": "directory", "size": 4096, "mode": "0755",
                                       "mod_time": "2026-12-01T00:00:00Z"}, 200),
        ("GET", base + "/files:list", {"entries": []}, 200), ("DELETE", base + "/files", None, 204),
        ("POST", base + "/files:mkdir", None, 204), ("POST", base + "/procs", PROC, 201),
        ("GET", base + "/procs", {"procs": [PROC]}, 200), ("GET", base + "/procs/p1", PROC, 200),
        ("POST", base + "/procs/p1/signal", None, 204), ("POST", base + "/procs/p1/resize", None, 204),
        ("GET", base + "/procs/p1/wait", PROC, 200), ("DELETE", base + "/procs/p1", None, 204),
        ("POST", base + "/ports/8000:sign", {"url": "http://h/x", "path": "/x", "expires_at": "t"}, 200),
    ]:
        fake.on(method, path, echo(answer, status))

    def every_call(c: Any) -> Iterator[Any]:
        yield c.provision_session("ses_x", {"image": "debian:bookworm", "env": {"A": "1"}})
        yield c.get_session("ses_x")
        yield c.delete_session("ses_x", checkpoint=True)
        yield c.list_sessions()
        yield c.exec("ses_x", "echo hi", timeout_ms=100)
        yield c.stat_file("ses_x", "/w")
        yield c.list_files("ses_x", "/w")
        yield c.remove_file("ses_x", "/w/x", recursive=True)
        yield c.mkdir("ses_x", "/w/d", parents=True)
        yield c.start_proc("ses_x", "sleep 1", tty=True, cols=100, rows=30, ring_bytes=4096, tag="t")
        yield c.list_procs("ses_x")
        yield c.get_proc("ses_x", "p1")
        yield c.signal_proc("ses_x", "p1", "TERM")
        yield c.resize_proc("ses_x", "p1", 120, 40)
        yield c.wait_proc("ses_x", "p1")
        yield c.remove_proc("ses_x", "p1")
        yield c.sign_port_url("ses_x", 8000, ttl_seconds=60)

    with sandgate.Client(fake.url) as c:
        answers = list(every_call(c))
    sync_calls, calls[:] = list(calls), []
    routes = {(m, re.sub(r"\{\w+\}", "[^/]+", p)): op for op, (m, p) in OPERATIONS.items()}
    for method, path, params, _ in sync_calls:
        op = next(op for (m, p), op in routes.items() if m == method and re.fullmatch(p, path))
        assert set(params) <= set(QUERY.get(op, ())), (op, params)
    assert answers[0] == info and answers[3] == [info] and answers[10] == [PROC]
    assert sandgate.output_bytes(answers[4]) == b"hi\xff"
    assert sync_calls == [
        ("PUT", base, {}, {"image": "debian:bookworm", "env": {"A": "1"}}), ("GET", base, {}, None),
        ("DELETE", base, {"checkpoint": "true"}, None), ("GET", "/v1/sessions", {}, None),
        ("POST", base + "/exec", {}, {"command": "echo hi", "timeout_ms": 100}),
        ("GET", base + "/files:stat", {"path": "/w"}, None), ("GET", base + "/files:list", {"path": "/w"}, None),
        ("DELETE", base + "/files", {"path": "/w/x", "recursive": "true"}, None),
        ("POST", base + "/files:mkdir", {"path": "/w/d", "parents": "true"}, None),
        ("POST", base + "/procs", {}, {"command": "sleep 1", "tty": True, "cols": 100, "rows": 30, "ring_bytes": 4096,
                                       "tag": "t"}),
        ("GET", base + "/procs", {}, None), ("GET", base + "/procs/p1", {}, None),
        ("POST", base + "/procs/p1/signal", {"signal": "TERM"}, None),
        ("POST", base + "/procs/p1/resize", {"cols": "120", "rows": "40"}, None),
        ("GET", base + "/procs/p1/wait", {}, None), ("DELETE", base + "/procs/p1", {}, None),
        ("POST", base + "/ports/8000:sign", {}, {"ttl_seconds": 60}),
    ]

    async def main() -> list[Any]:
        async with sandgate.AsyncClient(fake.url) as ac:
            return [await call for call in every_call(ac)]
    assert run(main()) == answers
    assert calls == sync_calls


# -- WebSockets -------------------------------------------------------------------

class FakeWS:
    """FakeWS is a websockets server on a loop thread of its own: attach
    answers as the executor does, connect echoes, an unknown proc is refused
    before the upgrade with the API's error body."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.headers: list[Any] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)
        self.url = "http://127.0.0.1:%d" % self.server.sockets[0].getsockname()[1]

    async def _serve(self) -> Any:
        return await websockets.legacy.server.serve(self._handle, "127.0.0.1", 0, process_request=self._refuse)

    async def _refuse(self, path: str, headers: Any) -> Any:
        self.headers.append(headers)
        if "/procs/nope/" in path or "/ports/9:connect" in path:
            code, status = ("proc_not_found", 404) if "nope" in path else ("port_closed", 502)
            body = json.dumps({"error": {"code": code, "message": "refused"}}).encode()
            return http.HTTPStatus(status), [("Content-Type", "application/json"),
                                             ("Content-Length", str(len(body)))], body
        return None

    async def _handle(self, ws: Any) -> None:
        if ws.path.endswith(":connect"):
            async for message in ws:
                await ws.send(message)
            return
        self.received.append(("path", ws.path))
        await ws.send(b"\x01hello ")
        await ws.send(b"\x02oops")
        for _ in range(4):
            self.received.append(await ws.recv())
        await ws.send(json.dumps({"end": PROC}))
        await ws.close()

    def stop(self) -> None:
        self.server.close()
        asyncio.run_coroutine_threadsafe(self.server.wait_closed(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def fake_ws() -> Iterator[FakeWS]:
    server = FakeWS()
    yield server
    server.stop()


WANT_RECEIVED = [("path", "/v1/sessions/ses_x/procs/p1/attach?from=3"), b"input",
                 '{"resize": {"cols": 90, "rows": 20}}', '{"signal": "INT"}', '{"close_stdin": true}']


def test_attach_and_connect_sync(fake_ws: FakeWS) -> None:
    with sandgate.Client(fake_ws.url, "tok") as c:
        with c.attach_proc("ses_x", "p1", offset=3) as att:
            first = att.recv(timeout=10)
            assert first == sandgate.AttachOutput("stdout", b"hello ")
            att.write(b"input")
            att.resize(90, 20)
            att.signal("INT")
            att.close_stdin()
            rest = list(att)
        assert rest == [sandgate.AttachOutput("stderr", b"oops"), PROC] and att.end == PROC
        assert fake_ws.received == WANT_RECEIVED
        assert fake_ws.headers[0]["Authorization"] == "Bearer tok"
        with pytest.raises(sandgate.ProcNotFoundError) as info:
            c.attach_proc("ses_x", "nope")
        assert info.value.status == 404 and info.value.message == "refused"
        with c.connect_port("ses_x", 8000) as conn:
            conn.send(b"ping")
            assert conn.recv(timeout=10) == b"ping"
        with pytest.raises(sandgate.PortClosedError):
            c.connect_port("ses_x", 9)


def test_attach_and_connect_async(fake_ws: FakeWS) -> None:
    async def main() -> None:
        async with sandgate.AsyncClient(fake_ws.url, "tok") as ac:
            async with await ac.attach_proc("ses_x", "p1", offset=3) as att:
                items = [await att.recv(timeout=10)]
                await att.write("input")
                await att.resize(90, 20)
                await att.signal("INT")
                await att.close_stdin()
                items += [item async for item in att]
            assert items == [sandgate.AttachOutput("stdout", b"hello "), sandgate.AttachOutput("stderr", b"oops"), PROC]
            with pytest.raises(sandgate.ProcNotFoundError):
                await ac.attach_proc("ses_x", "nope")
            async with await ac.connect_port("ses_x", 8000) as conn:
                await conn.send(b"ping")
                assert await conn.recv(timeout=10) == b"ping"
            with pytest.raises(sandgate.PortClosedError):
                await ac.connect_port("ses_x", 9)
    run(main())
    assert fake_ws.received == WANT_RECEIVED


def test_ws_recv_timeout_leaves_the_attach_open(fake_ws: FakeWS) -> None:
    with sandgate.Client(fake_ws.url) as c, c.connect_port("ses_x", 8000) as conn:
        with pytest.raises(sandgate.CallTimeoutError):
            conn.recv(timeout=0.1)
        conn.send(b"still here")
        assert conn.recv(timeout=10) == b"still here"


# -- pure helpers -------------------------------------------------------------------

def test_sources_and_ids(tmp_path: Path) -> None:
    from sandgate import _core
    assert _core.source_size("é", None) == 2 and _core.source_size(memoryview(b"abc"), None) == 3
    f = io.BytesIO(b"0123456789")
    f.seek(4)
    assert _core.source_size(f, None) == 6 and b"".join(_core.iter_source(f, 6)) == b"456789"
    assert _core.source_size(iter([b"x"]), None) is None
    assert b"".join(_core.iter_source(iter([b"abc", b"def"]), 4)) == b"abcd", "cut at the announced length"
    assert [len(p) for p in _core.iter_source(b"x" * (_core.CHUNK + 1))] == [_core.CHUNK, 1]
    with pytest.raises(ValueError):
        _core.source_size(b"", -1)
    assert re.fullmatch(r"ses_[a-z2-7]{26}", sandgate.new_session_id())
    for bad in ("", "ftp://h", "http://", "127.0.0.1:7070"):
        with pytest.raises(ValueError):
            sandgate.Client(bad or "ws://x")
    lines = _core.Lines()
    assert lines.feed(b'{"a":1}\n{"b"') == [b'{"a":1}'] and lines.feed(b':2}\n\n') == [b'{"b":2}']
    assert lines.feed(b'{"c":3}') == [] and lines.finish() == [b'{"c":3}']
    with pytest.raises(sandgate.ProtocolError):
        _core.Lines().feed(b"x" * (_core.MAX_LINE + 1))
