/**
 * A tar writer for files:batch: the members are produced as they are sent,
 * in the ustar format, with a PAX record for a name ustar cannot hold.
 */

/**
 * BatchFile is one member of a batch write: a regular file. It has no mode:
 * the executor writes every member 0644 (core/sandbox/bulk_archive.go).
 */
export interface BatchFile {
  /** Absolute, or relative to the batch's root when it has one. */
  path: string;
  data: string | Uint8Array;
}

const BLOCK = 512;
const encoder = new TextEncoder();

/**
 * tarStream yields the tar of files, a header and the data of one member at
 * a time, then the two zero blocks that end an archive.
 */
export async function* tarStream(files: Iterable<BatchFile> | AsyncIterable<BatchFile>): AsyncGenerator<Uint8Array, void, undefined> {
  const mtime = Math.floor(Date.now() / 1000);
  for await (const f of files) {
    const data = typeof f.data === "string" ? encoder.encode(f.data) : f.data;
    const name = encoder.encode(f.path);
    let ustarName = name;
    if (name.byteLength > 100) {
      // ustar's name field holds 100 bytes: the PAX record carries the
      // whole name, and readers (Go's archive/tar) take it over the field.
      const record = paxRecord("path", f.path);
      yield header({ name: encoder.encode("PaxHeaders/member"), mode: 0o644, size: record.byteLength, mtime, type: "x" });
      yield padded(record);
      ustarName = name.subarray(0, 100);
    }
    yield header({ name: ustarName, mode: 0o644, size: data.byteLength, mtime, type: "0" });
    if (data.byteLength > 0) {
      yield padded(data);
    }
  }
  yield new Uint8Array(2 * BLOCK);
}

interface Header {
  name: Uint8Array;
  mode: number;
  size: number;
  mtime: number;
  type: "0" | "x";
}

/** header is one ustar header block. */
function header(h: Header): Uint8Array {
  const b = new Uint8Array(BLOCK);
  b.set(h.name.subarray(0, 100), 0);
  octal(b, 100, 8, h.mode & 0o7777);
  octal(b, 108, 8, 0);
  octal(b, 116, 8, 0);
  octal(b, 124, 12, h.size);
  octal(b, 136, 12, h.mtime);
  b[156] = h.type.charCodeAt(0);
  b.set(encoder.encode("ustar\u000000"), 257);
  // The checksum is computed with its own field as spaces.
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) {
    sum += byte;
  }
  const cks = encoder.encode(sum.toString(8).padStart(6, "0"));
  b.set(cks, 148);
  b[154] = 0;
  b[155] = 0x20;
  return b;
}

/** octal writes n as zero-padded octal digits and a NUL into a field of width bytes. */
function octal(b: Uint8Array, at: number, width: number, n: number): void {
  const s = n.toString(8).padStart(width - 1, "0");
  if (s.length > width - 1) {
    throw new RangeError(`tar: ${n} does not fit a ${width}-byte field`);
  }
  b.set(encoder.encode(s), at);
  b[at + width - 1] = 0;
}

/** paxRecord is "LEN key=value\n", LEN counting the whole record, itself included. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = encoder.encode(` ${key}=${value}\n`);
  let len = body.byteLength + 1;
  while (String(len).length + body.byteLength !== len) {
    len = String(len).length + body.byteLength;
  }
  return encoder.encode(`${len} ${key}=${value}\n`);
}

/** padded is data followed by zeros up to a whole block. */
function padded(data: Uint8Array): Uint8Array {
  const rest = data.byteLength % BLOCK;
  if (rest === 0) {
    return data;
  }
  const out = new Uint8Array(data.byteLength + BLOCK - rest);
  out.set(data, 0);
  return out;
}
