import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock } from '../time.js';

/**
 * A kind of job (outbox mail, webhook deliveries): its rows, claimed under a lease (see
 * claimDue), and its policy. The runner decides when to look and keeps the window; the kind
 * decides how many to take, takes them, and runs each to a written outcome.
 */
export interface JobKind<J> {
  /** Names the kind in the log: "mail delivery round failed". */
  readonly name: string;
  /**
   * How many jobs to claim now, `held` being in hand (claimed, outcome not yet written): 0 for
   * none. The free part of the window as a rule; a kind may wait for more room, or pace itself.
   */
  room(held: number): number;
  /** Claims up to `limit` due jobs under a lease, ready to run (rendered, their targets loaded). */
  claim(limit: number): Promise<J[]>;
  /** Runs a claimed job to its written outcome; resolves true when it succeeded. Never rejects. */
  run(job: J): Promise<boolean>;
  /** A job ended: true when a claim may now take jobs it left out (a target below its share, a pause over). */
  ended?(job: J): boolean;
  /** A claim found nothing to take. */
  drained?(): void;
}

export interface RunnerOptions {
  /** How often due jobs are looked for when nobody nudges the runner. */
  intervalMs: number;
  /** A round that has made no progress this long is given up (logged), and a new one starts. */
  stuckRoundMs: number;
}

/** Lets a waiting round go on: when a job ends, or when the runner is nudged. */
class Signal {
  private waiting: (() => void) | undefined;
  wait(): Promise<void> {
    return new Promise((resolve) => (this.waiting = resolve));
  }
  notify(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }
}

/**
 * Runs one kind of job after commit, in every server process: on a timer, and at once when
 * nudged. Rounds never overlap; in a round, jobs run in a sliding window: more are claimed as
 * earlier ones end or as new ones are queued, never waiting for a whole batch. A job counts as
 * held until its outcome is written, so a crash can repeat at most the jobs of one window; a
 * process that dies leaves its claims to lapse, and another runner (or the restarted one) takes
 * them over. A round that makes no progress for `stuckRoundMs` (a claim the database never
 * answers) is given up and a new one starts; a round that fails is logged once per cause, and the
 * next tick tries again. Time and timers come from the clock, so tests move them by hand.
 */
export class JobRunner<J> {
  private cancelTick: (() => void) | undefined;
  private running: Promise<number> | undefined;
  /** Rounds get a number; a round given up as stuck sees that it is no longer the current one. */
  private round = 0;
  private progressAt = 0;
  private again = false;
  private started = false;
  private stopping = false;
  private readonly signal = new Signal();
  /** Jobs ended that freed something: a claim that found nothing while one did looks again. */
  private freed = 0;
  /** Since when rounds fail, and with what (see roundFailed). */
  private failing: { since: number; code: string } | undefined;

  constructor(
    private readonly kind: JobKind<J>,
    private readonly options: RunnerOptions,
    private readonly log: FastifyBaseLogger,
    readonly clock: Clock = systemClock,
  ) {}

  start(): void {
    if (this.stopping) return;
    this.started = true;
    this.tick();
    this.nudge();
  }

  private tick(): void {
    this.cancelTick = this.clock.after(this.options.intervalMs, () => {
      this.nudge();
      if (this.started) this.tick();
    });
  }

  /** Asks for a round soon, once started; a round running looks again at once. */
  nudge(): void {
    if (!this.started) return;
    if (this.running) {
      const quietMs = this.clock.now() - this.progressAt;
      if (quietMs <= this.options.stuckRoundMs) {
        this.again = true;
        this.signal.notify();
        return;
      }
      this.log.error({ stuckForMs: quietMs }, `${this.kind.name} round made no progress; starting a new one`);
      this.running = undefined;
    }
    void this.runDue().then(
      () => this.roundWorked(),
      (err) => this.roundFailed(err),
    );
  }

  /** Runs everything due now (and what falls due meanwhile); resolves with how many succeeded. */
  runDue(): Promise<number> {
    if (this.running) return this.running.then(() => this.runDue());
    const round = ++this.round;
    this.progressAt = this.clock.now();
    const running = this.runRound(round).finally(() => {
      if (this.running !== running) return;
      this.running = undefined;
      if (this.again && this.started) {
        this.again = false;
        this.nudge();
      }
    });
    this.running = running;
    return running;
  }

  /** Resolves once no round is running (one that ends may start the next: that is waited for too). */
  async settled(): Promise<void> {
    while (this.running) await this.running.catch(() => undefined);
  }

  private async runRound(round: number): Promise<number> {
    const held = new Set<Promise<void>>();
    const tally = { succeeded: 0 };
    let drained = false;
    try {
      while (!this.stopping && round === this.round) {
        if (this.again) {
          // Something was queued, or room was freed, meanwhile: look again rather than after this round.
          this.again = false;
          drained = false;
        }
        const room = drained ? 0 : this.kind.room(held.size);
        if (room > 0) {
          const freed = this.freed;
          if ((await this.claimAndRun(room, held, tally)) > 0 || this.freed !== freed) continue;
          drained = true;
          this.kind.drained?.();
        }
        if (held.size === 0) break;
        await this.signal.wait();
      }
    } finally {
      await Promise.all(held);
    }
    return tally.succeeded;
  }

  /** Claims up to `room` due jobs and starts them; returns how many. */
  private async claimAndRun(room: number, held: Set<Promise<void>>, tally: { succeeded: number }): Promise<number> {
    const jobs = await this.kind.claim(room);
    this.progressAt = this.clock.now();
    for (const job of jobs) {
      const running: Promise<void> = this.kind
        .run(job)
        .then(
          (ok) => {
            if (ok) tally.succeeded += 1;
          },
          (err) => this.log.error({ err }, `${this.kind.name} failed`),
        )
        .finally(() => {
          held.delete(running);
          this.progressAt = this.clock.now();
          if (this.kind.ended?.(job)) {
            this.freed += 1;
            this.again = true;
          }
          this.signal.notify();
        });
      held.add(running);
    }
    return jobs.length;
  }

  /**
   * A round that fails (the database out of reach, or taking no writes: a full disk) leaves its
   * jobs due and the next tick tries again. The same failure round after round is logged once,
   * and so is the first round that works again.
   */
  private roundFailed(err: unknown): void {
    const code = String((err as { code?: unknown } | null)?.code ?? (err instanceof Error ? err.message : err));
    if (this.failing?.code === code) {
      this.log.debug({ err }, `${this.kind.name} round failed again`);
      return;
    }
    this.failing = { code, since: this.failing?.since ?? this.clock.now() };
    this.log.error({ err }, `${this.kind.name} round failed; trying again every interval`);
  }

  private roundWorked(): void {
    if (!this.failing) return;
    this.log.info({ failedForMs: this.clock.now() - this.failing.since }, `${this.kind.name} rounds work again`);
    this.failing = undefined;
  }

  /** Stops the timer and waits for the jobs in flight and their outcomes to be written. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    this.cancelTick?.();
    this.signal.notify();
    await this.running?.catch(() => undefined);
  }
}

/**
 * Rejects with `timedOut()` when `work` has not settled within `ms` of the clock: the deadline of
 * one attempt of a job, shorter than its lease so that the attempt ends while its claim holds.
 */
export function withDeadline<T>(clock: Clock, work: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  let cancel: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    cancel = clock.after(ms, () => reject(timedOut()));
  });
  return Promise.race([work, deadline]).finally(() => cancel?.());
}

/**
 * A job that runs every `everyMs` (deleting what is older than a retention): one run at a time,
 * its failures logged, and waited for on stop. `stopping` tells a long run to end early.
 */
export interface PeriodicKind<R> {
  readonly name: string;
  readonly everyMs: number;
  run(stopping: () => boolean): Promise<R>;
}

export class PeriodicJob<R> {
  private cancelTick: (() => void) | undefined;
  private running: Promise<unknown> | undefined;
  private stopping = false;

  constructor(
    private readonly kind: PeriodicKind<R>,
    private readonly log: FastifyBaseLogger,
    private readonly clock: Clock = systemClock,
  ) {}

  start(): void {
    if (this.stopping) return;
    this.cancelTick = this.clock.after(this.kind.everyMs, () => {
      this.running ??= this.runNow()
        .catch((err) => this.log.error({ err }, `${this.kind.name} failed`))
        .finally(() => (this.running = undefined));
      this.start();
    });
  }

  /** Resolves once no scheduled run is running. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** One run now, whatever the schedule. */
  runNow(): Promise<R> {
    return this.kind.run(() => this.stopping);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.cancelTick?.();
    await this.running;
  }
}
