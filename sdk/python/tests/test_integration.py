"""Integration tests of the SDK against a real `executor serve` on Docker
(SANDGATE_URL, SANDGATE_TOKEN): every call, through both clients (the
``client`` fixture is parametrized), the error codes of bad input checked
against the HTTP API's own answer, and a 256 MiB streamed upload and
download in bounded memory."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tarfile
import time
from typing import Any, Callable, Iterator, Optional

import httpx
import pytest

import sandgate

from .conftest import IMAGE, TOKEN, URL

pytestmark = pytest.mark.integration

WORK = "/workspace"

# An HTTP server on the sandbox's 127.0.0.1:8000, in perl (the image has no
# python3; bash cannot listen), as e2e/ports_integration_test.go's.
HTTP_SERVER = r"""setsid perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 8000, Listen => 16, ReuseAddr => 1)
	or die "listen: $!";
open(my $f, ">", "/tmp/http-up") or die; close $f;
while (my $c = $s->accept) {
	my $line = <$c>; my ($path) = $line =~ m{^\S+ (\S+)};
	while (my $h = <$c>) { last if $h =~ /^\r?\n$/; }
	my $body = "hello from the sandbox $path\n";
	print $c "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " . length($body) .
		"\r\nConnection: close\r\n\r\n$body";
	close $c;
}' </dev/null >/dev/null 2>&1 &
for i in $(seq 100); do [ -e /tmp/http-up ] && exit 0; sleep 0.1; done; exit 1"""


# -- sessions ------------------------------------------------------------------

def test_sessions(client: Any, make_session: Callable[..., str]) -> None:
    sid = make_session()
    info = client.get_session(sid)
    assert (info["id"], info["state"], info["image"], info["gated"]) == (sid, "running", IMAGE, False)
    again = client.provision_session(sid, {"image": IMAGE})
    assert again["sandbox_id"] == info["sandbox_id"], "a provision is idempotent"
    assert sid in {s["id"] for s in client.list_sessions()}
    client.delete_session(sid)
    with pytest.raises(sandgate.NotFoundError):
        client.get_session(sid)
    client.delete_session(sid)  # one that does not exist: success
    created = client.create_session({"image": IMAGE, "env": {"GREETING": "hi"}}, prefix="pysdk")
    try:
        assert created["id"].startswith("pysdk_")
        assert client.exec(created["id"], "echo $GREETING")["stdout"] == "hi\n"
    finally:
        client.delete_session(created["id"])


# -- exec ------------------------------------------------------------------------

def test_exec(client: Any, sid: str) -> None:
    res = client.exec(sid, "echo out; echo err >&2; exit 7")
    assert (res["stdout"], res["stderr"], res["exit_code"], res["timed_out"]) == ("out\n", "err\n", 7, False)
    raw = client.exec(sid, r"printf 'a\377b'")
    assert sandgate.output_bytes(raw) == b"a\xffb" and raw["stdout"] == "a\ufffdb"
    slow = client.exec(sid, "sleep 10", timeout_ms=300)
    assert slow["timed_out"] is True


def test_exec_stream(client: Any, sid: str) -> None:
    items, times = [], []
    with client.exec_stream(sid, "echo one; sleep 1; echo two >&2; printf '\\377'; exit 4") as stream:
        for item in stream:
            items.append(item)
            times.append(time.monotonic())
    chunks = [i for i in items if isinstance(i, sandgate.OutputChunk)]
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == b"one\n\xff"
    assert b"".join(c.data for c in chunks if c.stream == "stderr") == b"two\n"
    assert chunks[0] == sandgate.OutputChunk("stdout", 0, b"one\n")
    result = items[-1]
    assert result == stream.result and result["exit_code"] == 4 and result["stdout_bytes"] == 5
    assert times[-1] - times[0] > 0.5, "the first piece came while the command still ran"


def test_exec_stream_call_timeout(client: Any, sid: str) -> None:
    # Silence past the call's timeout ends the call (the server's keepalive
    # comes every 15 s); closing the stream cancels the command.
    with pytest.raises(sandgate.CallTimeoutError):
        with client.exec_stream(sid, "echo go; sleep 3; touch /workspace/not-cancelled", timeout=1) as stream:
            for _ in stream:
                pass
    time.sleep(3)  # past the touch (at 3 s; the timeout came at 1 s), had the command run on
    with pytest.raises(sandgate.FileNotExistError):
        client.stat_file(sid, "/workspace/not-cancelled")


def test_async_task_cancellation_cancels_the_command(sid: str) -> None:
    async def main() -> None:
        async with sandgate.AsyncClient(URL, TOKEN) as ac:
            started = asyncio.Event()

            async def run() -> None:
                async for _ in await ac.exec_stream(sid, "echo go; sleep 3; touch /workspace/async-not-cancelled"):
                    started.set()
            task = asyncio.create_task(run())
            await asyncio.wait_for(started.wait(), 60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(4)  # past the touch, had the command run on
            with pytest.raises(sandgate.FileNotExistError):
                await ac.stat_file(sid, "/workspace/async-not-cancelled")
    asyncio.run(main())


# -- files -------------------------------------------------------------------------

def test_files(client: Any, sid: str, tmp_path: Any) -> None:
    d = f"{WORK}/files-{id(client)}"
    client.make_directory(sid, d + "/sub/deeper", parents=True)
    client.make_directory(sid, d + "/sub/deeper", parents=True)  # mkdir -p: no error
    client.write_file(sid, d + "/a.txt", "hello\n")
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    with src.open("rb") as f:
        client.write_file(sid, d + "/sub/b.bin", f)
    assert client.read_file(sid, d + "/a.txt") == b"hello\n"
    dest = io.BytesIO()
    assert client.download_file(sid, d + "/sub/b.bin", dest) == 256_000 and dest.getvalue() == src.read_bytes()
    with client.open_file(sid, d + "/sub/b.bin") as stream:
        assert stream.size == 256_000
        assert b"".join(stream) == src.read_bytes()
    with pytest.raises(sandgate.FileTooLargeError):
        client.read_file(sid, d + "/sub/b.bin", max_bytes=10)

    info = client.stat_file(sid, d + "/a.txt")
    assert (info["name"], info["type"], info["size"], info["mode"]) == (d + "/a.txt", "file", 6, "0644")
    client.exec(sid, f"ln -s a.txt {d}/link")
    assert client.stat_file(sid, d + "/link")["link_target"] == "a.txt"
    assert [(e["name"], e["type"]) for e in client.list_files(sid, d)] == [
        ("a.txt", "file"), ("link", "symlink"), ("sub", "directory")]

    client.write_files(sid, {d + "/batch/one": b"1", d + "/batch/two": io.BytesIO(b"22")})
    assert client.exec(sid, f"cat {d}/batch/one {d}/batch/two")["stdout"] == "122"
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        member = tarfile.TarInfo("./rel/x")
        member.size = 3
        tar.addfile(member, io.BytesIO(b"xyz"))
    archive.seek(0)
    client.write_archive(sid, archive, root=d)
    assert client.read_file(sid, d + "/rel/x") == b"xyz"

    tar_bytes = io.BytesIO()
    assert client.export_to(sid, d, tar_bytes) > 0
    tar_bytes.seek(0)
    with tarfile.open(fileobj=tar_bytes) as tar:
        names = {m.name.rstrip("/") for m in tar}
    assert {f"files-{id(client)}/a.txt", f"files-{id(client)}/batch/two", f"files-{id(client)}/rel/x"} <= names
    with client.export(sid, d) as stream:
        assert len(b"".join(stream)) == len(tar_bytes.getvalue())

    client.remove_file(sid, d + "/a.txt")
    with pytest.raises(sandgate.FileNotExistError):
        client.stat_file(sid, d + "/a.txt")
    client.remove_file(sid, d, recursive=True)
    with pytest.raises(sandgate.FileNotExistError):
        client.list_files(sid, d)


class _Pattern:
    """_Pattern is size bytes of a repeating 1 MiB block with a counter,
    made as it is read: the upload's source holds one block, never the file."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.block = os.urandom(1 << 20)
        self.sha = hashlib.sha256()

    def __iter__(self) -> Iterator[bytes]:
        sent, n = 0, 0
        while sent < self.size:
            piece = (n.to_bytes(8, "big") + self.block[8:])[: self.size - sent]
            self.sha.update(piece)
            sent += len(piece)
            n += 1
            yield piece


class _HashSink(io.RawIOBase):
    """_HashSink is a write-only file that keeps only a hash of its bytes."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.n = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.sha.update(b)
        self.n += len(b)
        return len(b)


def _reset_peak_rss() -> Optional[int]:
    """_reset_peak_rss resets the process's peak RSS (VmHWM) and returns
    the current RSS in KiB; None where /proc does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


BIG = 256 << 20
#: MAX_GROWTH bounds the peak RSS growth of a 256 MiB transfer: a quarter of
#: the file, far above what the SDK holds (a piece or two of 256 KiB) and far
#: below a copy of the file.
MAX_GROWTH = 64 << 20


def test_big_transfer_in_bounded_memory(client: Any, sid: str) -> None:
    path = f"{WORK}/big-{id(client)}"
    baseline = _reset_peak_rss()
    if baseline is None:
        pytest.skip("/proc/self/clear_refs is not writable here: the peak RSS cannot be measured")
    source = _Pattern(BIG)
    client.write_file(sid, path, source, size=BIG, timeout=300)
    upload_peak = _status_kib("VmHWM")
    want = source.sha.hexdigest()
    assert client.exec(sid, f"sha256sum {path}")["stdout"].split()[0] == want, "the upload arrived whole"

    _reset_peak_rss()
    sink = _HashSink()
    assert client.download_file(sid, path, sink, timeout=300) == BIG
    download_peak = _status_kib("VmHWM")
    client.remove_file(sid, path)
    assert (sink.n, sink.sha.hexdigest()) == (BIG, want)
    for what, peak in (("upload", upload_peak), ("download", download_peak)):
        growth = (peak - baseline) * 1024
        print(f"{what} of {BIG >> 20} MiB: peak RSS growth {growth / (1 << 20):.1f} MiB")
        assert growth < MAX_GROWTH, f"the {what} of 256 MiB grew the peak RSS by {growth >> 20} MiB"


# -- procs ---------------------------------------------------------------------------

def test_procs(client: Any, sid: str) -> None:
    bg = client.start_proc(sid, "echo first; sleep 1; echo second; echo oops >&2; exit 3", tag="bg")
    assert (bg["state"], bg["tag"]) == ("running", "bg")
    assert bg["id"] in {p["id"] for p in client.list_procs(sid)}
    assert client.get_proc(sid, bg["id"])["command"].startswith("echo first")
    items = list(client.proc_output(sid, bg["id"], follow=True))
    end = items[-1]
    assert (end["state"], end["exit_code"]) == ("exited", 3)
    chunks = [i for i in items[:-1] if isinstance(i, sandgate.OutputChunk)]
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == b"first\nsecond\n"
    assert b"".join(c.data for c in chunks if c.stream == "stderr") == b"oops\n"
    rest = list(client.proc_output(sid, bg["id"], stream="stdout", offset=6))
    assert rest[0].offset == 6 and {c.stream for c in rest[:-1]} == {"stdout"}
    assert b"".join(c.data for c in rest[:-1]) == b"second\n"
    assert client.wait_proc(sid, bg["id"])["exit_code"] == 3
    with pytest.raises(sandgate.ProcExitedError):
        client.signal_proc(sid, bg["id"], "TERM")
    client.remove_proc(sid, bg["id"])
    with pytest.raises(sandgate.ProcNotFoundError):
        client.get_proc(sid, bg["id"])

    cat = client.start_proc(sid, "cat")
    client.write_stdin(sid, cat["id"], iter([b"hel", b"lo\n"]))
    client.write_stdin(sid, cat["id"], b"again\n", close=True)
    assert client.wait_proc(sid, cat["id"])["exit_code"] == 0
    out = b"".join(i.data for i in client.proc_output(sid, cat["id"]) if isinstance(i, sandgate.OutputChunk))
    assert out == b"hello\nagain\n"
    with pytest.raises(sandgate.StdinClosedError):
        client.write_stdin(sid, cat["id"], b"late")
    client.remove_proc(sid, cat["id"])

    sleeper = client.start_proc(sid, "sleep 100")
    client.signal_proc(sid, sleeper["id"], "TERM")
    done = client.wait_proc(sid, sleeper["id"])
    assert (done["signaled"], done["exit_code"]) == (True, 128 + 15)
    client.remove_proc(sid, sleeper["id"])

    tty = client.start_proc(sid, "sleep 1; stty size", tty=True, cols=80, rows=24)
    client.resize_proc(sid, tty["id"], 100, 30)
    client.wait_proc(sid, tty["id"])
    out = b"".join(i.data for i in client.proc_output(sid, tty["id"]) if isinstance(i, sandgate.OutputChunk))
    assert b"30 100" in out
    client.remove_proc(sid, tty["id"])


def test_attach(client: Any, sid: str) -> None:
    cat = client.start_proc(sid, "cat; exit 5")
    with client.attach_proc(sid, cat["id"]) as att:
        att.write(b"ping\n")
        first = att.recv(timeout=30)
        assert first == sandgate.AttachOutput("stdout", b"ping\n")
        att.close_stdin()
        rest = list(att)
    assert rest[-1]["exit_code"] == 5 and att.end == rest[-1]
    # Detach and attach again from an offset: the output is kept.
    again = list(client.attach_proc(sid, cat["id"], offset=2))
    assert b"".join(i.data for i in again[:-1]) == b"ng\n" and again[-1] == rest[-1]
    client.remove_proc(sid, cat["id"])

    shell = client.start_proc(sid, "bash", tty=True)
    screen = b""
    with client.attach_proc(sid, shell["id"]) as att:
        att.resize(120, 40)
        att.write("stty size; tty; exit 3\n")
        for item in att:
            if isinstance(item, sandgate.AttachOutput):
                screen += item.data
    assert att.end is not None and att.end["exit_code"] == 3
    assert b"40 120" in screen and b"/dev/pts/" in screen
    client.remove_proc(sid, shell["id"])

    looper = client.start_proc(sid, "trap 'echo got INT; exit 9' INT; while :; do sleep 0.1; done")
    time.sleep(0.5)
    with client.attach_proc(sid, looper["id"]) as att:
        att.signal("INT")
        items = list(att)
    assert items[-1]["exit_code"] == 9
    assert b"got INT" in b"".join(i.data for i in items[:-1])
    client.remove_proc(sid, looper["id"])


# -- ports ---------------------------------------------------------------------------

def test_ports(client: Any, sid: str) -> None:
    assert client.exec(sid, HTTP_SERVER, timeout_ms=60_000)["exit_code"] == 0
    with client.connect_port(sid, 8000) as conn:
        conn.send(b"GET /through-the-socket HTTP/1.0\r\n\r\n")
        answer = b"".join(conn)
    assert answer.startswith(b"HTTP/1.0 200 OK") and answer.endswith(b"hello from the sandbox /through-the-socket\n")

    signed = client.sign_port_url(sid, 8000, ttl_seconds=120)
    assert signed["path"].startswith(f"/v1/sessions/{sid}/ports/8000/") and signed["url"].endswith(signed["path"])
    with httpx.Client(follow_redirects=True, timeout=30) as browser:  # no token: the signature lets it in
        page = browser.get(signed["url"])
    assert (page.status_code, page.text) == (200, "hello from the sandbox /\n")
    with pytest.raises(sandgate.PortClosedError) as info:
        client.connect_port(sid, 8001)
    assert info.value.status == 502


# -- errors ------------------------------------------------------------------------

def _raw(method: str, path: str, **kw: Any) -> tuple[int, str]:
    """_raw is the HTTP API's own answer to a request: status and code."""
    answer = httpx.request(method, URL + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, **kw)
    return answer.status_code, answer.json()["error"]["code"]


def test_errors_are_the_apis(client: Any, sid: str, sessions: Any) -> None:
    gone = sandgate.new_session_id("pysdk")
    bad_env = sandgate.new_session_id("pysdk")
    bad_image = sandgate.new_session_id("pysdk")
    sessions.ids += [bad_env, bad_image]  # deleted at the end, should the refusal have created them
    s = f"/v1/sessions/{sid}"
    cases: list[tuple[Callable[[], Any], type[sandgate.APIError], tuple[str, str, dict[str, Any]]]] = [
        (lambda: client.get_session("Bad-Id"), sandgate.InvalidArgumentError, ("GET", "/v1/sessions/Bad-Id", {})),
        (lambda: client.exec("Bad-Id", "true"), sandgate.InvalidArgumentError,
         ("POST", "/v1/sessions/Bad-Id/exec", {"json": {"command": "true"}})),
        (lambda: client.get_session(gone), sandgate.NotFoundError, ("GET", f"/v1/sessions/{gone}", {})),
        (lambda: client.exec(gone, "true"), sandgate.NotFoundError,
         ("POST", f"/v1/sessions/{gone}/exec", {"json": {"command": "true"}})),
        (lambda: client.exec_stream(gone, "true"), sandgate.NotFoundError,
         ("POST", f"/v1/sessions/{gone}/exec:stream", {"json": {"command": "true"}})),
        (lambda: client.provision_session(bad_env, {"image": IMAGE, "env": {"1X": "v"}}), sandgate.InvalidArgumentError,
         ("PUT", f"/v1/sessions/{bad_env}", {"json": {"image": IMAGE, "env": {"1X": "v"}}})),
        (lambda: client.provision_session(bad_image, {"image": "Sandgate/UPPER-case:1"}),
         sandgate.ImageUnavailableError,
         ("PUT", f"/v1/sessions/{bad_image}", {"json": {"image": "Sandgate/UPPER-case:1"}})),
        (lambda: client.provision_session(sid, {"image": IMAGE, "workdir": "/elsewhere"}), sandgate.SpecMismatchError,
         ("PUT", s, {"json": {"image": IMAGE, "workdir": "/elsewhere"}})),
        (lambda: client.exec(sid, "true", timeout_ms=-1), sandgate.InvalidArgumentError,
         ("POST", s + "/exec", {"json": {"command": "true", "timeout_ms": -1}})),
        (lambda: client.read_file(sid, "relative/path"), sandgate.InvalidArgumentError,
         ("GET", s + "/files", {"params": {"path": "relative/path"}})),
        (lambda: client.read_file(sid, "/nonexistent"), sandgate.FileNotExistError,
         ("GET", s + "/files", {"params": {"path": "/nonexistent"}})),
        (lambda: client.read_file(sid, "/etc"), sandgate.IsDirectoryError,
         ("GET", s + "/files", {"params": {"path": "/etc"}})),
        (lambda: client.write_file(sid, "/etc", b"x"), sandgate.IsDirectoryError,
         ("PUT", s + "/files", {"params": {"path": "/etc"}, "content": b"x"})),
        (lambda: client.list_files(sid, "/etc/passwd"), sandgate.NotDirectoryError,
         ("GET", s + "/files:list", {"params": {"path": "/etc/passwd"}})),
        (lambda: client.export(sid, "/etc/passwd/x"), sandgate.NotDirectoryError,
         ("GET", s + "/export", {"params": {"root": "/etc/passwd/x"}})),
        (lambda: client.make_directory(sid, "/etc"), sandgate.IsDirectoryError,
         ("POST", s + "/files:mkdir", {"params": {"path": "/etc"}})),
        (lambda: client.remove_file(sid, "/"), sandgate.InvalidArgumentError,
         ("DELETE", s + "/files", {"params": {"path": "/"}})),
        (lambda: client.get_proc(sid, "nosuchproc"), sandgate.ProcNotFoundError, ("GET", s + "/procs/nosuchproc", {})),
        (lambda: client.attach_proc(sid, "nosuchproc"), sandgate.ProcNotFoundError,
         ("GET", s + "/procs/nosuchproc/attach", {})),
        (lambda: client.get_proc(sid, "Bad_Proc"), sandgate.InvalidArgumentError, ("GET", s + "/procs/Bad_Proc", {})),
        (lambda: client.connect_port(sid, 70000), sandgate.InvalidArgumentError,
         ("GET", s + "/ports/70000:connect", {})),
        (lambda: client.sign_port_url(sid, 8000, ttl_seconds=999999), sandgate.InvalidArgumentError,
         ("POST", s + "/ports/8000:sign", {"json": {"ttl_seconds": 999999}})),
    ]
    for call, cls, (method, path, kw) in cases:
        status, code = _raw(method, path, **kw)
        with pytest.raises(sandgate.SandgateError) as info:
            call()
        err = info.value
        assert type(err) is cls, (path, err)
        assert (err.status, err.code) == (status, code) == (cls.default_status, cls.code), (path, err)
        assert err.message
    with pytest.raises(sandgate.UnauthorizedError) as unauthorized:
        sandgate.Client(URL, "not-the-token").list_sessions()
    assert unauthorized.value.status == 401
    signal_status, signal_code = _raw("POST", s + "/procs/nosuchproc/signal", params={"signal": "BOGUS"})
    with pytest.raises(sandgate.APIError) as bogus:
        client.signal_proc(sid, "nosuchproc", "BOGUS")
    assert (bogus.value.status, bogus.value.code) == (signal_status, signal_code)
