/**
 * Files: a session's tree, read and written as streams.
 */
import { SessionApi } from "./api.js";
import { concat, iterableStream, type BodyData } from "./body.js";
import type { FileInfo, FileList } from "./schema.js";
import { tarStream, type BatchFile } from "./tar.js";
import type { CallOptions, StreamedBody, Transport } from "./transport.js";

/** ReadOptions are readFile's. */
export interface ReadOptions extends CallOptions {
  /** Refuse (file_too_large) a file over this many bytes; absent: the server's limit. */
  maxBytes?: number;
}

/** WriteOptions are writeFile's. */
export interface WriteOptions extends CallOptions {
  /**
   * The body's size in bytes: required for a stream (the API needs the
   * length up front, and answers length_required without it); a string,
   * bytes or a Blob have theirs.
   */
  size?: number;
}

/** BatchOptions are files:batch's. */
export interface BatchOptions extends CallOptions {
  /** The directory relative member names are written under; absent: members are absolute. */
  root?: string;
}

/** Files are the calls on one session's files. */
export class Files extends SessionApi {
  /** @internal */
  constructor(transport: Transport, sessionId: string) {
    super(transport, sessionId);
  }

  /**
   * readStream streams a regular file out: size is its length, stream its
   * bytes as they arrive (a Web ReadableStream, async iterable on Node).
   */
  readStream(path: string, opts: ReadOptions = {}): Promise<StreamedBody> {
    return this.op("readFile", { ...opts, query: { path, max_bytes: opts.maxBytes } }).stream();
  }

  /** read is a whole file in memory: for small files; use readStream for large ones. */
  async read(path: string, opts: ReadOptions = {}): Promise<Uint8Array> {
    const { stream } = await this.readStream(path, opts);
    const parts: Uint8Array[] = [];
    for await (const chunk of stream) {
      parts.push(chunk);
    }
    return concat(parts);
  }

  /** readText is a whole file decoded as UTF-8. */
  async readText(path: string, opts: ReadOptions = {}): Promise<string> {
    return new TextDecoder().decode(await this.read(path, opts));
  }

  /**
   * write replaces the file at path, atomically, with data. A stream (a
   * ReadableStream, a Node Readable, an async generator) is sent as it is
   * read and needs opts.size.
   */
  write(path: string, data: BodyData, opts: WriteOptions = {}): Promise<void> {
    // opts.size travels as the request's size: its Content-Length.
    return this.op("writeFile", { ...opts, query: { path }, body: data, contentType: "application/octet-stream" }).empty();
  }

  /** writeBatch writes several files in one call, as a tar produced while it is sent. */
  writeBatch(files: Iterable<BatchFile> | AsyncIterable<BatchFile>, opts: BatchOptions = {}): Promise<void> {
    return this.writeArchive(iterableStream(tarStream(files)), opts);
  }

  /**
   * writeArchive writes the members of a tar the caller streams (regular
   * files and directories): absolute names, or names relative to opts.root
   * (the shape of `tar -C dir -cf - .`).
   */
  writeArchive(tar: BodyData, opts: BatchOptions = {}): Promise<void> {
    return this.op("writeFiles", {
      ...opts,
      query: { root: opts.root },
      body: tar,
      contentType: "application/x-tar",
    }).empty();
  }

  /** stat describes path as lstat(2) does: a symlink is described, never followed. */
  stat(path: string, opts: CallOptions = {}): Promise<FileInfo> {
    return this.op("statFile", { ...opts, query: { path } }).json<FileInfo>();
  }

  /** list is a directory's entries, each lstat'ed, sorted by name. */
  async list(path: string, opts: CallOptions = {}): Promise<FileInfo[]> {
    const out = await this.op("listFiles", { ...opts, query: { path } }).json<FileList>();
    return out.entries ?? [];
  }

  /** remove removes a file, a symlink or an empty directory; a tree with recursive. */
  remove(path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    return this.op("removeFile", { ...opts, query: { path, recursive: opts.recursive === true ? true : undefined } }).empty();
  }

  /** mkdir makes a directory 0755; with parents, its missing parents too, and an existing one is no error. */
  mkdir(path: string, opts: CallOptions & { parents?: boolean } = {}): Promise<void> {
    return this.op("makeDirectory", { ...opts, query: { path, parents: opts.parents === true ? true : undefined } }).empty();
  }
}
