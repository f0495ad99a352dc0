/**
 * The streamed calls against a fake executor: exec:stream and a proc's
 * output (NDJSON), file bodies both ways, and the batch's tar.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";

import {
  FileNotExistError,
  LengthRequiredError,
  NotFoundError,
  outputBytes,
  ProtocolError,
  Sandgate,
  type ExecEvent,
  type ExecResult,
  type ProcOutput,
} from "sandgate";

import { FakeServer, writeError } from "./fake.js";

let fake: FakeServer;
let s: ReturnType<Sandgate["session"]>;

before(async () => {
  fake = await FakeServer.start();
  s = new Sandgate({ url: fake.url, token: "tok" }).session("ses_a");
});
after(() => fake.close());

/** ndjson answers with lines, written in pieces cut anywhere (mid-line too). */
function ndjson(lines: unknown[], cut = 7): (req: unknown, res: import("node:http").ServerResponse) => void {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    const all = Buffer.from(lines.map((l) => JSON.stringify(l) + "\n").join(""));
    for (let i = 0; i < all.length; i += cut) {
      res.write(all.subarray(i, i + cut));
    }
    res.end();
  };
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) {
    out.push(x);
  }
  return out;
}

test("exec answers the result; exact bytes from base64", async () => {
  const res = { stdout: "\ufffd", stdout_base64: Buffer.from([0xff]).toString("base64"), stderr: "e", exit_code: 2, timed_out: false, truncated: false };
  fake.onJSON("POST", "/v1/sessions/ses_a/exec", 200, res);
  const got: ExecResult = await s.exec({ command: "printf '\\xff'", timeout_ms: 1000 });
  assert.deepEqual(res, got);
  assert.deepEqual(JSON.parse(fake.last().body.toString()), { command: "printf '\\xff'", timeout_ms: 1000 });
  assert.deepEqual([...outputBytes(got.stdout, got.stdout_base64)], [0xff]);
  assert.deepEqual([...outputBytes(got.stderr, got.stderr_base64)], [0x65]);
});

test("execStream yields the pieces in order, then the result", async () => {
  fake.on("POST", "/v1/sessions/ses_a/exec:stream", ndjson([
    { output: { stream: "stdout", offset: 0, text: "hi\n" } },
    { keepalive: true },
    { output: { stream: "stderr", offset: 0, text: "\ufffd", data_base64: Buffer.from([0xfe]).toString("base64") } },
    { output: { stream: "stdout", offset: 3, text: "bye\n" } },
    { result: { exit_code: 0, timed_out: false, truncated: false, stdout_bytes: 7, stderr_bytes: 1 } },
  ]));
  const evs = await collect(s.execStream("echo hi"));
  assert.deepEqual(JSON.parse(fake.last().body.toString()), { command: "echo hi" });
  assert.deepEqual(evs.map((e) => (e.type === "output" ? [e.stream, e.offset, [...e.data]] : e.result.exit_code)), [
    ["stdout", 0, [...Buffer.from("hi\n")]],
    ["stderr", 0, [0xfe]],
    ["stdout", 3, [...Buffer.from("bye\n")]],
    0,
  ]);
});

test("execStream: an error line is its code's error; a broken stream is a ProtocolError", async () => {
  const cases: [unknown[], (err: unknown) => boolean][] = [
    [[{ output: { stream: "stdout", offset: 0, text: "a" } }, { error: { code: "not_found", message: "gone" } }],
      (e) => e instanceof NotFoundError && e.status === 404 && e.message === "gone"],
    [[{ output: { stream: "stdout", offset: 5, text: "a" } }], (e) => e instanceof ProtocolError && /offset 5/.test(e.message)],
    [[{ output: { stream: "stdout", offset: 0, text: "a" } }], (e) => e instanceof ProtocolError && /without a result/.test(e.message)],
    [[{ result: { exit_code: 0, timed_out: false, truncated: false, stdout_bytes: 9, stderr_bytes: 0 } }],
      (e) => e instanceof ProtocolError && /result says 9\+0/.test(e.message)],
    [[{ output: { stream: "stdin", offset: 0, text: "a" } }], (e) => e instanceof ProtocolError],
  ];
  for (const [lines, check] of cases) {
    fake.on("POST", "/v1/sessions/ses_a/exec:stream", ndjson(lines));
    await assert.rejects(collect(s.execStream("x")), check);
  }
  fake.on("POST", "/v1/sessions/ses_a/exec:stream", (_req, res) => {
    res.writeHead(200);
    res.end("{not json\n");
  });
  await assert.rejects(collect(s.execStream("x")), ProtocolError);
});

test("execStream: leaving the loop early ends the request", async () => {
  let closed!: () => void;
  const gone = new Promise<void>((resolve) => (closed = resolve));
  fake.on("POST", "/v1/sessions/ses_a/exec:stream", (_req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    res.write(JSON.stringify({ output: { stream: "stdout", offset: 0, text: "tick\n" } }) + "\n");
    res.on("close", () => closed());
  });
  let first: ExecEvent | undefined;
  for await (const ev of s.execStream("yes")) {
    first = ev;
    break;
  }
  assert.equal(first?.type, "output");
  await gone;
});

test("a proc's output: query, pieces with dropped, then the end", async () => {
  const end = { id: "p1", pid: 7, tty: false, command: "x", state: "exited", exit_code: 3, signaled: false, started_at: "2026-01-01T00:00:00Z", stdout_bytes: 9, stderr_bytes: 0 };
  fake.on("GET", "/v1/sessions/ses_a/procs/p1/output", ndjson([
    { output: { stream: "stdout", offset: 4, text: "tail\n", dropped: 4 } },
    { keepalive: true },
    { end },
  ], 3));
  const evs: ProcOutput[] = await collect(s.procs.output("p1", { stream: "stdout", from: 2, follow: true }));
  assert.equal(fake.last().url, "/v1/sessions/ses_a/procs/p1/output?stream=stdout&from=2&follow=true");
  assert.equal(evs.length, 2);
  assert.deepEqual(evs[0], { type: "output", stream: "stdout", offset: 4, data: new TextEncoder().encode("tail\n"), text: "tail\n", dropped: 4 });
  assert.deepEqual(evs[1], { type: "end", proc: end });
  fake.on("GET", "/v1/sessions/ses_a/procs/p1/output", ndjson([{ error: { code: "proc_not_found", message: "no proc" } }]));
  await assert.rejects(collect(s.procs.output("p1")), (e: unknown) => e instanceof Error && e.name === "ProcNotFoundError");
});

test("the proc calls' methods, paths and queries", async () => {
  const p = { id: "p1" };
  fake.onJSON("POST", "/v1/sessions/ses_a/procs", 201, p);
  assert.deepEqual(await s.procs.start({ command: "sleep 9", tty: true, cols: 100, rows: 30 }), p);
  assert.deepEqual(JSON.parse(fake.last().body.toString()), { command: "sleep 9", tty: true, cols: 100, rows: 30 });
  fake.onJSON("GET", "/v1/sessions/ses_a/procs", 200, { procs: [p] });
  assert.deepEqual(await s.procs.list(), [p]);
  fake.onJSON("GET", "/v1/sessions/ses_a/procs/p1", 200, p);
  assert.deepEqual(await s.procs.get("p1"), p);
  fake.onJSON("GET", "/v1/sessions/ses_a/procs/p1/wait", 200, p);
  assert.deepEqual(await s.procs.wait("p1"), p);
  const noContent = (_req: unknown, res: import("node:http").ServerResponse, _seen: unknown): void => {
    res.writeHead(204).end();
  };
  for (const [m, path] of [["DELETE", ""], ["POST", "/signal"], ["POST", "/resize"], ["POST", "/stdin"]] as const) {
    fake.on(m, "/v1/sessions/ses_a/procs/p1" + path, noContent);
  }
  await s.procs.remove("p1");
  assert.equal(fake.last().method, "DELETE");
  await s.procs.signal("p1", "INT");
  assert.equal(fake.last().url, "/v1/sessions/ses_a/procs/p1/signal?signal=INT");
  await s.procs.resize("p1", 120, 40);
  assert.equal(fake.last().url, "/v1/sessions/ses_a/procs/p1/resize?cols=120&rows=40");
  await s.procs.stdin("p1", Readable.from(["a", "b"]), { close: true });
  assert.equal(fake.last().url, "/v1/sessions/ses_a/procs/p1/stdin?close=true");
  assert.equal(fake.last().body.toString(), "ab");
  assert.equal(fake.last().headers["transfer-encoding"], "chunked");
  await s.procs.stdin("p1", undefined, { close: true });
  assert.equal(fake.last().body.length, 0);
});

test("a file streams out with its size, and in with a Content-Length", async () => {
  const data = Buffer.alloc(300_000, 7);
  fake.on("GET", "/v1/sessions/ses_a/files", (_req, res) => {
    res.writeHead(200, { "content-length": String(data.length) });
    res.end(data);
  });
  const { size, stream } = await s.files.readStream("/f", { maxBytes: 1 << 20 });
  assert.equal(fake.last().url, "/v1/sessions/ses_a/files?path=%2Ff&max_bytes=1048576");
  assert.equal(size, data.length);
  let n = 0;
  for await (const c of stream) {
    n += c.byteLength;
  }
  assert.equal(n, data.length);
  assert.equal((await s.files.read("/f")).byteLength, data.length);

  fake.on("PUT", "/v1/sessions/ses_a/files", (_req, res, _seen) => {
    res.writeHead(204).end();
  });
  async function* gen(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < 10; i++) {
      yield new Uint8Array(1000).fill(i);
    }
  }
  await s.files.write("/w/f", gen(), { size: 10_000 });
  const w = fake.last();
  assert.equal(w.headers["content-length"], "10000");
  assert.equal(w.headers["content-type"], "application/octet-stream");
  assert.equal(w.body.length, 10_000);
  assert.equal(w.body[9999], 9);
  await s.files.write("/w/f", "héllo");
  assert.equal(fake.last().headers["content-length"], "6");
  await s.files.write("/w/f", new Blob(["abc"]));
  assert.equal(fake.last().body.toString(), "abc");
  await s.files.write("/w/f", Readable.from([Buffer.from("xy")]), { size: 2 });
  assert.equal(fake.last().body.toString(), "xy");
});

test("a stream without its size goes chunked, and the API's length_required comes back", async () => {
  fake.on("PUT", "/v1/sessions/ses_a/files", (req, res, _seen) => {
    if (req.headers["content-length"] === undefined) {
      writeError(res, 411, "length_required", "a stream write needs a Content-Length");
      return;
    }
    res.writeHead(204).end();
  });
  await assert.rejects(s.files.write("/w/f", Readable.from(["a"])), (e: unknown) => e instanceof LengthRequiredError && e.status === 411);
});

test("stat, list, remove, mkdir and export", async () => {
  const fi = { name: "/w/a", type: "file", size: 1, mode: "0644", mod_time: "2026-01-01T00:00:00Z" };
  fake.onJSON("GET", "/v1/sessions/ses_a/files:stat", 200, fi);
  assert.deepEqual(await s.files.stat("/w/a"), fi);
  fake.onJSON("GET", "/v1/sessions/ses_a/files:list", 200, { entries: [fi] });
  assert.deepEqual(await s.files.list("/w"), [fi]);
  assert.equal(fake.last().url, "/v1/sessions/ses_a/files:list?path=%2Fw");
  fake.on("DELETE", "/v1/sessions/ses_a/files", (_req, res, _seen) => writeError(res, 404, "file_not_exist", "no such file"));
  await assert.rejects(s.files.remove("/w/x", { recursive: true }), FileNotExistError);
  assert.equal(fake.last().url, "/v1/sessions/ses_a/files?path=%2Fw%2Fx&recursive=true");
  fake.on("POST", "/v1/sessions/ses_a/files:mkdir", (_req, res, _seen) => {
    res.writeHead(204).end();
  });
  await s.files.mkdir("/w/d/e", { parents: true });
  assert.equal(fake.last().url, "/v1/sessions/ses_a/files:mkdir?path=%2Fw%2Fd%2Fe&parents=true");
  await s.files.mkdir("/w/d");
  assert.equal(fake.last().url, "/v1/sessions/ses_a/files:mkdir?path=%2Fw%2Fd");
  fake.on("GET", "/v1/sessions/ses_a/export", (_req, res) => {
    res.writeHead(200, { "content-type": "application/x-tar" });
    res.end("tarbytes");
  });
  const tar = await s.export("/workspace");
  assert.equal(fake.last().url, "/v1/sessions/ses_a/export?root=%2Fworkspace");
  assert.equal(Buffer.concat(await collect(tar)).toString(), "tarbytes");
});

test("writeBatch sends a tar that tar(1) reads back, long and non-ASCII names included", async (t) => {
  fake.on("POST", "/v1/sessions/ses_a/files:batch", (_req, res, _seen) => {
    res.writeHead(204).end();
  });
  const long = "d/".repeat(80) + "long-name.txt";
  await s.files.writeBatch(
    [
      { path: "a.txt", data: "alpha" },
      { path: "empty", data: "" },
      { path: "bin", data: new Uint8Array(513).fill(1) },
      { path: long, data: "deep" },
      { path: "ünï.txt", data: "u" },
    ],
    { root: "/workspace" },
  );
  const req = fake.last();
  assert.equal(req.url, "/v1/sessions/ses_a/files:batch?root=%2Fworkspace");
  assert.equal(req.headers["content-type"], "application/x-tar");
  assert.equal(req.body.length % 512, 0);
  const dir = mkdtempSync(join(tmpdir(), "sandgate-tar-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "b.tar"), req.body);
  const names = execFileSync("tar", ["-tf", "b.tar"], { cwd: dir, encoding: "utf8" }).trim().split("\n");
  assert.deepEqual(names, ["a.txt", "empty", "bin", long, "ünï.txt"]);
  execFileSync("tar", ["-xf", "b.tar"], { cwd: dir });
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "alpha");
  assert.equal(readFileSync(join(dir, long), "utf8"), "deep");
  assert.equal(readFileSync(join(dir, "bin")).length, 513);
  const verbose = execFileSync("tar", ["-tvf", "b.tar", "bin"], { cwd: dir, encoding: "utf8" });
  assert.match(verbose, /^-rw-r--r--/);
});

test("a streamed upload is not held: 256 MiB of fresh chunks in bounded memory", async () => {
  // fetch tees a streamed body it may have to resend on a redirect, and
  // keeps the copy: the SDK's calls refuse redirects so that none is made.
  const size = 256 << 20;
  let got = 0;
  // The fake keeps a body whole: this server discards it as it comes.
  const sink = await import("node:http").then((http) =>
    http.createServer((req, res) => {
      req.on("data", (c: Buffer) => (got += c.length));
      req.on("end", () => res.writeHead(204).end());
    }),
  );
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const port = (sink.address() as import("node:net").AddressInfo).port;
  const up = new Sandgate({ url: `http://127.0.0.1:${port}` }).session("ses_a");
  const seed = new Uint8Array(1 << 20).fill(3);
  async function* source(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < size / seed.byteLength; i++) {
      yield new Uint8Array(seed);
    }
  }
  const base = process.memoryUsage.rss();
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    await up.files.write("/big", source(), { size });
  } finally {
    clearInterval(sampler);
    sink.close();
  }
  assert.equal(got, size);
  const growth = (peak - base) / (1 << 20);
  assert.ok(growth < 96, `peak RSS grew by ${growth.toFixed(1)} MiB`);
});
