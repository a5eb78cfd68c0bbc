import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';
import { formatTimestamp } from '../time.js';
import { claimDue, markAllSent, markAttemptFailed } from './outbox.js';
import { renderMessages } from './render.js';
import { composeMessage, type MailTransport } from './transport.js';
import type { UnsubscribeLinks } from './unsubscribe.js';

export interface WorkerOptions {
  /** How often due messages are looked for when nobody nudges the worker. */
  intervalMs: number;
  /**
   * Most messages held at once: claimed and not yet recorded as sent or failed. Also the most a
   * crash can deliver twice. More are claimed whenever half of these are done, so one slow
   * message never holds up the others.
   */
  window: number;
  /** How long a claimed message stays claimed before another worker may take it over. */
  leaseMs: number;
}

/**
 * A window is what the SMTP pool (5 connections) can send well within one lease even when the
 * mail server is slow (each attempt gives up after 30 s), so claims do not lapse while queued;
 * and enough to keep every connection busy while results are written back.
 */
export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { intervalMs: 1000, window: 20, leaseMs: 120_000 };

/** How long temporary failures are retried before a message is given up. */
export const RETRY_WINDOW_MS = 24 * 3600_000;

/**
 * A mail server's 5xx answer is final (but for authentication, which an operator can fix), and
 * so is an address the message cannot even be addressed to. Anything else (refused or dropped
 * connections, timeouts, 4xx) is worth another try.
 */
export function isPermanentFailure(err: unknown): boolean {
  const { code, responseCode } = (err ?? {}) as { code?: string; responseCode?: number };
  if (code === 'EAUTH') return false;
  if (typeof responseCode === 'number') return responseCode >= 500 && responseCode < 600;
  return code === 'EENVELOPE';
}

/** Exponential backoff from 30 s, capped at an hour, with ±50% jitter so retries spread out. */
export function retryDelayMs(attempts: number, random = Math.random): number {
  const base = Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3600_000);
  return Math.round(base * (0.5 + random()));
}

/** The outcome of one delivery attempt, waiting to be written back to the outbox. */
type Outcome = { claim: OutboxRow; error?: undefined } | { claim: OutboxRow; error: string; retryAt: string | null };

/**
 * Delivers the outbox after commit. Runs in the server process: on a timer, and at once when
 * nudged after a change queued mail. Sends run in a sliding window: new messages are claimed as
 * earlier ones finish, never waiting for a whole batch. Outcomes are written back together, as
 * each write finishes the next takes everything that came in meanwhile; a message counts as held
 * until its outcome is written, so a crash can repeat at most the messages of one window.
 */
export class OutboxWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private again = false;
  private started = false;
  private stopping = false;
  private outcomes: { outcome: Outcome; done: (recorded: boolean) => void; failed: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly db: Db,
    private readonly transport: MailTransport,
    /** The sender address, and the public base URL that links in the messages start with. */
    private readonly site: { from: string; publicUrl: string },
    private readonly links: UnsubscribeLinks,
    private readonly log: FastifyBaseLogger,
    private readonly options: WorkerOptions = DEFAULT_WORKER_OPTIONS,
  ) {}

  start(): void {
    this.started = true;
    this.timer = setInterval(() => this.nudge(), this.options.intervalMs);
    this.timer.unref();
    this.nudge();
  }

  /** Asks for a delivery round soon, once started; rounds never overlap. */
  nudge(): void {
    if (!this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    void this.deliverDue().catch((err) => this.log.error({ err }, 'mail delivery round failed'));
  }

  /** Delivers everything due now; resolves with how many messages were sent. */
  deliverDue(): Promise<number> {
    if (this.running) {
      return this.running.then(() => this.deliverDue());
    }
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.again && this.started) {
        this.again = false;
        this.nudge();
      }
    });
    return this.running;
  }

  private async round(): Promise<number> {
    const { window, leaseMs } = this.options;
    const refill = Math.max(1, Math.floor(window / 2));
    const held = new Set<Promise<void>>();
    let sent = 0;
    let drained = false;
    try {
      while (!this.stopping) {
        if (this.again && this.started) {
          // Something was queued meanwhile: look again rather than after this round.
          this.again = false;
          drained = false;
        }
        if (!drained && window - held.size >= refill) {
          const now = Date.now();
          const claimed = await claimDue(this.db, formatTimestamp(new Date(now)), formatTimestamp(new Date(now + leaseMs)), window - held.size);
          if (claimed.length === 0) drained = true;
          const bodies = claimed.length ? await renderMessages(this.db, claimed, this.site.publicUrl, this.links) : new Map();
          for (const message of claimed) {
            const delivery: Promise<void> = this.deliver(message, bodies.get(message.id) ?? null).then((ok) => {
              if (ok) sent += 1;
              held.delete(delivery);
            });
            held.add(delivery);
          }
          if (claimed.length) continue;
        }
        if (held.size === 0) break;
        await Promise.race(held);
      }
    } finally {
      await Promise.all(held);
    }
    return sent;
  }

  /** Sends one message and waits for its outcome to be written; true when it went out. */
  private async deliver(message: OutboxRow, body: { text: string; html: string } | null): Promise<boolean> {
    let outcome: Outcome;
    try {
      if (!body) throw Object.assign(new Error('The deploy or items of this message no longer exist.'), { permanent: true });
      await this.transport.send(composeMessage(message, body, this.site.from, this.links), message.id);
      outcome = { claim: message };
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
      const retryAt = Date.now() + retryDelayMs(message.attempts);
      const final = (err as { permanent?: boolean }).permanent === true || isPermanentFailure(err) || retryAt > Date.parse(message.retry_until);
      outcome = { claim: message, error: reason, retryAt: final ? null : formatTimestamp(new Date(retryAt)) };
    }
    let recorded: boolean;
    try {
      recorded = await this.record(outcome);
    } catch (err) {
      // The claim stays as it is and runs out; the message is tried again then.
      this.log.error({ err, outboxId: message.id }, 'mail delivery result could not be recorded');
      return outcome.error === undefined;
    }
    if (outcome.error !== undefined) {
      const final = outcome.retryAt === null;
      this.log.warn({ outboxId: message.id, attempts: message.attempts, err: outcome.error, final, recorded }, 'mail delivery failed');
      return false;
    }
    if (!recorded) {
      // The lease ran out and another worker took the message over: it may go out twice.
      this.log.warn({ outboxId: message.id, messageId: message.message_id }, 'mail delivered after its lease ran out');
      return true;
    }
    this.log.info({ outboxId: message.id, messageId: message.message_id }, 'mail delivered');
    return true;
  }

  /** Queues an outcome for the next write; resolves with whether the claim was still ours. */
  private record(outcome: Outcome): Promise<boolean> {
    return new Promise((done, failed) => {
      this.outcomes.push({ outcome, done, failed });
      if (!this.writing) void this.writeOutcomes();
    });
  }

  /**
   * Writes queued outcomes until none are left: all deliveries that came in meanwhile in one
   * statement, failures (rare, each with its own error and retry time) one by one.
   */
  private async writeOutcomes(): Promise<void> {
    this.writing = true;
    try {
      while (this.outcomes.length) {
        const batch = this.outcomes.splice(0);
        try {
          const sent = batch.flatMap(({ outcome }) => (outcome.error === undefined ? [outcome.claim] : []));
          const recorded = sent.length ? await markAllSent(this.db, sent, formatTimestamp(new Date())) : new Set<number>();
          for (const { outcome } of batch) {
            if (outcome.error !== undefined && (await markAttemptFailed(this.db, outcome.claim, outcome.error, outcome.retryAt))) {
              recorded.add(outcome.claim.id);
            }
          }
          for (const { outcome, done } of batch) done(recorded.has(outcome.claim.id));
        } catch (err) {
          for (const { failed } of batch) failed(err);
        }
      }
    } finally {
      // Cleared in the same step that found the queue empty, so no outcome is left behind.
      this.writing = false;
    }
  }

  /** Stops the timer and waits for the sends in flight and their outcomes to be written. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
