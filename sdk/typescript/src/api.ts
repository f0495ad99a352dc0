/**
 * The bases of the SDK's groups of calls. Each group names the operation
 * of every call as a string literal through op, the one helper, so which
 * operations the SDK covers can be read off its source.
 */
import type { OperationId } from "./schema.js";
import type { Call, OpRequest, Transport } from "./transport.js";

/** Api is a group of calls of one executor. */
export abstract class Api {
  /** @internal */
  protected readonly transport: Transport;

  protected constructor(transport: Transport) {
    this.transport = transport;
  }

  /** op prepares a call of the operation id. */
  protected op(id: OperationId, req: OpRequest = {}): Call {
    return this.transport.op(id, req);
  }
}

/** SessionApi is a group of calls of one session: op fills in its {id}. */
export abstract class SessionApi {
  /** @internal */
  protected readonly transport: Transport;
  /** The session's id. */
  readonly sessionId: string;

  protected constructor(transport: Transport, sessionId: string) {
    this.transport = transport;
    this.sessionId = sessionId;
  }

  /** op prepares a call of the operation id on this session. */
  protected op(id: OperationId, req: OpRequest = {}): Call {
    return this.transport.op(id, { ...req, params: { ...req.params, id: this.sessionId } });
  }
}
