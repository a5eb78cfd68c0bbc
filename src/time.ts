/** The interface's timestamp form: ISO 8601, UTC, second precision, numeric offset. */
export function formatTimestamp(date: Date): string {
  return date.toISOString().slice(0, 19) + '+00:00';
}

export function nowTimestamp(): string {
  return formatTimestamp(new Date());
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

/** Date.now() and timers that do not keep the process alive on their own. */
export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
