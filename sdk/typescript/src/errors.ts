/**
 * Errors of the SDK. An error answer of the API becomes an instance of the
 * SandgateError subclass of its stable code (openapi.json's Error schema and
 * adapters/httpapi's Code* constants), so callers branch with `instanceof`,
 * never on a message. What never reached an answer is a TransportError; a
 * call that ran out of its `timeoutMs` is a TimeoutError; an answer that
 * breaks the protocol is a ProtocolError. A call cancelled through its own
 * AbortSignal rejects with the signal's reason, as fetch does.
 */

/** Options of every error's constructor. */
export interface SandgateErrorOptions {
  /** Seconds a busy server asked the caller to wait (Retry-After), if it said. */
  retryAfter?: number;
  cause?: unknown;
}

/**
 * SandgateError is an error answer of the API: its stable code, its message
 * and the HTTP status it came with. A code this SDK does not know (a newer
 * executor's) is a plain SandgateError; known codes are its subclasses.
 */
export class SandgateError extends Error {
  /** The API's stable error code, e.g. "not_found". */
  readonly code: string;
  /** The HTTP status of the answer (for an error that arrived inside a stream, the status its code is answered with). */
  readonly status: number;
  /** Seconds to wait before a retry, when the server said (busy). */
  readonly retryAfter: number | undefined;

  constructor(code: string, message: string, status: number, options: SandgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.retryAfter = options.retryAfter;
  }
}

/** TransportError: the call got no answer (refused, reset, DNS), or its answer broke off. */
export class TransportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * TimeoutError: the call's `timeoutMs` ran out. The client gave up; it is
 * not the API's `request_timeout` (RequestTimeoutError), which is the
 * server giving up on a stalled request body.
 */
export class TimeoutError extends TransportError {
  /** The limit that ran out, in milliseconds. */
  readonly timeoutMs: number;
  constructor(message: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.timeoutMs = timeoutMs;
  }
}

/** ProtocolError: an answer the SDK cannot read as the API describes it (a malformed stream). */
export class ProtocolError extends TransportError {}

/**
 * CodedError is the base of the classes of known codes: each subclass
 * states its code and the status that code is answered with once, as
 * statics, and the constructor reads them from the class being built.
 */
export abstract class CodedError extends SandgateError {
  /** The code the class stands for. */
  static readonly code: string;
  /** The status the code is answered with. */
  static readonly status: number;

  /** message is the server's; status defaults to the code's. */
  constructor(message: string, status?: number, options?: SandgateErrorOptions) {
    const cls = new.target as unknown as { code: string; status: number };
    super(cls.code, message, status ?? cls.status, options);
  }
}

/** not_found (404): no such session, sandbox or endpoint. */
export class NotFoundError extends CodedError {
  declare readonly code: "not_found";
  static override readonly code = "not_found";
  static override readonly status = 404;
}
/** spec_mismatch (409): the running sandbox differs from the request. */
export class SpecMismatchError extends CodedError {
  declare readonly code: "spec_mismatch";
  static override readonly code = "spec_mismatch";
  static override readonly status = 409;
}
/** file_not_exist (404): the path does not exist in the sandbox. */
export class FileNotExistError extends CodedError {
  declare readonly code: "file_not_exist";
  static override readonly code = "file_not_exist";
  static override readonly status = 404;
}
/** is_directory (422). */
export class IsDirectoryError extends CodedError {
  declare readonly code: "is_directory";
  static override readonly code = "is_directory";
  static override readonly status = 422;
}
/** not_directory (422): the path, or a component above it, is not a directory. */
export class NotDirectoryError extends CodedError {
  declare readonly code: "not_directory";
  static override readonly code = "not_directory";
  static override readonly status = 422;
}
/** not_regular_file (422). */
export class NotRegularFileError extends CodedError {
  declare readonly code: "not_regular_file";
  static override readonly code = "not_regular_file";
  static override readonly status = 422;
}
/** not_replaceable (422): e.g. a mount point. */
export class NotReplaceableError extends CodedError {
  declare readonly code: "not_replaceable";
  static override readonly code = "not_replaceable";
  static override readonly status = 422;
}
/** not_writable (422): the sandbox's user may not write there. */
export class NotWritableError extends CodedError {
  declare readonly code: "not_writable";
  static override readonly code = "not_writable";
  static override readonly status = 422;
}
/** file_too_large (413): over a limit of the call. */
export class FileTooLargeError extends CodedError {
  declare readonly code: "file_too_large";
  static override readonly code = "file_too_large";
  static override readonly status = 413;
}
/** not_readable (422): the sandbox's user may not read there. */
export class NotReadableError extends CodedError {
  declare readonly code: "not_readable";
  static override readonly code = "not_readable";
  static override readonly status = 422;
}
/** image_unavailable (422): the image reference is invalid, or the image is absent and cannot be pulled. */
export class ImageUnavailableError extends CodedError {
  declare readonly code: "image_unavailable";
  static override readonly code = "image_unavailable";
  static override readonly status = 422;
}
/** image_unusable (422): the image has no /bin/bash. */
export class ImageUnusableError extends CodedError {
  declare readonly code: "image_unusable";
  static override readonly code = "image_unusable";
  static override readonly status = 422;
}
/** gate_uid_image (422): a limited session's image runs as the gate's uid. */
export class GateUidImageError extends CodedError {
  declare readonly code: "gate_uid_image";
  static override readonly code = "gate_uid_image";
  static override readonly status = 422;
}
/** invalid_workdir (422): the workdir is a file in the image. */
export class InvalidWorkdirError extends CodedError {
  declare readonly code: "invalid_workdir";
  static override readonly code = "invalid_workdir";
  static override readonly status = 422;
}
/** invalid_argument (400): the request is malformed (an id, a path, an env name, a body). */
export class InvalidArgumentError extends CodedError {
  declare readonly code: "invalid_argument";
  static override readonly code = "invalid_argument";
  static override readonly status = 400;
}
/** length_required (411): a streamed file write without a size. */
export class LengthRequiredError extends CodedError {
  declare readonly code: "length_required";
  static override readonly code = "length_required";
  static override readonly status = 411;
}
/** not_implemented (501): the executor cannot do this (no checkpoint store, no signing key). */
export class NotImplementedError extends CodedError {
  declare readonly code: "not_implemented";
  static override readonly code = "not_implemented";
  static override readonly status = 501;
}
/** unauthorized (401): the API token is missing or wrong. */
export class UnauthorizedError extends CodedError {
  declare readonly code: "unauthorized";
  static override readonly code = "unauthorized";
  static override readonly status = 401;
}
/** method_not_allowed (405). */
export class MethodNotAllowedError extends CodedError {
  declare readonly code: "method_not_allowed";
  static override readonly code = "method_not_allowed";
  static override readonly status = 405;
}
/** internal (500): the executor failed; the reason is in its log. Also a non-API answer (a proxy's page). */
export class InternalError extends CodedError {
  declare readonly code: "internal";
  static override readonly code = "internal";
  static override readonly status = 500;
}
/** incomplete_body (400): the request body was shorter than its Content-Length. */
export class IncompleteBodyError extends CodedError {
  declare readonly code: "incomplete_body";
  static override readonly code = "incomplete_body";
  static override readonly status = 400;
}
/** request_timeout (408): the request body stalled on the server's side. */
export class RequestTimeoutError extends CodedError {
  declare readonly code: "request_timeout";
  static override readonly code = "request_timeout";
  static override readonly status = 408;
}
/** busy (503): too many bodies in flight; retry after `retryAfter` seconds. */
export class BusyError extends CodedError {
  declare readonly code: "busy";
  static override readonly code = "busy";
  static override readonly status = 503;
}
/** checkpoint_too_large (413): the workdir is over the checkpoint limit; the session runs on. */
export class CheckpointTooLargeError extends CodedError {
  declare readonly code: "checkpoint_too_large";
  static override readonly code = "checkpoint_too_large";
  static override readonly status = 413;
}
/** checkpoint_unreadable (409): the stored checkpoint cannot be restored; nothing was created. */
export class CheckpointUnreadableError extends CodedError {
  declare readonly code: "checkpoint_unreadable";
  static override readonly code = "checkpoint_unreadable";
  static override readonly status = 409;
}
/** no_agent (501): the sandbox has no in-sandbox agent, which procs and ports need. */
export class NoAgentError extends CodedError {
  declare readonly code: "no_agent";
  static override readonly code = "no_agent";
  static override readonly status = 501;
}
/** proc_not_found (404): no such proc in the session. */
export class ProcNotFoundError extends CodedError {
  declare readonly code: "proc_not_found";
  static override readonly code = "proc_not_found";
  static override readonly status = 404;
}
/** too_many_procs (429): the sandbox runs as many procs as it may. */
export class TooManyProcsError extends CodedError {
  declare readonly code: "too_many_procs";
  static override readonly code = "too_many_procs";
  static override readonly status = 429;
}
/** proc_exited (409): the proc has exited. */
export class ProcExitedError extends CodedError {
  declare readonly code: "proc_exited";
  static override readonly code = "proc_exited";
  static override readonly status = 409;
}
/** stdin_closed (409): the proc's stdin is closed. */
export class StdinClosedError extends CodedError {
  declare readonly code: "stdin_closed";
  static override readonly code = "stdin_closed";
  static override readonly status = 409;
}
/** too_many_streams (429): the session carries as many long-lived streams as it may. */
export class TooManyStreamsError extends CodedError {
  declare readonly code: "too_many_streams";
  static override readonly code = "too_many_streams";
  static override readonly status = 429;
}
/** port_closed (502): nothing listens on the port in the sandbox. */
export class PortClosedError extends CodedError {
  declare readonly code: "port_closed";
  static override readonly code = "port_closed";
  static override readonly status = 502;
}

/** isolation_unavailable (422): the backend cannot give the isolation asked for (gVisor). */
export class IsolationUnavailableError extends CodedError {
  declare readonly code: "isolation_unavailable";
  static override readonly code = "isolation_unavailable";
  static override readonly status = 422;
}

/** CodedErrorClass is the constructor of one code's class. */
export type CodedErrorClass = (new (message: string, status?: number, options?: SandgateErrorOptions) => CodedError) & {
  readonly code: string;
  readonly status: number;
};

/** ERROR_CLASSES maps each code the SDK knows to its class. */
export const ERROR_CLASSES: Readonly<Record<string, CodedErrorClass>> = Object.freeze(
  Object.fromEntries(
    [
      NotFoundError, SpecMismatchError, FileNotExistError, IsDirectoryError, NotDirectoryError,
      NotRegularFileError, NotReplaceableError, NotWritableError, FileTooLargeError, NotReadableError,
      ImageUnavailableError, ImageUnusableError, GateUidImageError, InvalidWorkdirError,
      InvalidArgumentError, LengthRequiredError, NotImplementedError, UnauthorizedError,
      MethodNotAllowedError, InternalError, IncompleteBodyError, RequestTimeoutError, BusyError,
      CheckpointTooLargeError, CheckpointUnreadableError, NoAgentError, ProcNotFoundError,
      TooManyProcsError, ProcExitedError, StdinClosedError, TooManyStreamsError, PortClosedError,
      IsolationUnavailableError,
    ].map((cls) => [cls.code, cls]),
  ),
);

/**
 * apiError is the error of an answer with status, code and message. The
 * status is the answer's; errors that arrive inside a stream (after the
 * 200) have none, and take the one their code is answered with.
 */
export function apiError(code: string, message: string, status?: number, options?: SandgateErrorOptions): SandgateError {
  // hasOwn: a code such as "constructor" must not find Object's.
  const cls = Object.hasOwn(ERROR_CLASSES, code) ? ERROR_CLASSES[code] : undefined;
  if (cls === undefined) {
    return new SandgateError(code, message, status ?? 500, options);
  }
  return new cls(message, status, options);
}
