/**
 * Procs: commands the sandbox's agent runs in the background (or on a
 * PTY) past the call that started them, with their output kept in a ring
 * per stream to read from any offset, follow live, or attach to.
 */
import type WebSocket from "ws";

import { SessionApi } from "./api.js";
import { outputBytes, type BodyData } from "./body.js";
import { apiError, ProtocolError, TransportError } from "./errors.js";
import type { ListProcsResponse, ProcInfo, ProcOutputEvent, ProcRequest } from "./schema.js";
import type { CallOptions, Transport } from "./transport.js";

/** The signals a proc's group can be sent. */
export type ProcSignal = "TERM" | "KILL" | "INT" | "HUP" | "QUIT" | "USR1" | "USR2" | "STOP" | "CONT" | "WINCH";

/** OutputOptions are procOutput's. */
export interface OutputOptions extends CallOptions {
  /** One stream only (default both, interleaved as produced). */
  stream?: "stdout" | "stderr";
  /** The first byte offset wanted of each stream (one the ring dropped starts at its oldest byte). */
  from?: number;
  /** Stream live until the proc has exited and its output is drained. */
  follow?: boolean;
}

/** ProcChunk is a piece of a proc's output. */
export interface ProcChunk {
  type: "output";
  stream: "stdout" | "stderr";
  offset: number;
  /** The exact bytes. */
  data: Uint8Array;
  /** The bytes as UTF-8 (invalid bytes as U+FFFD). */
  text: string;
  /** Bytes before offset the ring no longer held. */
  dropped: number;
}

/** ProcEnd is the last event of a read: the proc as the read ended (still running when a read without follow ended first). */
export interface ProcEnd {
  type: "end";
  proc: ProcInfo;
}

/** ProcOutput is one event of a proc's output read. */
export type ProcOutput = ProcChunk | ProcEnd;

/** AttachOptions are attachProc's. */
export interface AttachOptions extends CallOptions {
  /** As OutputOptions.from. */
  from?: number;
}

/** Procs are the calls on one session's procs; they need the sandbox's agent (else NoAgentError). */
export class Procs extends SessionApi {
  /** @internal */
  constructor(transport: Transport, sessionId: string) {
    super(transport, sessionId);
  }

  /** start starts a proc: a command (or a ProcRequest: tty, cols, rows, ring_bytes, tag). */
  start(req: string | ProcRequest, opts: CallOptions = {}): Promise<ProcInfo> {
    const json: ProcRequest = typeof req === "string" ? { command: req } : req;
    return this.op("startProc", { ...opts, json }).json<ProcInfo>();
  }

  /** list is the session's procs, running and exited not yet removed, oldest first. */
  async list(opts: CallOptions = {}): Promise<ProcInfo[]> {
    const out = await this.op("listProcs", opts).json<ListProcsResponse>();
    return out.procs ?? [];
  }

  /** get is one proc. */
  get(pid: string, opts: CallOptions = {}): Promise<ProcInfo> {
    return this.op("getProc", { ...opts, params: { pid } }).json<ProcInfo>();
  }

  /** wait blocks until the proc has exited and its output is drained. */
  wait(pid: string, opts: CallOptions = {}): Promise<ProcInfo> {
    return this.op("waitProc", { ...opts, params: { pid } }).json<ProcInfo>();
  }

  /** remove kills the proc's group if it runs, and forgets it and its output. */
  remove(pid: string, opts: CallOptions = {}): Promise<void> {
    return this.op("removeProc", { ...opts, params: { pid } }).empty();
  }

  /** signal sends sig to the proc's whole process group. */
  signal(pid: string, sig: ProcSignal, opts: CallOptions = {}): Promise<void> {
    return this.op("signalProc", { ...opts, params: { pid }, query: { signal: sig } }).empty();
  }

  /** resize resizes a PTY proc's terminal. */
  resize(pid: string, cols: number, rows: number, opts: CallOptions = {}): Promise<void> {
    return this.op("resizeProc", { ...opts, params: { pid }, query: { cols, rows } }).empty();
  }

  /**
   * stdin writes data to the proc's stdin as it is read (a stream is sent
   * chunk by chunk); with close, stdin is closed after it (a PTY's gets ^D).
   */
  stdin(pid: string, data: BodyData | undefined, opts: CallOptions & { close?: boolean } = {}): Promise<void> {
    const req = { ...opts, params: { pid }, query: { close: opts.close === true ? true : undefined } };
    return this.op("procStdin", data === undefined ? req : { ...req, body: data }).empty();
  }

  /**
   * output reads the proc's output from an offset, optionally following it
   * live: its pieces, then its end. Leaving the loop early ends the read;
   * the proc is never touched by one.
   */
  async *output(pid: string, opts: OutputOptions = {}): AsyncGenerator<ProcOutput, void, undefined> {
    const query = { stream: opts.stream, from: opts.from, follow: opts.follow === true ? true : undefined };
    for await (const line of this.op("procOutput", { ...opts, params: { pid }, query }).lines()) {
      const ev = line as ProcOutputEvent;
      if (ev.output !== undefined) {
        const o = ev.output;
        yield {
          type: "output",
          stream: o.stream,
          offset: o.offset,
          data: outputBytes(o.text, o.data_base64),
          text: o.text,
          dropped: o.dropped ?? 0,
        };
      } else if (ev.error !== undefined) {
        throw apiError(ev.error.code, ev.error.message);
      } else if (ev.end !== undefined) {
        yield { type: "end", proc: ev.end };
        return;
      }
    }
    throw new ProtocolError("GET proc output: the answer ended without its end");
  }

  /**
   * attach attaches to a proc over a WebSocket: its output as it comes, its
   * stdin and its controls. The signal bounds the whole attach (aborting
   * it detaches); timeoutMs bounds the handshake. Detaching leaves the proc
   * running.
   */
  attach(pid: string, opts: AttachOptions = {}): Promise<Attachment> {
    return this.op("attachProc", { ...opts, params: { pid }, query: { from: opts.from } }).websocket(
      (ws) => new Attachment(ws, opts.signal),
    );
  }
}

/** AttachChunk is a piece of an attached proc's output. */
export interface AttachChunk {
  stream: "stdout" | "stderr";
  data: Uint8Array;
}

/** The attach protocol's first byte of an output message (api_attach.go). */
const ATTACH_STDERR = 2;

/**
 * queueHigh is how many output messages an Attachment holds before it
 * stops reading the socket, so a slow reader holds the proc back (through
 * the agent's ring) rather than this process's memory.
 */
const queueHigh = 64;

/**
 * Attachment is a live attach to a proc: iterate it for the output (it
 * ends when the proc has exited and its output is drained), write its
 * stdin, and control it. `done` is the proc as it ended.
 */
export class Attachment implements AsyncIterable<AttachChunk> {
  /**
   * The proc as it ended; rejects if the attach ended otherwise (an error, a
   * detach). The end comes after the output: iterate the output (a reader
   * that stops holds the socket, and so the end, back), or close to detach.
   */
  readonly done: Promise<ProcInfo>;

  private readonly queue: AttachChunk[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: unknown = undefined;
  private settle!: { resolve: (p: ProcInfo) => void; reject: (err: unknown) => void };

  /** @internal */
  constructor(
    private readonly ws: WebSocket,
    signal: AbortSignal | undefined,
  ) {
    this.done = new Promise<ProcInfo>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // A caller who only iterates never awaits done: its rejection must not
    // count as unhandled (which ends a Node process).
    this.done.catch(() => {});
    ws.on("message", (data: Buffer, isBinary: boolean) => this.receive(data, isBinary));
    ws.on("close", () => this.finish(new TransportError("attach: the connection closed before the proc's end")));
    ws.on("error", (err) => this.finish(new TransportError(`attach: ${err.message}`, { cause: err })));
    if (signal !== undefined) {
      const onAbort = (): void => {
        this.finish(signal.reason);
        this.ws.terminate();
      };
      if (signal.aborted) {
        onAbort();
      } else {
        signal.addEventListener("abort", onAbort, { once: true });
        this.done.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
      }
    }
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (this.ended) {
      return;
    }
    if (!isBinary) {
      this.end(data.toString("utf8"));
      return;
    }
    if (data.byteLength === 0) {
      return;
    }
    const stream = data[0] === ATTACH_STDERR ? "stderr" : "stdout";
    this.queue.push({ stream, data: new Uint8Array(data.buffer, data.byteOffset + 1, data.byteLength - 1) });
    if (this.queue.length >= queueHigh) {
      this.ws.pause();
    }
    this.poke();
  }

  /** end reads the server's last message: {"end": ProcInfo} or {"error": {code, message}}. */
  private end(text: string): void {
    let msg: { end?: ProcInfo; error?: { code: string; message: string } };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch (err) {
      this.finish(new ProtocolError("attach: a malformed end message", { cause: err }));
      return;
    }
    if (msg.error !== undefined) {
      this.finish(apiError(msg.error.code, msg.error.message));
    } else if (msg.end !== undefined) {
      this.finish(undefined, msg.end);
    } else {
      this.finish(new ProtocolError("attach: an end message without the proc"));
    }
  }

  private finish(err: unknown, proc?: ProcInfo): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    if (proc !== undefined) {
      this.settle.resolve(proc);
    } else {
      this.failure = err;
      this.settle.reject(err);
    }
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The output, piece by piece; the iteration throws what ended the attach if it was not the proc's end. */
  async *[Symbol.asyncIterator](): AsyncGenerator<AttachChunk, void, undefined> {
    for (;;) {
      const next = this.queue.shift();
      if (next !== undefined) {
        if (this.queue.length < queueHigh / 2 && this.ws.isPaused) {
          this.ws.resume();
        }
        yield next;
        continue;
      }
      if (this.ended) {
        if (this.failure !== undefined) {
          throw this.failure;
        }
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  /** write sends data to the proc's stdin. */
  write(data: string | Uint8Array): Promise<void> {
    return this.send(typeof data === "string" ? Buffer.from(data, "utf8") : data, true);
  }

  /** resize resizes the proc's terminal. */
  resize(cols: number, rows: number): Promise<void> {
    return this.send(JSON.stringify({ resize: { cols, rows } }), false);
  }

  /** signal sends sig to the proc's group. */
  signal(sig: ProcSignal): Promise<void> {
    return this.send(JSON.stringify({ signal: sig }), false);
  }

  /** closeStdin closes the proc's stdin (a PTY's gets its EOF character). */
  closeStdin(): Promise<void> {
    return this.send(JSON.stringify({ close_stdin: true }), false);
  }

  /** close detaches; the proc runs on. */
  close(): void {
    this.finish(new TransportError("attach: detached"));
    this.ws.close(1000);
  }

  private send(data: string | Uint8Array, binary: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.ws.send(data, { binary }, (err) => {
        if (err === undefined || err === null) {
          resolve();
        } else {
          reject(new TransportError(`attach: ${err.message}`, { cause: err }));
        }
      });
    });
  }
}
