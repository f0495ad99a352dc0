/**
 * sandgate: the TypeScript client of the sandgate executor API
 * (cmd/executor/openapi.json). Start at Sandgate.
 */
export { Sandgate, type SandgateOptions } from "./client.js";
export { Sessions, type DeleteOptions } from "./sessions.js";
export { Session, type ExecEvent, type ExecEnd, type OutputChunk } from "./session.js";
export { Files, type ReadOptions, type WriteOptions, type BatchOptions } from "./files.js";
export {
  Procs,
  Attachment,
  type AttachChunk,
  type AttachOptions,
  type OutputOptions,
  type ProcChunk,
  type ProcEnd,
  type ProcOutput,
  type ProcSignal,
} from "./procs.js";
export { Ports, type ForwardOptions, type PortForward } from "./ports.js";
export { type BatchFile, tarStream } from "./tar.js";
export { type BodyData, outputBytes } from "./body.js";
export type { CallOptions, StreamedBody, TransportOptions } from "./transport.js";
export * from "./errors.js";
export type * from "./schema.js";
export { OPERATIONS, QUERY, ERROR_CODES } from "./schema.js";
