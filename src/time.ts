/** The interface's timestamp form: ISO 8601, UTC, second precision, numeric offset. */
export function formatTimestamp(date: Date): string {
  return `${date.toISOString().slice(0, 19)}+00:00`;
}

/**
 * Milliseconds since the epoch, as the service reads them: the wall clock unless replaced. `Date`
 * is looked up on each call, so a test that mocks the global Date (node:test's mock.timers) moves
 * this clock too.
 */
let clock: () => number = () => Date.now();

/** The current time by the service's clock. */
export function currentTime(): Date {
  return new Date(clock());
}

export function nowTimestamp(): string {
  return formatTimestamp(currentTime());
}

/**
 * Replaces the service's clock in this process and returns what puts the previous one back.
 * Tests move time forward this way (a timestamp that must change, a day that must pass) instead
 * of waiting for it.
 */
export function setClock(next: () => number): () => void {
  const previous = clock;
  clock = next;
  return () => {
    clock = previous;
  };
}

/**
 * The time and the timers of work that runs on its own (the job runner: rounds, deadlines,
 * probes, the watchdog). The server runs on the system's; tests pass one they move by hand, so
 * that no test waits for the wall clock.
 */
export interface Clock {
  now(): number;
  /** Calls `run` once after `ms`; the returned function cancels it. */
  after(ms: number, run: () => void): () => void;
}

/** The service's clock (see setClock) and timers that do not keep the process alive on their own. */
export const systemClock: Clock = {
  now: () => clock(),
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
