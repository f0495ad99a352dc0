/**
 * Sandgate is the client of one executor.
 */
import { Session } from "./session.js";
import { Sessions } from "./sessions.js";
import type { SessionRequest } from "./schema.js";
import { Transport, type CallOptions, type TransportOptions } from "./transport.js";

/** SandgateOptions configure a client: the executor's URL and API token, a default timeout, a fetch. */
export type SandgateOptions = TransportOptions;

/**
 * Sandgate is the client of one executor's API. It holds no connection of
 * its own: each call is one fetch (or one WebSocket), so a client is cheap
 * and safe to share.
 */
export class Sandgate {
  /** The calls on the executor's sessions. */
  readonly sessions: Sessions;
  private readonly transport: Transport;

  constructor(opts: SandgateOptions) {
    this.transport = new Transport(opts);
    this.sessions = new Sessions(this.transport);
  }

  /** session is the handle of the session id, for its exec, files, procs and ports; it calls nothing. */
  session(id: string): Session {
    return new Session(this.transport, id);
  }

  /** create provisions the session id (idempotent) and returns its handle. */
  async create(id: string, req: SessionRequest = {}, opts: CallOptions = {}): Promise<Session> {
    await this.sessions.provision(id, req, opts);
    return this.session(id);
  }
}
