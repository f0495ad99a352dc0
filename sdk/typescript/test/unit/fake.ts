/**
 * A fake executor for the unit tests: a loopback HTTP server whose routes
 * a test sets, and whose WebSocket upgrades a test answers, so that what
 * the SDK sends and how it reads each kind of answer are checked without
 * Docker.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** Seen is a request the fake received. */
export interface Seen {
  method: string;
  /** The path and query as sent. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Handler answers one request, read whole into seen.body. */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen) => void | Promise<void>;

/** WSHandler takes an upgraded connection. */
export type WSHandler = (ws: WebSocket, req: http.IncomingMessage) => void;

export class FakeServer {
  readonly seen: Seen[] = [];
  private readonly routes = new Map<string, Handler>();
  private readonly sockets = new Map<string, WSHandler>();
  private readonly wss = new WebSocketServer({ noServer: true });
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeServer> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const f = new FakeServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (req, res) => void f.serve(req, res));
    server.on("upgrade", (req, sock, head) => {
      const h = f.sockets.get(pathOf(req));
      if (h === undefined) {
        sock.end("HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n\r\n" +
          JSON.stringify({ error: { code: "not_found", message: "no such endpoint" } }));
        return;
      }
      f.wss.handleUpgrade(req, sock, head, (ws) => h(ws, req));
    });
    return f;
  }

  /** on answers METHOD path (without the query) with h. */
  on(method: string, path: string, h: Handler): void {
    this.routes.set(`${method} ${path}`, h);
  }

  /** onJSON answers METHOD path with status and a JSON body. */
  onJSON(method: string, path: string, status: number, body: unknown): void {
    this.on(method, path, (_req, res) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    });
  }

  /** onWS takes the upgrades of path. */
  onWS(path: string, h: WSHandler): void {
    this.sockets.set(path, h);
  }

  /** last is the last request received. */
  last(): Seen {
    const s = this.seen.at(-1);
    if (s === undefined) {
      throw new Error("no request received");
    }
    return s;
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) {
      ws.terminate();
    }
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const h = this.routes.get(`${req.method} ${pathOf(req)}`);
    const seen: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.alloc(0) };
    this.seen.push(seen);
    if (h === undefined) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "not_found", message: "no such endpoint" } }));
      return;
    }
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) {
      parts.push(c);
    }
    seen.body = Buffer.concat(parts);
    await h(req, res, seen);
  }
}

function pathOf(req: http.IncomingMessage): string {
  return (req.url ?? "").split("?")[0] ?? "";
}

/** apiError writes the API's error shape. */
export function writeError(res: http.ServerResponse, status: number, code: string, message: string, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ error: { code, message } }));
}
