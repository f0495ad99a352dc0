/**
 * Ports: TCP servers listening on the sandbox's own loopback, reached
 * through the in-sandbox agent over a WebSocket per connection, whatever
 * the session's networking; and signed preview URLs for a browser.
 */
import net from "node:net";
import type { Duplex } from "node:stream";
import { createWebSocketStream } from "ws";

import { SessionApi } from "./api.js";
import type { SignPortURLRequest, SignPortURLResponse } from "./schema.js";
import type { CallOptions, Transport } from "./transport.js";

/** ForwardOptions are forward's. */
export interface ForwardOptions extends CallOptions {
  /** The local port to listen on (default 0: any free one). */
  localPort?: number;
  /** The local address to listen on (default 127.0.0.1). */
  host?: string;
}

/** PortForward is a local listener whose connections are carried to a port in the sandbox. */
export interface PortForward {
  /** The address it listens on. */
  host: string;
  port: number;
  /** close stops listening and ends the connections it carries. */
  close(): Promise<void>;
}

/** Ports are the calls on one session's ports; they need the sandbox's agent (else NoAgentError). */
export class Ports extends SessionApi {
  /** @internal */
  constructor(transport: Transport, sessionId: string) {
    super(transport, sessionId);
  }

  /**
   * connect opens a TCP connection to port inside the sandbox, as a Duplex
   * stream. Nothing listening is PortClosedError, before any byte. A
   * WebSocket has no half-close: ending the Duplex's writable side closes
   * the connection both ways. The signal and timeout bound the handshake.
   */
  connect(port: number, opts: CallOptions = {}): Promise<Duplex> {
    return this.op("connectPort", { ...opts, params: { port } }).websocket((ws) => createWebSocketStream(ws));
  }

  /**
   * forward listens on a local port and carries each connection to port
   * inside the sandbox (what `executor port-forward` does). A connection
   * the sandbox refuses is closed at once.
   */
  async forward(port: number, opts: ForwardOptions = {}): Promise<PortForward> {
    const live = new Set<net.Socket>();
    const server = net.createServer((sock) => {
      live.add(sock);
      sock.once("close", () => live.delete(sock));
      sock.on("error", () => sock.destroy());
      sock.pause();
      this.connect(port, { timeoutMs: opts.timeoutMs ?? 0 }).then(
        (remote) => {
          remote.on("error", () => sock.destroy());
          sock.once("close", () => remote.destroy());
          // end, not destroy: what the sandbox sent last may still be on
          // its way to the local client.
          remote.once("close", () => sock.end());
          sock.pipe(remote);
          remote.pipe(sock);
          sock.resume();
        },
        () => sock.destroy(),
      );
    });
    const host = opts.host ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.localPort ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const addr = server.address() as net.AddressInfo;
    const close = (): Promise<void> =>
      new Promise<void>((resolve) => {
        for (const s of live) {
          s.destroy();
        }
        server.close(() => resolve());
      });
    opts.signal?.addEventListener("abort", () => void close(), { once: true });
    return { host: addr.address, port: addr.port, close };
  }

  /** sign is a short-lived URL of the port's preview (ttlSeconds absent: the server's default, an hour; at most a day). */
  sign(port: number, opts: CallOptions & { ttlSeconds?: number } = {}): Promise<SignPortURLResponse> {
    const json: SignPortURLRequest = opts.ttlSeconds === undefined ? {} : { ttl_seconds: opts.ttlSeconds };
    return this.op("signPortURL", { ...opts, params: { port }, json }).json<SignPortURLResponse>();
  }
}
