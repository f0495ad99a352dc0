/**
 * NDJSON answers (exec:stream, a proc's output): one JSON value per line,
 * read as the bytes arrive.
 */
import { concat } from "./body.js";
import { ProtocolError } from "./errors.js";

/**
 * MAX_LINE bounds one line: a line carries one piece of output, far below
 * this even in base64 (the Go client's bound too).
 */
export const MAX_LINE = 8 << 20;

/**
 * ndjsonLines yields each line of src parsed as JSON. A line over MAX_LINE,
 * or one that is not JSON, is a ProtocolError. Read errors of src pass
 * through as they are. Ending the iteration early cancels src.
 */
export async function* ndjsonLines(src: ReadableStream<Uint8Array>, what: string): AsyncGenerator<unknown, void, undefined> {
  const reader = src.getReader();
  const decoder = new TextDecoder();
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let done = false;
  const parse = (line: Uint8Array): unknown => {
    const text = decoder.decode(line).trim();
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new ProtocolError(`${what}: a malformed line: ${String(err)}`, { cause: err });
    }
  };
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        break;
      }
      let chunk = r.value;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a)) {
        pending.push(chunk.subarray(0, nl));
        const line = concat(pending);
        pending = [];
        pendingBytes = 0;
        chunk = chunk.subarray(nl + 1);
        if (line.byteLength > MAX_LINE) {
          throw new ProtocolError(`${what}: a line over ${MAX_LINE} bytes`);
        }
        if (line.byteLength > 0) {
          yield parse(line);
        }
      }
      if (chunk.byteLength > 0) {
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        if (pendingBytes > MAX_LINE) {
          throw new ProtocolError(`${what}: a line over ${MAX_LINE} bytes`);
        }
      }
    }
    const last = concat(pending);
    if (decoder.decode(last).trim() !== "") {
      yield parse(last);
    }
  } finally {
    if (!done) {
      // The caller stopped early (or a line was bad): end the answer, which
      // tells the server to stop too.
      await reader.cancel().catch(() => {});
    }
    reader.releaseLock();
  }
}
