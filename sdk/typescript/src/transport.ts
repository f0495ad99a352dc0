/**
 * The transport: every call of the SDK is one operation of openapi.json,
 * named by its operationId and looked up in the generated OPERATIONS table,
 * so a method and a path are written in one place only (schema.ts, made by
 * sdk/gen from openapi.json).
 */
import type { IncomingMessage } from "node:http";
import WebSocket from "ws";

import { mapStream, prepareBody, readLimited, type BodyData } from "./body.js";
import { apiError, InternalError, InvalidArgumentError, SandgateError, TimeoutError, TransportError } from "./errors.js";
import { ndjsonLines } from "./ndjson.js";
import { OPERATIONS, QUERY, type OperationId } from "./schema.js";

/** CallOptions are what every call takes. */
export interface CallOptions {
  /** Cancels the call; it then rejects with the signal's reason, as fetch does. */
  signal?: AbortSignal;
  /**
   * Milliseconds the call may take, reading a streamed answer included
   * (for a WebSocket, its handshake); then it fails with TimeoutError.
   * Absent: the client's timeoutMs; 0: none.
   */
  timeoutMs?: number;
}

/** A query parameter's value; undefined leaves it out. */
export type QueryValue = string | number | boolean | undefined;

/** OpRequest is one call of an operation: its path parameters, query and body. */
export interface OpRequest extends CallOptions {
  /** The path template's parameters ({id}, {pid}, {port}). */
  params?: Record<string, string | number>;
  query?: Record<string, QueryValue>;
  /** A JSON body. */
  json?: unknown;
  /** A byte body, with contentType. */
  body?: BodyData;
  /** The byte body's size, when the caller knows it and it is not implied by the body (a stream's). */
  size?: number;
  contentType?: string;
}

/** TransportOptions configure a Transport. */
export interface TransportOptions {
  /** The executor's base URL, e.g. http://127.0.0.1:7070. */
  url: string;
  /** The API token (SANDGATE_API_TOKEN); none when absent. */
  token?: string;
  /** The default of every call's timeoutMs (absent or 0: none). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** maxErrorBody bounds the error answer the SDK reads, as the Go client's. */
const maxErrorBody = 64 << 10;

/**
 * ws' own bound on a message is 100 MiB; the API's messages are pieces of
 * output and controls, far smaller.
 */
const maxMessage = 16 << 20;

/** Transport sends the operations of one executor. */
export class Transport {
  readonly base: URL;
  /** The base URL's path without its trailing slashes: what every operation's path follows. */
  readonly prefix: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;
  readonly fetch: typeof fetch;

  constructor(opts: TransportOptions) {
    let u: URL;
    try {
      u = new URL(opts.url);
    } catch {
      throw new TypeError(`sandgate: url ${JSON.stringify(opts.url)} must be an absolute http or https URL`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`sandgate: url ${JSON.stringify(opts.url)} must be an absolute http or https URL`);
    }
    u.search = "";
    u.hash = "";
    this.base = u;
    this.prefix = u.pathname.replace(/\/+$/, "");
    this.token = opts.token === "" ? undefined : opts.token;
    this.timeoutMs = opts.timeoutMs ?? 0;
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** op prepares one call of the operation id. Nothing is sent until one of the Call's methods runs. */
  op(id: OperationId, req: OpRequest = {}): Call {
    return new Call(this, id, req);
  }
}

/**
 * Deadline is one call's cancellation: the caller's signal and the call's
 * timeout as one signal, and the rule that says which error a failure is.
 */
class Deadline {
  readonly signal: AbortSignal | undefined;
  private readonly timer: AbortSignal | undefined;

  constructor(
    private readonly user: AbortSignal | undefined,
    private readonly ms: number,
    private readonly what: string,
  ) {
    this.timer = ms > 0 ? AbortSignal.timeout(ms) : undefined;
    const signals = [user, this.timer].filter((s): s is AbortSignal => s !== undefined);
    this.signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  }

  /**
   * fail is the error a call that failed with err rejects with: the API's
   * and the SDK's own errors as they are; a timeout as TimeoutError; the
   * caller's abort as its reason; anything else as a TransportError.
   */
  fail = (err: unknown): unknown => {
    if (err instanceof SandgateError || err instanceof TransportError) {
      return err;
    }
    if (this.timer?.aborted === true && this.user?.aborted !== true) {
      return new TimeoutError(`${this.what}: timed out after ${this.ms} ms`, this.ms, { cause: err });
    }
    if (this.user?.aborted === true) {
      return this.user.reason;
    }
    const detail = err instanceof Error ? errorText(err) : String(err);
    return new TransportError(`${this.what}: ${detail}`, { cause: err });
  };
}

/** errorText is an error's message with its cause's (fetch says "fetch failed" and puts the reason in cause). */
function errorText(err: Error): string {
  const cause = err.cause;
  return cause instanceof Error && cause.message !== "" ? `${err.message}: ${cause.message}` : err.message;
}

/** StreamedBody is a streamed answer: its bytes, and its size when the server said (Content-Length). */
export interface StreamedBody {
  size: number | undefined;
  stream: ReadableStream<Uint8Array>;
}

/** Call is one prepared call of an operation. */
export class Call {
  readonly method: string;
  private readonly path: string;
  private readonly what: string;

  constructor(
    private readonly t: Transport,
    readonly id: OperationId,
    private readonly req: OpRequest,
  ) {
    const [method, template] = OPERATIONS[id];
    this.method = method;
    this.path = template;
    this.what = `${method} ${template}`;
  }

  /**
   * url is the call's URL. Path parameters are escaped; one that is empty,
   * "." or ".." would name another route once the URL is normalised, so it
   * is refused here with the API's code for a malformed request.
   */
  url(): URL {
    const params = this.req.params ?? {};
    const path = this.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const v = params[name];
      if (v === undefined) {
        throw new TypeError(`sandgate: ${this.id}: the path parameter ${name} is missing`);
      }
      const s = String(v);
      if (s === "" || s === "." || s === "..") {
        throw new InvalidArgumentError(`invalid request: ${name}: ${JSON.stringify(s)} is not a valid ${name}`);
      }
      return encodeURIComponent(s);
    });
    const u = new URL(this.t.base.href);
    u.pathname = this.t.prefix + path;
    const declared: readonly string[] = QUERY[this.id] ?? [];
    for (const [k, v] of Object.entries(this.req.query ?? {})) {
      if (v === undefined) {
        continue;
      }
      // openapi.json is the one list of an operation's parameters: a name
      // it does not declare is this SDK's mistake, caught before sending.
      if (!declared.includes(k)) {
        throw new TypeError(`sandgate: ${this.id} has no query parameter ${k}`);
      }
      u.searchParams.set(k, String(v));
    }
    return u;
  }

  private deadline(): Deadline {
    return new Deadline(this.req.signal, this.req.timeoutMs ?? this.t.timeoutMs, this.what);
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.t.token !== undefined) {
      h["authorization"] = `Bearer ${this.t.token}`;
    }
    return h;
  }

  /** send makes the call and returns a 2xx answer; any other answer rejects with its SandgateError. */
  async send(): Promise<Response> {
    return (await this.start()).resp;
  }

  private async start(): Promise<{ resp: Response; deadline: Deadline }> {
    const deadline = this.deadline();
    const url = this.url();
    const headers = this.headers();
    // redirect "error": the API answers no call with a redirect, and with
    // any other mode fetch clones the request, teeing a streamed body into
    // a copy it never reads: a 256 MiB upload was then held whole.
    const init: RequestInit & { duplex?: "half" } = { method: this.method, headers, redirect: "error" };
    if (deadline.signal !== undefined) {
      init.signal = deadline.signal;
    }
    if (this.req.json !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(this.req.json);
    } else if (this.req.body !== undefined) {
      const b = prepareBody(this.req.body);
      headers["content-type"] = this.req.contentType ?? "application/octet-stream";
      const size = this.req.size ?? b.size;
      if (size !== undefined) {
        // Also for a stream: fetch then sends it with that length rather
        // than chunked (a file write needs one).
        headers["content-length"] = String(size);
      }
      init.body = b.body;
      if (b.streamed) {
        init.duplex = "half";
      }
    }
    let resp: Response;
    try {
      resp = await this.t.fetch(url, init);
    } catch (err) {
      throw deadline.fail(err);
    }
    if (resp.status >= 200 && resp.status < 300) {
      return { resp, deadline };
    }
    throw await decodeError(resp.status, resp.statusText, resp.headers.get("retry-after"), () =>
      readLimited(resp.body, maxErrorBody),
    );
  }

  /** json makes the call and decodes its JSON answer. */
  async json<T>(): Promise<T> {
    const { resp, deadline } = await this.start();
    let text: string;
    try {
      text = await resp.text();
    } catch (err) {
      throw deadline.fail(err);
    }
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new TransportError(`${this.what}: the answer is not JSON`, { cause: err });
    }
  }

  /** empty makes a call whose answer has no body (204). */
  async empty(): Promise<void> {
    const { resp, deadline } = await this.start();
    try {
      await resp.body?.cancel();
    } catch (err) {
      throw deadline.fail(err);
    }
  }

  /** stream makes the call and hands its answer's body on as it arrives. */
  async stream(): Promise<StreamedBody> {
    const { resp, deadline } = await this.start();
    const len = resp.headers.get("content-length");
    const size = len === null ? undefined : Number(len);
    const body = resp.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
    return { size: Number.isSafeInteger(size) ? size : undefined, stream: mapStream(body, deadline.fail) };
  }

  /** lines makes the call and yields each line of its NDJSON answer as it arrives. */
  async *lines(): AsyncGenerator<unknown, void, undefined> {
    const { stream } = await this.stream();
    yield* ndjsonLines(stream, this.what);
  }

  /**
   * websocket opens the call as a WebSocket. An answer other than the
   * upgrade is the API's error (an unknown proc is a plain 404). The
   * signal and timeout bound the handshake only: the caller owns the
   * socket from then on. take is called as the socket opens, before any
   * message is read: listeners it adds miss none (a message that arrives
   * with the upgrade is emitted before a promise's continuation runs).
   */
  async websocket<T>(take: (ws: WebSocket) => T): Promise<T> {
    const deadline = this.deadline();
    const url = this.url();
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return await new Promise<T>((resolve, reject) => {
      const signal = deadline.signal;
      if (signal?.aborted === true) {
        reject(deadline.fail(signal.reason));
        return;
      }
      const ws = new WebSocket(url, { headers: this.headers(), maxPayload: maxMessage, perMessageDeflate: false });
      let settled = false;
      const settle = (err: unknown | undefined): void => {
        if (settled) {
          return;
        }
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) {
          reject(err);
          return;
        }
        try {
          resolve(take(ws));
        } catch (e) {
          ws.terminate();
          reject(e);
        }
      };
      const onAbort = (): void => {
        ws.terminate();
        settle(deadline.fail(signal?.reason));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      ws.once("unexpected-response", (req, res: IncomingMessage) => {
        decodeError(res.statusCode ?? 0, res.statusMessage ?? "", header(res.headers["retry-after"]), () =>
          readNodeLimited(res, maxErrorBody),
        ).then(
          (err) => {
            req.destroy();
            settle(err);
          },
          (err: unknown) => {
            req.destroy();
            settle(deadline.fail(err));
          },
        );
      });
      ws.once("error", (err) => settle(deadline.fail(err)));
      ws.once("open", () => settle(undefined));
    });
  }
}

function header(v: string | string[] | undefined): string | null {
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
}

/** readNodeLimited reads at most max bytes of a Node answer as text. */
async function readNodeLimited(res: IncomingMessage, max: number): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      parts.push(chunk);
      n += chunk.byteLength;
      if (n >= max) {
        break;
      }
    }
  } catch {
    // As readLimited: decode what arrived.
  }
  return Buffer.concat(parts).subarray(0, max).toString("utf8");
}

/**
 * decodeError is the error of an answer that is not a success. An answer
 * that is not the API's error shape (a proxy's page) is an InternalError
 * with the status, as the Go client makes it.
 */
async function decodeError(
  status: number,
  statusText: string,
  retryAfter: string | null,
  read: () => Promise<string>,
): Promise<SandgateError> {
  const raw = await read();
  const retry = retryAfter === null ? undefined : Number.parseInt(retryAfter, 10);
  const opts = Number.isFinite(retry) ? { retryAfter: retry as number } : {};
  let code: unknown;
  let message: unknown;
  try {
    const body = JSON.parse(raw) as { error?: { code?: unknown; message?: unknown } };
    code = body.error?.code;
    message = body.error?.message;
  } catch {
    // Not JSON: below.
  }
  if (typeof code !== "string" || code === "") {
    return new InternalError(`unexpected answer: ${status} ${statusText}`.trim(), status, opts);
  }
  return apiError(code, typeof message === "string" ? message : "", status, opts);
}
