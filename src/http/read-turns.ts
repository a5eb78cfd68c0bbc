import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Reads that wait for a turn: everything but the health checks, which a balancer must get at once. */
const takesTurns = (request: FastifyRequest): boolean =>
  (request.method === 'GET' || request.method === 'HEAD') && !request.url.startsWith('/health');

/**
 * Reads take turns, at most `concurrency` at once; changes never wait for them.
 *
 * The service runs on one JavaScript thread, and on SQLite a read's statements run on it too. Under
 * many readers, each time the event loop polls it takes every request that has arrived and runs
 * each until it waits: fifty clients' reads are fifty reads of work per round. A change waits for
 * a few rounds on its way (its Markdown rendered on a worker, its turn at the writer, the commit
 * that it shares with others), so under saturating reads it waited for hundreds of reads, and its
 * answer took a second. Here a read that finds `concurrency` others under way parks before any
 * work is done for it (after the request is parsed and routed), and the next one starts only at
 * the following round (setImmediate, after the event loop has polled again): a round is then a
 * few reads, and a change waits for a few reads per step instead of all of them. Reads are served
 * in the order they came, and lose nothing overall: the thread is as busy as before.
 *
 * A read whose client goes away while it waits leaves the line; one that is under way frees its
 * turn when its answer is done or its connection closes, whichever comes first.
 */
export function registerReadTurns(app: FastifyInstance, concurrency: number): void {
  let running = 0;
  const waiting = new Set<Turn>();
  /** How each read ends its turn: when its answer is sent, or its connection closes, whichever is first. */
  const finishes = new WeakMap<FastifyRequest, () => void>();
  app.addHook('onResponse', async (request) => finishes.get(request)?.());
  /** A turn ends: it passes to the first read waiting, at the next round. */
  const pass = () => {
    const [first] = waiting;
    if (first === undefined) {
      running--;
      return;
    }
    waiting.delete(first);
    first.state = 'granted';
    setImmediate(() => first.start());
  };
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!takesTurns(request)) return done();
    const turn: Turn = {
      state: 'waiting',
      start: () => {
        // Its client left before its turn came: the turn goes on to the next.
        if (turn.state === 'closed') return pass();
        turn.state = 'running';
        done();
      },
    };
    const finish = () => {
      if (turn.state === 'running') pass();
      else if (turn.state === 'waiting') waiting.delete(turn);
      turn.state = 'closed';
    };
    finishes.set(request, finish);
    reply.raw.once('close', finish);
    if (running < concurrency) {
      running++;
      turn.state = 'granted';
      turn.start();
    } else waiting.add(turn);
  });
}

/** A read's place: waiting in line, given the turn (starting at the next round), running, or its connection closed. */
interface Turn {
  state: 'waiting' | 'granted' | 'running' | 'closed';
  start: () => void;
}
