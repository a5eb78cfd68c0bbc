import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import { PeriodicJob, type PeriodicKind } from '../jobs/runner.js';
import { systemClock, type Clock } from '../time.js';
import { mergeSearchIndex } from './service.js';

/**
 * Pages of merging per step, and steps per run: a step is one write transaction that holds the
 * event loop (better-sqlite3 is synchronous), ~10 ms for 20 pages, and the run lets requests in
 * between steps.
 */
const PAGES_PER_STEP = 20;
const STEPS_PER_RUN = 25;
export const MERGE_EVERY_MS = 5_000;

/**
 * The SQLite index's writers only flush their changes as new segments (automatic merging is off:
 * merging inside the writing transaction cost most of an edit's time); this periodic job, on the
 * one job runner's timer, merges segments in short steps while there is work, so searches read few
 * segments. Does nothing on PostgreSQL, whose GIN index keeps its own pending list.
 */
export class MergeSearchIndex {
  private readonly job: PeriodicJob<number>;

  constructor(db: Db, log: FastifyBaseLogger, clock: Clock = systemClock, everyMs = MERGE_EVERY_MS) {
    const kind: PeriodicKind<number> = {
      name: 'search index merge',
      everyMs,
      async run(stopping) {
        let steps = 0;
        while (steps < STEPS_PER_RUN && !stopping() && (await mergeSearchIndex(db, PAGES_PER_STEP))) {
          steps++;
          await new Promise((resolve) => setImmediate(resolve));
        }
        return steps;
      },
    };
    this.job = new PeriodicJob(kind, log, clock);
  }

  start(): void {
    this.job.start();
  }

  /** Merges now; resolves with how many steps did work. */
  mergeNow(): Promise<number> {
    return this.job.runNow();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }
}
