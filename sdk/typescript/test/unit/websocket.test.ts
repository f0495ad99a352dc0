/**
 * The WebSocket calls against a fake executor: a proc's attach (output,
 * stdin, controls, end) and a port's connection (a Duplex, a local
 * listener), and their errors before the upgrade.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import type { WebSocket } from "ws";

import {
  NoAgentError,
  PortClosedError,
  ProcNotFoundError,
  Sandgate,
  TooManyStreamsError,
  TransportError,
  UnauthorizedError,
} from "sandgate";

import { FakeServer } from "./fake.js";

let fake: FakeServer;
let s: ReturnType<Sandgate["session"]>;

before(async () => {
  fake = await FakeServer.start();
  s = new Sandgate({ url: fake.url, token: "tok" }).session("ses_a");
});
after(() => fake.close());

const end = { id: "p1", pid: 7, tty: true, command: "bash", state: "exited", exit_code: 3, signaled: false, started_at: "2026-01-01T00:00:00Z", stdout_bytes: 5, stderr_bytes: 1 };

/** frame is an output message of the attach protocol: the stream's byte, then the bytes. */
function frame(stream: 1 | 2, text: string): Buffer {
  return Buffer.concat([Buffer.from([stream]), Buffer.from(text)]);
}

test("attach: output, stdin and controls, then the proc's end", async () => {
  const received: (string | Buffer)[] = [];
  let auth: string | undefined;
  let url: string | undefined;
  fake.onWS("/v1/sessions/ses_a/procs/p1/attach", (ws: WebSocket, req) => {
    auth = req.headers.authorization;
    url = req.url;
    ws.send(frame(1, "hel"));
    ws.send(frame(2, "e"));
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      received.push(isBinary ? data : data.toString());
      if (!isBinary && data.toString().includes("close_stdin")) {
        ws.send(frame(1, "lo"));
        ws.send(JSON.stringify({ end }));
        ws.close(1000);
      }
    });
  });
  const a = await s.procs.attach("p1", { from: 4 });
  assert.equal(auth, "Bearer tok");
  assert.equal(url, "/v1/sessions/ses_a/procs/p1/attach?from=4");
  await a.write("ls\n");
  await a.write(new Uint8Array([0, 255]));
  await a.resize(100, 30);
  await a.signal("INT");
  await a.closeStdin();
  const out: string[] = [];
  for await (const c of a) {
    out.push(`${c.stream}:${Buffer.from(c.data).toString()}`);
  }
  assert.deepEqual(out, ["stdout:hel", "stderr:e", "stdout:lo"]);
  assert.deepEqual(await a.done, end);
  assert.deepEqual(received, [
    Buffer.from("ls\n"),
    Buffer.from([0, 255]),
    JSON.stringify({ resize: { cols: 100, rows: 30 } }),
    JSON.stringify({ signal: "INT" }),
    JSON.stringify({ close_stdin: true }),
  ]);
});

test("attach: an error end, a dropped connection, and a detach", async () => {
  fake.onWS("/v1/sessions/ses_a/procs/p2/attach", (ws: WebSocket) => {
    ws.send(JSON.stringify({ error: { code: "no_agent", message: "gone" } }));
    ws.close(1000);
  });
  const a = await s.procs.attach("p2");
  await assert.rejects(a.done, (e: unknown) => e instanceof NoAgentError && e.status === 501);
  await assert.rejects((async () => {
    for await (const _ of a) {
      // nothing
    }
  })(), NoAgentError);

  fake.onWS("/v1/sessions/ses_a/procs/p3/attach", (ws: WebSocket) => ws.terminate());
  const b = await s.procs.attach("p3");
  await assert.rejects(b.done, TransportError);

  fake.onWS("/v1/sessions/ses_a/procs/p4/attach", () => {
    // stays open
  });
  const c = await s.procs.attach("p4");
  c.close();
  await assert.rejects(c.done, /detached/);
  const ac = new AbortController();
  const d = await s.procs.attach("p4", { signal: ac.signal });
  ac.abort();
  await assert.rejects(d.done, (e: unknown) => e instanceof Error && e.name === "AbortError");
});

test("attach: a slow reader holds the socket back, and loses nothing", async () => {
  const n = 500;
  fake.onWS("/v1/sessions/ses_a/procs/p5/attach", (ws: WebSocket) => {
    for (let i = 0; i < n; i++) {
      ws.send(frame(1, `${i},`));
    }
    ws.send(JSON.stringify({ end }));
    ws.close(1000);
  });
  const a = await s.procs.attach("p5");
  let text = "";
  for await (const c of a) {
    text += Buffer.from(c.data).toString();
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(text, Array.from({ length: n }, (_, i) => `${i},`).join(""));
  assert.equal((await a.done).exit_code, 3);
});

/**
 * rawServer answers every request with status and the API's error, as the
 * executor answers an upgrade it refuses (before switching protocols).
 */
async function rawServer(status: number, code: string, message: string): Promise<{ url: string; close: () => void }> {
  const srv = net.createServer((sock) => {
    sock.once("data", () => {
      const body = JSON.stringify({ error: { code, message } });
      sock.end(`HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`, close: () => srv.close() };
}

test("an answer other than the upgrade is the API's error", async () => {
  const cases = [
    [404, "proc_not_found", ProcNotFoundError, "attach"],
    [401, "unauthorized", UnauthorizedError, "attach"],
    [501, "no_agent", NoAgentError, "connect"],
    [429, "too_many_streams", TooManyStreamsError, "connect"],
    [502, "port_closed", PortClosedError, "connect"],
  ] as const;
  for (const [status, code, cls, call] of cases) {
    const srv = await rawServer(status, code, `because ${code}`);
    const c = new Sandgate({ url: srv.url }).session("ses_a");
    const p = call === "attach" ? c.procs.attach("p1") : c.ports.connect(8002);
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof cls, String(e));
      assert.equal(e.status, status);
      assert.equal(e.message, `because ${code}`);
      return true;
    });
    srv.close();
  }
});

test("connect: a Duplex carrying the bytes both ways", async () => {
  fake.onWS("/v1/sessions/ses_a/ports/8000:connect", (ws: WebSocket) => {
    ws.on("message", (data: Buffer) => ws.send(Buffer.concat([Buffer.from("echo:"), data])));
  });
  const conn = await s.ports.connect(8000);
  const got = new Promise<string>((resolve) => conn.once("data", (d: Buffer) => resolve(d.toString())));
  conn.write("ping");
  assert.equal(await got, "echo:ping");
  conn.destroy();
});

test("forward: a local listener whose connections reach the port", async () => {
  fake.onWS("/v1/sessions/ses_a/ports/8001:connect", (ws: WebSocket) => {
    ws.on("message", (data: Buffer) => {
      ws.send(Buffer.from(data.toString().toUpperCase()));
      ws.close(1000);
    });
  });
  const fwd = await s.ports.forward(8001);
  assert.equal(fwd.host, "127.0.0.1");
  for (let i = 0; i < 3; i++) {
    const sock = net.connect(fwd.port, fwd.host);
    sock.write(`hello ${i}`);
    let text = "";
    for await (const c of sock as AsyncIterable<Buffer>) {
      text += c.toString();
    }
    assert.equal(text, `HELLO ${i}`);
  }
  await fwd.close();
  await assert.rejects(new Promise((resolve, reject) => net.connect(fwd.port, fwd.host).once("connect", resolve).once("error", reject)));
});

test("sign: the TTL travels in the body", async () => {
  const signed = { url: "http://x/v1/sessions/ses_a/ports/8000/?sandgate_sig=1.a", path: "/v1/sessions/ses_a/ports/8000/?sandgate_sig=1.a", expires_at: "2026-01-01T00:00:00Z" };
  fake.onJSON("POST", "/v1/sessions/ses_a/ports/8000:sign", 200, signed);
  assert.deepEqual(await s.ports.sign(8000, { ttlSeconds: 60 }), signed);
  assert.deepEqual(JSON.parse(fake.last().body.toString()), { ttl_seconds: 60 });
  await s.ports.sign(8000);
  assert.deepEqual(JSON.parse(fake.last().body.toString()), {});
});
