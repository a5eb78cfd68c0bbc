import type { FastifyInstance } from 'fastify';

/** Where an instance is in its life, as its readiness check tells a load balancer. */
export type Phase = 'starting' | 'ready' | 'draining';

/**
 * An instance's phase: `starting` until the server listens and has done what it does on start,
 * `ready` then, `draining` from the signal to stop (readiness fails from that moment, so that the
 * balancer stops sending requests before the listener closes). Features register what to do when
 * the instance stops taking connections (`onClosing`: end streams, stop claiming jobs).
 */
export class Lifecycle {
  private current: Phase = 'starting';
  private readonly closers: (() => unknown)[] = [];

  get phase(): Phase {
    return this.current;
  }

  /** The server listens and is done starting: readiness passes. */
  ready(): void {
    if (this.current === 'starting') this.current = 'ready';
  }

  /** The signal to stop came: readiness fails, and every answer from now on closes its connection. */
  drain(): void {
    this.current = 'draining';
  }

  get draining(): boolean {
    return this.current === 'draining';
  }

  /** `close` runs when the instance stops taking connections (after the balancer's delay). */
  onClosing(close: () => unknown): void {
    this.closers.push(close);
  }

  /** Runs every closing step; resolves when all have ended (failures are theirs to log). */
  async closing(): Promise<void> {
    await Promise.allSettled(this.closers.map(async (close) => close()));
  }
}

export interface DrainOptions {
  /** How long readiness fails before the listener closes: the balancer's checks see it meanwhile. */
  delayMs: number;
  /** How long requests in flight, streams and jobs have to finish once the listener is closed. */
  timeoutMs: number;
  /** How often connections that fell idle meanwhile are closed. */
  sweepMs?: number;
}

/** What a drain did: whether connections had to be cut at the bound, and how long each step took. */
export interface DrainOutcome {
  forced: boolean;
  closedAfterMs: number;
  finishedAfterMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Stops an instance without failing anyone's request: readiness fails at once (and every answer
 * from then on carries `Connection: close`); after `delayMs` the listener closes, live streams are
 * told to reconnect, the job workers stop claiming, and connections close as their requests end;
 * what is still open after `timeoutMs` is cut. Then the app closes (its workers wait for the jobs
 * they hold to end with a written outcome, each within its deadline, shorter than its lease).
 */
export async function drain(app: FastifyInstance, options: DrainOptions): Promise<DrainOutcome> {
  const started = Date.now();
  app.lifecycle.drain();
  if (options.delayMs > 0) await sleep(options.delayMs);
  const server = app.server;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const closedAfterMs = Date.now() - started;
  const steps = app.lifecycle.closing();
  // A connection whose answer was written before the drain began is idle now or soon: closed as it is.
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), options.sweepMs ?? 50);
  let bound: NodeJS.Timeout | undefined;
  const finished = await Promise.race([
    Promise.all([closed, steps]).then(() => true),
    new Promise<boolean>((resolve) => {
      bound = setTimeout(() => resolve(false), options.timeoutMs);
    }),
  ]);
  clearInterval(sweep);
  clearTimeout(bound);
  if (!finished) server.closeAllConnections();
  await app.close();
  return { forced: !finished, closedAfterMs, finishedAfterMs: Date.now() - started };
}

/** Every answer of a draining instance closes its connection: the client's next request goes elsewhere. */
export function closeConnectionsWhileDraining(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (app.lifecycle.draining) reply.header('connection', 'close');
    done(null, payload);
  });
}
