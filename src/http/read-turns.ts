import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Reads that wait for a turn: everything but the health checks, which a balancer must get at once. */
const takesTurns = (request: FastifyRequest): boolean =>
  (request.method === 'GET' || request.method === 'HEAD') && !request.url.startsWith('/health');

/**
 * Reads start at most `perTurn` at a time per turn of the event loop; changes never wait for them.
 *
 * The service runs on one JavaScript thread, and on SQLite a read's statements run on it too: a
 * read, once started, runs to its answer without letting anything else in. Each time the event
 * loop polls, it takes every request that has arrived; with fifty clients reading, that was fifty
 * reads run back to back (12 ms of work) before the loop turned again. A change needs a few turns
 * (its request read, its commit shared with others), so under saturating reads it waited for
 * hundreds of reads, and its answer took tens of milliseconds, often hundreds.
 *
 * Here a read beyond the turn's share parks once it is parsed and routed, before any work is done
 * for it, and the parked ones start `perTurn` at a time, each turn after the loop has polled again
 * (setImmediate): a turn is then a few reads, and a change waits for a few reads per step instead
 * of all of them. Reads start in the order they came, and lose next to nothing: the thread is as
 * busy as before. A read whose client leaves while it waits leaves the line.
 */
export function registerReadTurns(app: FastifyInstance, perTurn: number): void {
  const waiting = new Set<() => void>();
  let started = 0;
  let turnScheduled = false;
  const nextTurn = () => {
    turnScheduled = false;
    started = 0;
    for (const start of waiting) {
      if (started >= perTurn) break;
      waiting.delete(start);
      started++;
      start();
    }
    if (waiting.size > 0) scheduleTurn();
  };
  const scheduleTurn = () => {
    if (turnScheduled) return;
    turnScheduled = true;
    setImmediate(nextTurn);
  };
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!takesTurns(request)) return done();
    // A turn counts the reads started since the last one: the next begins after the loop polls.
    scheduleTurn();
    if (started < perTurn && waiting.size === 0) {
      started++;
      return done();
    }
    const start = () => done();
    waiting.add(start);
    reply.raw.once('close', () => waiting.delete(start));
  });
}
