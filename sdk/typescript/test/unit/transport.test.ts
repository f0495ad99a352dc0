/**
 * The transport against a fake executor: what a call sends, how an error
 * answer is mapped, and how timeouts, aborts and dead servers fail.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  BusyError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  Sandgate,
  SandgateError,
  TimeoutError,
  TransportError,
  UnauthorizedError,
} from "sandgate";

import { FakeServer, writeError } from "./fake.js";

let fake: FakeServer;
let sg: Sandgate;

before(async () => {
  fake = await FakeServer.start();
  sg = new Sandgate({ url: fake.url + "/", token: "tok" });
});
after(() => fake.close());

const info = { id: "ses_a", gated: false, state: "running" };

test("a call sends its method, path, token and JSON body", async () => {
  fake.onJSON("PUT", "/v1/sessions/ses_a", 200, info);
  const got = await sg.sessions.provision("ses_a", { image: "debian:bookworm", env: { A: "1" } });
  assert.deepEqual(got, info);
  const s = fake.last();
  assert.equal(s.method, "PUT");
  assert.equal(s.headers.authorization, "Bearer tok");
  assert.equal(s.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(s.body.toString()), { image: "debian:bookworm", env: { A: "1" } });
});

test("list, get and delete", async () => {
  fake.onJSON("GET", "/v1/sessions", 200, { sessions: [info] });
  assert.deepEqual(await sg.sessions.list(), [info]);
  fake.onJSON("GET", "/v1/sessions/ses_a", 200, info);
  assert.deepEqual(await sg.session("ses_a").info(), info);
  fake.on("DELETE", "/v1/sessions/ses_a", (_req, res) => {
    res.writeHead(204).end();
  });
  await sg.sessions.delete("ses_a", { checkpoint: true });
  assert.equal(fake.last().url, "/v1/sessions/ses_a?checkpoint=true");
  await sg.session("ses_a").delete();
  assert.equal(fake.last().url, "/v1/sessions/ses_a");
});

test("path parameters are escaped, and query values encoded", async () => {
  fake.onJSON("GET", "/v1/sessions/a%2Fb%3Fc/files:stat", 200, { name: "/x" });
  await sg.session("a/b?c").files.stat("/w/a b&c=d");
  assert.equal(fake.last().url, "/v1/sessions/a%2Fb%3Fc/files:stat?path=%2Fw%2Fa+b%26c%3Dd");
});

test("an id the URL would normalise away is refused before sending", async () => {
  const n = fake.seen.length;
  for (const id of ["", ".", ".."]) {
    await assert.rejects(sg.sessions.get(id), (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError);
      assert.equal(err.status, 400);
      return true;
    });
  }
  assert.equal(fake.seen.length, n, "nothing was sent");
});

test("an error answer becomes its code's class, with status and message", async () => {
  fake.on("GET", "/v1/sessions/ses_gone", (_req, res) => writeError(res, 404, "not_found", "session ses_gone: not found"));
  await assert.rejects(sg.sessions.get("ses_gone"), (err: unknown) => {
    assert.ok(err instanceof NotFoundError);
    assert.equal(err.code, "not_found");
    assert.equal(err.status, 404);
    assert.equal(err.message, "session ses_gone: not found");
    return true;
  });
  fake.on("GET", "/v1/sessions/ses_busy", (_req, res) => writeError(res, 503, "busy", "try later", { "retry-after": "3" }));
  await assert.rejects(sg.sessions.get("ses_busy"), (err: unknown) => err instanceof BusyError && err.retryAfter === 3);
  fake.on("GET", "/v1/sessions/ses_auth", (_req, res) => writeError(res, 401, "unauthorized", "a valid API token is required"));
  await assert.rejects(sg.sessions.get("ses_auth"), UnauthorizedError);
  fake.on("GET", "/v1/sessions/ses_new", (_req, res) => writeError(res, 409, "brand_new", "m"));
  await assert.rejects(sg.sessions.get("ses_new"), (err: unknown) => err instanceof SandgateError && err.code === "brand_new" && err.status === 409);
});

test("an answer that is not the API's error is an InternalError with its status", async () => {
  fake.on("GET", "/v1/sessions/ses_proxy", (_req, res) => {
    res.writeHead(502, { "content-type": "text/html" });
    res.end("<html>bad gateway</html>");
  });
  await assert.rejects(sg.sessions.get("ses_proxy"), (err: unknown) => {
    assert.ok(err instanceof InternalError);
    assert.equal(err.status, 502);
    assert.match(err.message, /unexpected answer: 502/);
    return true;
  });
});

test("a call over its timeout is a TimeoutError, the answer's body included", async () => {
  fake.on("GET", "/v1/sessions/ses_slow", (_req, res) => {
    setTimeout(() => res.writeHead(200).end(JSON.stringify(info)), 2000).unref();
  });
  const t0 = Date.now();
  await assert.rejects(sg.sessions.get("ses_slow", { timeoutMs: 100 }), (err: unknown) => {
    assert.ok(err instanceof TimeoutError, String(err));
    assert.equal(err.timeoutMs, 100);
    return true;
  });
  assert.ok(Date.now() - t0 < 1500);
  // The client's default applies to every call.
  const slow = new Sandgate({ url: fake.url, token: "tok", timeoutMs: 100 });
  await assert.rejects(slow.sessions.get("ses_slow"), TimeoutError);
  // A streamed answer that stalls half-way.
  fake.on("GET", "/v1/sessions/ses_a/files", (_req, res) => {
    res.writeHead(200, { "content-length": "10" });
    res.write("hello");
  });
  const { stream } = await sg.session("ses_a").files.readStream("/f", { timeoutMs: 200 });
  await assert.rejects(
    (async () => {
      for await (const _ of stream) {
        // drain
      }
    })(),
    TimeoutError,
  );
});

test("an aborted call rejects with the signal's reason", async () => {
  fake.on("GET", "/v1/sessions/ses_hang", () => {
    // never answers
  });
  const ac = new AbortController();
  const p = sg.sessions.get("ses_hang", { signal: ac.signal, timeoutMs: 5000 });
  setTimeout(() => ac.abort(), 50);
  await assert.rejects(p, (err: unknown) => err instanceof Error && err.name === "AbortError");
  const reason = new Error("mine");
  await assert.rejects(sg.sessions.get("ses_hang", { signal: AbortSignal.abort(reason) }), (err: unknown) => err === reason);
});

test("no answer at all is a TransportError", async () => {
  const dead = new Sandgate({ url: "http://127.0.0.1:1" });
  await assert.rejects(dead.sessions.list(), (err: unknown) => {
    assert.ok(err instanceof TransportError);
    assert.ok(!(err instanceof TimeoutError));
    assert.match(err.message, /GET \/v1\/sessions/);
    return true;
  });
});

test("the URL must be an absolute http(s) URL", () => {
  assert.throws(() => new Sandgate({ url: "127.0.0.1:7070" }), TypeError);
  assert.throws(() => new Sandgate({ url: "ftp://x" }), TypeError);
  assert.doesNotThrow(() => new Sandgate({ url: "https://x/prefix/" }));
});

test("a base URL's path prefixes every call", async () => {
  fake.onJSON("GET", "/prefix/v1/sessions", 200, { sessions: [] });
  const prefixed = new Sandgate({ url: fake.url + "/prefix/" });
  assert.deepEqual(await prefixed.sessions.list(), []);
  assert.equal(fake.last().headers.authorization, undefined, "no token, no header");
});
