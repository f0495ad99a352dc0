/**
 * Session is one session's handle: its commands (exec, exec:stream), its
 * export, and the groups of its files, procs and ports.
 */
import { SessionApi } from "./api.js";
import { outputBytes } from "./body.js";
import { apiError, ProtocolError } from "./errors.js";
import { Files } from "./files.js";
import { Ports } from "./ports.js";
import { Procs } from "./procs.js";
import type { ExecRequest, ExecResult, ExecStreamEvent, ExecStreamEventResult, SessionInfo } from "./schema.js";
import type { DeleteOptions } from "./sessions.js";
import type { CallOptions, Transport } from "./transport.js";

/** OutputChunk is a piece of a command's output, at its byte offset in its stream. */
export interface OutputChunk {
  type: "output";
  stream: "stdout" | "stderr";
  offset: number;
  /** The exact bytes. */
  data: Uint8Array;
  /** The bytes as UTF-8 (invalid bytes as U+FFFD). */
  text: string;
}

/** ExecEnd is how a streamed command ended: the last event of execStream. */
export interface ExecEnd {
  type: "result";
  result: ExecStreamEventResult;
}

/** ExecEvent is one event of execStream: output chunks, then one result. */
export type ExecEvent = OutputChunk | ExecEnd;

/**
 * MAX_OUTPUT is what exec keeps of each stream (the rest is dropped and
 * truncated set): a stream that claims more breaks the protocol.
 */
const MAX_OUTPUT = 1 << 20;

/** Session is the handle of one session; making it calls nothing. */
export class Session extends SessionApi {
  /** The session's files. */
  readonly files: Files;
  /** The session's background processes (procs). */
  readonly procs: Procs;
  /** The TCP ports listening inside the session's sandbox. */
  readonly ports: Ports;

  /** @internal */
  constructor(transport: Transport, id: string) {
    super(transport, id);
    this.files = new Files(transport, id);
    this.procs = new Procs(transport, id);
    this.ports = new Ports(transport, id);
  }

  /** info is the session as it runs (getSession). */
  info(opts: CallOptions = {}): Promise<SessionInfo> {
    return this.op("getSession", opts).json<SessionInfo>();
  }

  /** delete removes the session (deleteSession). */
  delete(opts: DeleteOptions = {}): Promise<void> {
    const query = opts.checkpoint === true ? { checkpoint: true } : {};
    return this.op("deleteSession", { ...opts, query }).empty();
  }

  /**
   * exec runs a command with /bin/bash -c in the workdir and answers when it
   * has ended. Output that is not UTF-8 comes in stdout_base64 /
   * stderr_base64 too: outputBytes(res.stdout, res.stdout_base64) is then
   * the exact bytes.
   */
  exec(command: string | ExecRequest, opts: CallOptions = {}): Promise<ExecResult> {
    return this.op("exec", { ...opts, json: execRequest(command) }).json<ExecResult>();
  }

  /**
   * execStream runs a command as exec does and yields its output as it is
   * produced, then its result. Nothing is sent until the iteration starts;
   * leaving the loop early (or the signal) ends the request, which cancels
   * the command. Each stream's pieces are checked to follow on from each
   * other, and their lengths against the result's.
   */
  async *execStream(command: string | ExecRequest, opts: CallOptions = {}): AsyncGenerator<ExecEvent, void, undefined> {
    const what = "POST exec:stream";
    const seen = { stdout: 0, stderr: 0 };
    for await (const line of this.op("execStream", { ...opts, json: execRequest(command) }).lines()) {
      const ev = line as ExecStreamEvent;
      if (ev.output !== undefined) {
        const o = ev.output;
        if (o.stream !== "stdout" && o.stream !== "stderr") {
          throw new ProtocolError(`${what}: unknown stream ${JSON.stringify(o.stream)}`);
        }
        const data = outputBytes(o.text, o.data_base64);
        if (o.offset !== seen[o.stream] || seen[o.stream] + data.byteLength > MAX_OUTPUT) {
          throw new ProtocolError(`${what}: ${o.stream} piece at offset ${o.offset} after ${seen[o.stream]} bytes`);
        }
        seen[o.stream] += data.byteLength;
        yield { type: "output", stream: o.stream, offset: o.offset, data, text: o.text };
      } else if (ev.error !== undefined) {
        throw apiError(ev.error.code, ev.error.message);
      } else if (ev.result !== undefined) {
        const r = ev.result;
        if (r.stdout_bytes !== seen.stdout || r.stderr_bytes !== seen.stderr) {
          throw new ProtocolError(
            `${what}: ${seen.stdout}+${seen.stderr} bytes arrived, the result says ${r.stdout_bytes}+${r.stderr_bytes}`,
          );
        }
        yield { type: "result", result: r };
        return;
      }
      // keepalive lines carry nothing.
    }
    throw new ProtocolError(`${what}: the answer ended without a result`);
  }

  /**
   * export is a tar of the tree at root (e.g. the workdir), streamed as the
   * server produces it: pipe it somewhere rather than holding it whole.
   */
  async export(root: string, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    return (await this.op("export", { ...opts, query: { root } }).stream()).stream;
  }
}

function execRequest(command: string | ExecRequest): ExecRequest {
  return typeof command === "string" ? { command } : command;
}
