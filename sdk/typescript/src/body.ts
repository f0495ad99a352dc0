/**
 * Request and answer bodies as the SDK moves them: every shape a caller may
 * hand in becomes something fetch sends without buffering it, and every
 * streamed answer is read chunk by chunk.
 */

/**
 * BodyData is what a call that uploads bytes takes. Strings, byte arrays and
 * Blobs have a known size; a ReadableStream or any async iterable of chunks
 * (a Node Readable such as fs.createReadStream, an async generator) is
 * streamed as it is read, never held whole in memory.
 */
export type BodyData =
  | string
  | Uint8Array
  | ArrayBuffer
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array | string>;

/** A body ready for fetch: its size when known, and whether it streams (fetch then needs duplex "half"). */
export interface PreparedBody {
  body: Uint8Array | Blob | ReadableStream<Uint8Array>;
  size: number | undefined;
  streamed: boolean;
}

const encoder = new TextEncoder();

/** prepareBody turns data into what fetch sends, with its size when it is known without reading it. */
export function prepareBody(data: BodyData): PreparedBody {
  if (typeof data === "string") {
    const bytes = encoder.encode(data);
    return { body: bytes, size: bytes.byteLength, streamed: false };
  }
  if (data instanceof Uint8Array) {
    return { body: data, size: data.byteLength, streamed: false };
  }
  if (data instanceof ArrayBuffer) {
    return { body: new Uint8Array(data), size: data.byteLength, streamed: false };
  }
  if (data instanceof Blob) {
    return { body: data, size: data.size, streamed: false };
  }
  // A web ReadableStream is async iterable too on Node: take it as it is.
  if (data instanceof ReadableStream) {
    return { body: data, size: undefined, streamed: true };
  }
  if (data !== null && typeof data === "object" && Symbol.asyncIterator in data) {
    return { body: iterableStream(data), size: undefined, streamed: true };
  }
  throw new TypeError("body: expected a string, bytes, a Blob, a ReadableStream or an async iterable");
}

/**
 * iterableStream reads src only as fast as fetch sends: one chunk is asked
 * for each time the stream is pulled, so a large source is never queued.
 */
export function iterableStream(src: AsyncIterable<Uint8Array | string>): ReadableStream<Uint8Array> {
  const it = src[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        const r = await it.next();
        if (r.done === true) {
          ctl.close();
          return;
        }
        const chunk = typeof r.value === "string" ? encoder.encode(r.value) : r.value;
        if (!(chunk instanceof Uint8Array)) {
          throw new TypeError("body: an async iterable must yield strings or Uint8Arrays");
        }
        ctl.enqueue(chunk);
      },
      async cancel(reason) {
        await it.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * mapStream passes src's chunks on and turns the error it fails with into
 * the one fail returns (a transport or timeout error of the call), so a
 * streamed answer fails with the SDK's classes, not fetch's internals.
 */
export function mapStream(src: ReadableStream<Uint8Array>, fail: (err: unknown) => unknown): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        const r = await reader.read().catch((err: unknown) => {
          throw fail(err);
        });
        if (r.done) {
          ctl.close();
        } else {
          ctl.enqueue(r.value);
        }
      },
      async cancel(reason) {
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** readLimited reads at most max bytes of a stream as text, then drops the rest. */
export async function readLimited(src: ReadableStream<Uint8Array> | null, max: number): Promise<string> {
  if (src === null) {
    return "";
  }
  const reader = src.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < max) {
      const r = await reader.read();
      if (r.done) {
        break;
      }
      parts.push(r.value);
      n += r.value.byteLength;
    }
  } catch {
    // What arrived is all there is to decode: a broken error answer still
    // yields an error with its status.
  } finally {
    reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(concat(parts).subarray(0, max));
}

/** concat joins byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) {
    return parts[0]!;
  }
  let n = 0;
  for (const p of parts) {
    n += p.byteLength;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * outputBytes is the exact bytes of a piece of command output: the API
 * sends text, and adds the bytes in base64 only when they are not valid
 * UTF-8 (the text then has U+FFFD in their place).
 */
export function outputBytes(text: string, base64?: string): Uint8Array {
  if (base64 !== undefined && base64 !== "") {
    const b = Buffer.from(base64, "base64");
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  return encoder.encode(text);
}
