import crypto from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';

/** A request as the receiver got it: the raw body is what the signature covers. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/** How to answer a request: a status (with headers and body), or `hang` (never answer). */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * An HTTP server on 127.0.0.1 standing in for webhook receivers: it records every request and
 * answers each path as told (200 unless told otherwise); a hanging answer holds the connection
 * until the client gives up.
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Requests being held open now. */
  hanging = 0;
  /** How long every answer waits (a slow receiver: its deliveries stay claimed meanwhile). */
  delayMs = 0;
  private readonly replies = new Map<string, (r: Received) => Reply>();
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const receiver = new Receiver(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (socket) => {
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => receiver.handle(req, res));
    return receiver;
  }

  /** The URL of a path on this receiver (`host` names it otherwise than by address, e.g. localhost). */
  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** Answers requests to `path` with what `reply` returns for each. */
  answer(path: string, reply: (r: Received) => Reply): void {
    this.replies.set(path, reply);
  }

  /** Answers requests to `path` with these statuses in turn, then 200. */
  answerInTurn(path: string, ...replies: Reply[]): void {
    this.answer(path, () => replies.shift() ?? { status: 200 });
  }

  to(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const got: Received = { path: req.url ?? '', headers: req.headers, body, json };
      this.received.push(got);
      const reply = this.replies.get(got.path)?.(got) ?? { status: 200 };
      if (reply === 'hang') {
        this.hanging += 1;
        res.on('close', () => (this.hanging -= 1));
        return;
      }
      const send = () => {
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? 'ok');
      };
      if (this.delayMs > 0) setTimeout(send, this.delayMs);
      else send();
    });
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }
}

/** Checks a Shiplog-Signature header as a receiver would: true when it signs `body` with `secret`. */
export function signatureValid(header: string | string[] | undefined, secret: string, body: string): boolean {
  const parts = Object.fromEntries(
    String(header ?? '')
      .split(',')
      .map((p) => p.split('=', 2) as [string, string]),
  );
  if (!parts.t || !parts.v1) return false;
  const expected = crypto.createHmac('sha256', secret).update(`${parts.t}.${body}`).digest('hex');
  return parts.v1.length === expected.length && crypto.timingSafeEqual(Buffer.from(parts.v1), Buffer.from(expected));
}
