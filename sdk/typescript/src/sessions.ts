/**
 * Sessions: provision, get, list and delete, on the executor as a whole.
 */
import { Api } from "./api.js";
import type { ListSessionsResponse, SessionInfo, SessionRequest } from "./schema.js";
import type { CallOptions, Transport } from "./transport.js";

/** DeleteOptions are deleteSession's. */
export interface DeleteOptions extends CallOptions {
  /**
   * Keep the workspace: export the workdir into the checkpoint store first,
   * for the next provision of the id to restore.
   */
  checkpoint?: boolean;
}

/** Sessions are the calls on the executor's sessions. */
export class Sessions extends Api {
  /** @internal */
  constructor(transport: Transport) {
    super(transport);
  }

  /** list is the sessions the executor owns, with their state. */
  async list(opts: CallOptions = {}): Promise<SessionInfo[]> {
    const out = await this.op("listSessions", opts).json<ListSessionsResponse>();
    return out.sessions ?? [];
  }

  /**
   * provision creates the session's sandbox, or adopts the one that runs
   * (idempotent); a stored checkpoint of the id is restored first.
   */
  provision(id: string, req: SessionRequest = {}, opts: CallOptions = {}): Promise<SessionInfo> {
    return this.op("provisionSession", { ...opts, params: { id }, json: req }).json<SessionInfo>();
  }

  /** get is the running session. */
  get(id: string, opts: CallOptions = {}): Promise<SessionInfo> {
    return this.op("getSession", { ...opts, params: { id } }).json<SessionInfo>();
  }

  /** delete removes the session and its sandbox (a session that never existed is no error). */
  delete(id: string, opts: DeleteOptions = {}): Promise<void> {
    const query = opts.checkpoint === true ? { checkpoint: true } : {};
    return this.op("deleteSession", { ...opts, params: { id }, query }).empty();
  }
}
