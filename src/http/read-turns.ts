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
 *
 * Returns how other work that resumes reads joins the same line (each resumed read is one of a
 * turn's share): requests that joined a read shared while it waited for a connection
 * (db/shared-reads.ts) went on four a turn besides the turn's share, and a change, which needs
 * about ten turns on PostgreSQL, waited twice as long for each.
 */
export function registerReadTurns(app: FastifyInstance, perTurn: number): (resume: () => void) => void {
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
  /** Runs `start` in this turn when its share allows, else in a later one, after those waiting. */
  const admit = (start: () => void): (() => void) | undefined => {
    // A turn counts the reads started since the last one: the next begins after the loop polls.
    scheduleTurn();
    if (started < perTurn && waiting.size === 0) {
      started++;
      start();
      return undefined;
    }
    waiting.add(start);
    return () => waiting.delete(start);
  };
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!takesTurns(request)) return done();
    const leave = admit(() => done());
    // A read whose client leaves while it waits leaves the line.
    if (leave) reply.raw.once('close', leave);
  });
  // Reads that go on after waiting for something they share (db/shared-reads.ts) take turns too.
  return (resume) => {
    admit(resume);
  };
}
