/**
 * Every call of the SDK against a real `executor serve` on Docker (with the
 * in-sandbox agent), named by SANDGATE_URL and SANDGATE_TOKEN: what
 * e2e/sdk_typescript_integration_test.go runs. Without SANDGATE_URL these
 * tests are skipped, saying why. Every session made here is deleted at
 * the end, whatever happened.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  ERROR_CLASSES,
  FileNotExistError,
  IsDirectoryError,
  LengthRequiredError,
  NotFoundError,
  outputBytes,
  PortClosedError,
  ProcExitedError,
  ProcNotFoundError,
  Sandgate,
  SandgateError,
  StdinClosedError,
  tarStream,
  type ProcInfo,
  type Session,
} from "sandgate";

const url = process.env["SANDGATE_URL"];
const token = process.env["SANDGATE_TOKEN"];
const skip = url === undefined || url === "" ? "SANDGATE_URL is not set: no executor to test against" : false;

/** The image every session uses: built locally by `make images`, never pulled. */
const image = "debian:bookworm";

/** newId is a fresh session id (lower-case letters, digits and inner '_'). */
function newId(): string {
  return `ses_ts${randomBytes(6).toString("hex")}`;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) {
    out.push(x);
  }
  return out;
}

function text(parts: Uint8Array[]): string {
  return Buffer.concat(parts).toString("utf8");
}

describe("the SDK against a real executor", { skip, timeout: 15 * 60_000 }, () => {
  let sg: Sandgate;
  let s: Session;
  /** Every session a test made, deleted in after(). */
  const made = new Set<string>();

  /** create provisions a new session of image and registers it for deletion. */
  async function create(): Promise<Session> {
    const id = newId();
    made.add(id);
    return sg.create(id, { image }, { timeoutMs: 120_000 });
  }

  before(async () => {
    sg = new Sandgate({ url: url ?? "", ...(token === undefined ? {} : { token }), timeoutMs: 180_000 });
    s = await create();
  });

  after(async () => {
    for (const id of made) {
      await sg.sessions.delete(id).catch((err: unknown) => console.error(`delete ${id}:`, err));
    }
  });

  test("sessions: provision, get, list, delete", async () => {
    const info = await s.info();
    assert.equal(info.id, s.sessionId);
    assert.equal(info.state, "running");
    assert.equal(info.image, image);
    assert.equal(info.gated, false);
    const again = await sg.sessions.provision(s.sessionId, { image });
    assert.equal(again.sandbox_id, info.sandbox_id, "provision is idempotent");
    assert.deepEqual(await sg.sessions.get(s.sessionId), info);

    const other = await create();
    const listed = (await sg.sessions.list()).map((x) => x.id);
    assert.ok(listed.includes(s.sessionId) && listed.includes(other.sessionId), listed.join(","));
    await other.delete();
    await assert.rejects(sg.sessions.get(other.sessionId), NotFoundError);
    await sg.sessions.delete(other.sessionId); // a session that is gone is no error
    made.delete(other.sessionId);
  });

  test("exec: output, exit code, exact bytes, timeout", async () => {
    const r = await s.exec("echo out; echo err >&2; exit 7");
    assert.equal(r.stdout, "out\n");
    assert.equal(r.stderr, "err\n");
    assert.equal(r.exit_code, 7);
    assert.equal(r.timed_out, false);
    const bin = await s.exec("printf 'a\\377b'");
    assert.ok(bin.stdout_base64 !== undefined);
    assert.deepEqual([...outputBytes(bin.stdout, bin.stdout_base64)], [0x61, 0xff, 0x62]);
    const slow = await s.exec({ command: "sleep 10", timeout_ms: 300 });
    assert.equal(slow.timed_out, true);
  });

  test("execStream: the output as it comes, then the result; leaving early cancels the command", async () => {
    const evs = await collect(s.execStream("for i in 1 2 3; do echo $i; sleep 0.2; done; echo oops >&2; exit 4"));
    const out = evs.flatMap((e) => (e.type === "output" && e.stream === "stdout" ? [e.data] : []));
    const err = evs.flatMap((e) => (e.type === "output" && e.stream === "stderr" ? [e.data] : []));
    assert.equal(text(out), "1\n2\n3\n");
    assert.ok(out.length >= 2, "the pieces came apart, as produced");
    assert.equal(text(err), "oops\n");
    const last = evs.at(-1);
    assert.ok(last?.type === "result");
    assert.equal(last.result.exit_code, 4);
    assert.equal(last.result.stdout_bytes, 6);

    const marker = `/tmp/not-cancelled-${randomBytes(4).toString("hex")}`;
    for await (const ev of s.execStream(`echo started; sleep 3; touch ${marker}`)) {
      assert.equal(ev.type, "output");
      break;
    }
    await new Promise((r) => setTimeout(r, 4000));
    await assert.rejects(s.files.stat(marker), FileNotExistError, "the command was cancelled with the request");
  });

  test("files: write, read, stat, list, mkdir, remove", async () => {
    const f = s.files;
    await f.mkdir("/workspace/t/a/b", { parents: true });
    await f.mkdir("/workspace/t/a/b", { parents: true });
    await assert.rejects(f.mkdir("/workspace/t/a/b"), IsDirectoryError);
    await f.write("/workspace/t/hello.txt", "héllo\n");
    assert.equal(await f.readText("/workspace/t/hello.txt"), "héllo\n");
    await f.write("/workspace/t/bytes", new Uint8Array([0, 1, 255]));
    assert.deepEqual([...(await f.read("/workspace/t/bytes"))], [0, 1, 255]);
    const { size, stream } = await f.readStream("/workspace/t/hello.txt");
    assert.equal(size, 7);
    assert.equal(text(await collect(stream)), "héllo\n");

    const st = await f.stat("/workspace/t/hello.txt");
    assert.equal(st.type, "file");
    assert.equal(st.size, 7);
    assert.equal(st.mode, "0644");
    assert.equal(st.name, "/workspace/t/hello.txt");
    assert.ok(!Number.isNaN(Date.parse(st.mod_time)));
    assert.equal((await f.stat("/workspace/t/a")).type, "directory");
    const names = (await f.list("/workspace/t")).map((e) => `${e.name}:${e.type}`);
    assert.deepEqual(names, ["a:directory", "bytes:file", "hello.txt:file"]);

    await assert.rejects(f.remove("/workspace/t/a"), IsDirectoryError);
    await f.remove("/workspace/t/a", { recursive: true });
    await f.remove("/workspace/t/bytes");
    assert.deepEqual((await f.list("/workspace/t")).map((e) => e.name), ["hello.txt"]);
  });

  test("files: batch writes, an archive, and the export", async (t) => {
    const long = "deep/".repeat(25) + "name.txt";
    await s.files.writeBatch(
      [
        { path: "one.txt", data: "1" },
        { path: long, data: "deep" },
        { path: "run.sh", data: "echo ran\n" },
      ],
      { root: "/workspace/batch" },
    );
    await s.files.writeBatch([{ path: "/workspace/abs/two.txt", data: "2" }]);
    assert.equal(await s.files.readText("/workspace/batch/one.txt"), "1");
    assert.equal(await s.files.readText(`/workspace/batch/${long}`), "deep");
    assert.equal(await s.files.readText("/workspace/abs/two.txt"), "2");
    assert.equal((await s.files.stat("/workspace/batch/run.sh")).mode, "0644", "the executor writes members 0644");
    assert.equal((await s.exec("bash /workspace/batch/run.sh")).stdout, "ran\n");
    await s.files.writeArchive(tarStream([{ path: "arch.txt", data: "from an archive" }]), { root: "/workspace/batch" });
    assert.equal(await s.files.readText("/workspace/batch/arch.txt"), "from an archive");

    const dir = mkdtempSync(join(tmpdir(), "sandgate-export-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const tar = Buffer.concat(await collect(await s.export("/workspace/batch")));
    writeFileSync(join(dir, "x.tar"), tar);
    const members = execFileSync("tar", ["-tf", "x.tar"], { cwd: dir, encoding: "utf8" }).split("\n");
    for (const want of ["one.txt", "run.sh", "arch.txt", long]) {
      assert.ok(members.some((m) => m.endsWith(want)), `${want} in ${members.join(" ")}`);
    }
  });

  test("files: 256 MiB streamed up and down in bounded memory", { timeout: 10 * 60_000 }, async () => {
    const size = 256 << 20;
    const chunk = 1 << 20;
    const seed = randomBytes(chunk);
    const sent = createHash("sha256");
    /** The i-th MiB: the seed with its index in front, a fresh buffer each time. */
    async function* source(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < size / chunk; i++) {
        const b = Buffer.from(seed);
        b.writeUInt32BE(i, 0);
        sent.update(b);
        yield b;
      }
    }
    const base = process.memoryUsage.rss();
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      await s.files.write("/workspace/big.bin", source(), { size, timeoutMs: 5 * 60_000 });
      const sum = await s.exec("sha256sum /workspace/big.bin | cut -d' ' -f1");
      assert.equal(sum.stdout.trim(), sent.digest("hex"), "the sandbox holds exactly what was sent");

      const got = createHash("sha256");
      const { size: n, stream } = await s.files.readStream("/workspace/big.bin", { timeoutMs: 5 * 60_000 });
      assert.equal(n, size);
      let read = 0;
      for await (const c of stream) {
        got.update(c);
        read += c.byteLength;
      }
      assert.equal(read, size);
      assert.equal(got.digest("hex"), sum.stdout.trim(), "what came back is what was sent");
    } finally {
      clearInterval(sampler);
      await s.files.remove("/workspace/big.bin").catch(() => {});
    }
    const growth = (peak - base) / (1 << 20);
    console.log(`256 MiB up and down: peak RSS growth ${growth.toFixed(1)} MiB`);
    assert.ok(growth < 96, `peak RSS grew by ${growth.toFixed(1)} MiB`);
  });

  test("procs: start, list, get, output from an offset and followed, wait, remove", async () => {
    const p = s.procs;
    const bg = await p.start({ command: "echo first; sleep 1; echo second; echo oops >&2; exit 3", tag: "sdk" });
    assert.equal(bg.state, "running");
    assert.equal(bg.tag, "sdk");
    assert.ok((await p.list()).some((x) => x.id === bg.id));
    assert.equal((await p.get(bg.id)).command, bg.command);

    const followed = await collect(p.output(bg.id, { follow: true }));
    const end = followed.at(-1);
    assert.ok(end?.type === "end");
    assert.equal(end.proc.exit_code, 3);
    const stdout = followed.flatMap((e) => (e.type === "output" && e.stream === "stdout" ? [e.data] : []));
    assert.equal(text(stdout), "first\nsecond\n");

    const done: ProcInfo = await p.wait(bg.id);
    assert.equal(done.state, "exited");
    assert.equal(done.exit_code, 3);
    const rest = await collect(p.output(bg.id, { stream: "stdout", from: 6 }));
    assert.equal(text(rest.flatMap((e) => (e.type === "output" ? [e.data] : []))), "second\n");

    await assert.rejects(p.signal(bg.id, "TERM"), ProcExitedError);
    await p.remove(bg.id);
    await assert.rejects(p.get(bg.id), ProcNotFoundError);
  });

  test("procs: stdin, signal, resize on a PTY", async () => {
    const p = s.procs;
    const reader = await p.start("read line; echo got:$line");
    await p.stdin(reader.id, "hello\n", { close: true });
    assert.equal((await p.wait(reader.id)).exit_code, 0);
    const out = await collect(p.output(reader.id));
    assert.equal(text(out.flatMap((e) => (e.type === "output" ? [e.data] : []))), "got:hello\n");
    await assert.rejects(p.stdin(reader.id, "late"), (e: unknown) => e instanceof ProcExitedError || e instanceof StdinClosedError);
    await p.remove(reader.id);

    const sleeper = await p.start("sleep 60");
    await p.signal(sleeper.id, "TERM");
    const killed = await p.wait(sleeper.id);
    assert.equal(killed.signaled, true);
    assert.equal(killed.exit_code, 128 + 15);
    await p.remove(sleeper.id);

    const tty = await p.start({ command: "read x; stty size", tty: true, cols: 80, rows: 24 });
    assert.equal(tty.tty, true);
    await p.resize(tty.id, 100, 30);
    await p.stdin(tty.id, "\n");
    await p.wait(tty.id);
    const screen = text((await collect(p.output(tty.id))).flatMap((e) => (e.type === "output" ? [e.data] : [])));
    assert.match(screen, /30 100/);
    await p.remove(tty.id);
  });

  test("procs: attach to a shell on a PTY", async () => {
    const sh = await s.procs.start({ command: "bash --norc --noprofile", tty: true });
    const a = await s.procs.attach(sh.id);
    await a.resize(90, 20);
    await a.write("stty size; tty\n");
    let seen = "";
    for await (const c of a) {
      seen += Buffer.from(c.data).toString();
      if (/\/dev\/pts\/\d+/.test(seen)) {
        break;
      }
    }
    assert.match(seen, /20 90/);
    await a.write("exit 5\n");
    const end = await a.done;
    assert.equal(end.exit_code, 5);
    assert.equal(end.state, "exited");
    await s.procs.remove(sh.id);
  });

  test("ports: connect, forward, sign", async () => {
    const up = await s.exec({ command: httpServer, timeout_ms: 60_000 });
    assert.equal(up.exit_code, 0, up.stderr);

    const conn = await s.ports.connect(8000);
    conn.write("GET /duplex HTTP/1.0\r\n\r\n");
    let answer = "";
    for await (const c of conn as AsyncIterable<Buffer>) {
      answer += c.toString();
    }
    assert.match(answer, /^HTTP\/1\.0 200 OK/);
    assert.match(answer, /hello from the sandbox \/duplex\n$/);

    const fwd = await s.ports.forward(8000);
    try {
      for (const path of ["/one", "/two"]) {
        const r = await fetch(`http://${fwd.host}:${fwd.port}${path}`);
        assert.equal(await r.text(), `hello from the sandbox ${path}\n`);
      }
    } finally {
      await fwd.close();
    }

    const signed = await s.ports.sign(8000, { ttlSeconds: 60 });
    assert.ok(signed.url.startsWith(url ?? ""), signed.url);
    assert.ok(signed.url.endsWith(signed.path));
    assert.ok(Date.parse(signed.expires_at) > Date.now());
    const r = await fetch(signed.url); // no token: the signature lets it in
    assert.equal(r.status, 200);
    assert.equal(await r.text(), "hello from the sandbox /\n");

    await assert.rejects(s.ports.connect(8001), PortClosedError);
  });

  describe("errors: what the API answers, the SDK throws", () => {
    /** raw is the API's own answer to a request: its status and code. */
    async function raw(method: string, path: string, init: { body?: string; token?: string } = {}): Promise<[number, string]> {
      const r = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${init.token ?? token ?? ""}`, "content-type": "application/json" },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      const body = (await r.json()) as { error: { code: string } };
      return [r.status, body.error.code];
    }

    /** same asserts that call fails with the class of the code the raw answer has, and its status. */
    async function same(call: () => Promise<unknown>, want: [number, string], code: string): Promise<void> {
      assert.equal(want[1], code, "the API's code");
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof SandgateError, String(err));
        assert.ok(err instanceof ERROR_CLASSES[code]!, `${err.name} for ${code}`);
        assert.equal(err.code, want[1]);
        assert.equal(err.status, want[0]);
        return true;
      });
    }

    const gone = "ses_nosuchsession";

    test("an invalid session id", async () => {
      await same(() => sg.sessions.get("Bad-Id"), await raw("GET", "/v1/sessions/Bad-Id"), "invalid_argument");
      await same(() => sg.session("ses_x_").exec("true"), await raw("POST", "/v1/sessions/ses_x_/exec", { body: '{"command":"true"}' }), "invalid_argument");
    });

    test("an unknown session", async () => {
      await same(() => sg.sessions.get(gone), await raw("GET", `/v1/sessions/${gone}`), "not_found");
      await same(() => sg.session(gone).exec("true"), await raw("POST", `/v1/sessions/${gone}/exec`, { body: '{"command":"true"}' }), "not_found");
      await same(() => collect(sg.session(gone).execStream("true")), await raw("POST", `/v1/sessions/${gone}/exec:stream`, { body: '{"command":"true"}' }), "not_found");
    });

    test("a bad env name creates nothing", async () => {
      const id = newId();
      made.add(id);
      await same(
        () => sg.sessions.provision(id, { image, env: { "1BAD": "x" } }),
        await raw("PUT", `/v1/sessions/${id}`, { body: JSON.stringify({ image, env: { "1BAD": "x" } }) }),
        "invalid_argument",
      );
      await assert.rejects(sg.sessions.get(id), NotFoundError);
    });

    test("invalid paths", async () => {
      const sid = s.sessionId;
      await same(() => s.files.stat("relative/path"), await raw("GET", `/v1/sessions/${sid}/files:stat?path=relative/path`), "invalid_argument");
      await same(() => s.files.read("/workspace/../etc/passwd"), await raw("GET", `/v1/sessions/${sid}/files?path=/workspace/../etc/passwd`), "invalid_argument");
      await same(() => s.files.read("/no/such/file"), await raw("GET", `/v1/sessions/${sid}/files?path=/no/such/file`), "file_not_exist");
      await same(() => s.files.read("/workspace"), await raw("GET", `/v1/sessions/${sid}/files?path=/workspace`), "is_directory");
      await same(() => s.files.list("/etc/passwd"), await raw("GET", `/v1/sessions/${sid}/files:list?path=/etc/passwd`), "not_directory");
      await same(() => s.files.remove("/"), await raw("DELETE", `/v1/sessions/${sid}/files?path=/`), "invalid_argument");
    });

    test("procs and ports", async () => {
      const sid = s.sessionId;
      await same(() => s.procs.get("nosuchproc"), await raw("GET", `/v1/sessions/${sid}/procs/nosuchproc`), "proc_not_found");
      await same(() => s.procs.get("BAD!"), await raw("GET", `/v1/sessions/${sid}/procs/BAD!`), "invalid_argument");
      const p = await s.procs.start("sleep 30");
      await same(
        // @ts-expect-error: a signal the API does not know
        () => s.procs.signal(p.id, "BOGUS"),
        await raw("POST", `/v1/sessions/${sid}/procs/${p.id}/signal?signal=BOGUS`),
        "invalid_argument",
      );
      await s.procs.remove(p.id);
      await same(() => s.ports.connect(70000), await raw("GET", `/v1/sessions/${sid}/ports/70000:connect`), "invalid_argument");
      await same(() => s.ports.sign(0), await raw("POST", `/v1/sessions/${sid}/ports/0:sign`, { body: "{}" }), "invalid_argument");
    });

    test("a streamed write without its size, and a wrong token", async () => {
      async function* one(): AsyncGenerator<string> {
        yield "x";
      }
      await assert.rejects(s.files.write("/workspace/nosize", one()), (e: unknown) => e instanceof LengthRequiredError && e.status === 411);
      const wrong = new Sandgate({ url: url ?? "", token: "wrong-token" });
      await same(() => wrong.sessions.list(), await raw("GET", "/v1/sessions", { token: "wrong-token" }), "unauthorized");
    });
  });
});

/**
 * httpServer starts an HTTP server on the sandbox's 127.0.0.1:8000 in perl
 * (debian has no python3; bash cannot listen), answering each request
 * "hello from the sandbox PATH"; setsid lets it outlive the exec. The same
 * server as e2e/ports_integration_test.go's.
 */
const httpServer = `setsid perl -MIO::Socket::INET -e '
my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 8000, Listen => 16, ReuseAddr => 1)
	or die "listen: $!";
open(my $f, ">", "/tmp/http-up") or die; close $f;
while (my $c = $s->accept) {
	my $line = <$c>; my ($path) = $line =~ m{^\\S+ (\\S+)};
	while (my $h = <$c>) { last if $h =~ /^\\r?\\n$/; }
	my $body = "hello from the sandbox $path\\n";
	print $c "HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\nContent-Length: " . length($body) .
		"\\r\\nConnection: close\\r\\n\\r\\n$body";
	close $c;
}' </dev/null >/dev/null 2>&1 &
for i in $(seq 100); do [ -e /tmp/http-up ] && exit 0; sleep 0.1; done; exit 1`;
