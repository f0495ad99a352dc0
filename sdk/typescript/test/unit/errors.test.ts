/** The error classes: one per code of the API, found by the code. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  apiError,
  BusyError,
  CodedError,
  ERROR_CLASSES,
  ERROR_CODES,
  InternalError,
  NotFoundError,
  PortClosedError,
  ProtocolError,
  SandgateError,
  TimeoutError,
  TransportError,
} from "sandgate";

/**
 * The codes the server answers with: openapi.json's enum, and the Code*
 * constants of adapters/httpapi (the enum lacks some, e.g. no_agent).
 */
function serverCodes(): string[] {
  const root = new URL("../../../../", import.meta.url);
  const codes = new Set<string>(ERROR_CODES);
  for (const f of ["api_errors.go", "body.go", "gateconfig.go", "api_ports.go"]) {
    const src = readFileSync(new URL(`adapters/httpapi/${f}`, root), "utf8");
    for (const m of src.matchAll(/\bCode\w+\s*=\s*"([a-z_]+)"/g)) {
      codes.add(m[1]!);
    }
  }
  return [...codes].sort();
}

test("every code of the API has its class", () => {
  const codes = serverCodes();
  assert.ok(codes.length >= 32, `only ${codes.length} codes found`);
  for (const code of codes) {
    const cls = ERROR_CLASSES[code];
    assert.ok(cls !== undefined, `no class for ${code}`);
    const err = apiError(code, "why", 418);
    assert.ok(err instanceof cls);
    assert.ok(err instanceof CodedError);
    assert.ok(err instanceof SandgateError);
    assert.ok(err instanceof Error);
    assert.equal(err.code, code);
    assert.equal(err.message, "why");
    assert.equal(err.status, 418);
    assert.equal(err.name, cls.name);
    assert.match(cls.name, /^[A-Z]\w+Error$/);
  }
  assert.deepEqual(Object.keys(ERROR_CLASSES).sort(), codes, "no class for a code the server never sends");
});

test("a code's status is the one it is answered with when the stream did not carry it", () => {
  assert.equal(apiError("not_found", "x").status, 404);
  assert.equal(apiError("port_closed", "x").status, 502);
  assert.equal(new PortClosedError("x").status, 502);
  assert.equal(new NotFoundError("x").code, "not_found");
  assert.equal(new BusyError("x", 503, { retryAfter: 2 }).retryAfter, 2);
});

test("an unknown code is a plain SandgateError; Object's own names are no code", () => {
  for (const code of ["brand_new", "constructor", "toString"]) {
    const err = apiError(code, "m", 409);
    assert.equal(Object.getPrototypeOf(err), SandgateError.prototype);
    assert.equal(err.code, code);
    assert.equal(err.status, 409);
  }
  assert.equal(apiError("brand_new", "m").status, 500);
});

test("the client's own errors are apart from the API's", () => {
  const t = new TimeoutError("slow", 5);
  assert.ok(t instanceof TransportError);
  assert.ok(!(t instanceof SandgateError));
  assert.equal(t.timeoutMs, 5);
  assert.equal(t.name, "TimeoutError");
  assert.ok(new ProtocolError("bad") instanceof TransportError);
  assert.ok(!(new InternalError("x") instanceof TransportError));
});
