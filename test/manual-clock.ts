import { mock } from 'node:test';
import type { Db } from '../src/db/connection.js';
import type { Clock } from '../src/time.js';

/**
 * A clock for the background jobs that moves only when a test says so (`tick`), firing the
 * timers due on the way, each at its own time. `Date` is mocked along with it (node:test's mock
 * timers, Date alone), so what the app stamps (the time mail was queued, /health's "now") moves
 * with it too; real timers, sockets and databases run as usual. One at a time: `reset` when done.
 */
export class ManualClock implements Clock {
  private timers: { at: number; run: () => void }[] = [];

  constructor(start = Date.now()) {
    mock.timers.enable({ apis: ['Date'], now: start });
  }

  now(): number {
    return Date.now();
  }

  after(ms: number, run: () => void): () => void {
    const timer = { at: this.now() + ms, run };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves the time `ms` on, firing every timer due meanwhile in order; lets each one's work start. */
  async tick(ms: number): Promise<void> {
    const end = this.now() + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      mock.timers.tick(Math.max(0, next.at - this.now()));
      next.run();
      await new Promise((resolve) => setImmediate(resolve));
    }
    mock.timers.tick(end - this.now());
  }

  reset(): void {
    mock.timers.reset();
  }
}

/** Resolves once `condition` holds, looking every few milliseconds of real time; fails after `ms`. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * `db`, but the first transaction it opens never ends (a claim the database never answers, as a
 * job's watchdog must see through); later ones go to the database as usual.
 */
export function firstTransactionHangs(db: Db): Db {
  let hung = false;
  return new Proxy(db, {
    get(target, key, receiver) {
      if (key !== 'transaction') {
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return () => {
        const real = target.transaction();
        if (hung) return real;
        hung = true;
        return { ...real, execute: () => new Promise(() => undefined) };
      };
    },
  }) as Db;
}
