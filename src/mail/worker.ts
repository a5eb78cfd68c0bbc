import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';
import { formatTimestamp } from '../time.js';
import { claimDue, markAttemptFailed, markSent } from './outbox.js';
import { composeMessage, type MailTransport } from './transport.js';
import type { UnsubscribeLinks } from './unsubscribe.js';

export interface WorkerOptions {
  /** How often due messages are looked for when nobody nudges the worker. */
  intervalMs: number;
  /** Messages claimed (and sent concurrently) at a time. */
  batchSize: number;
  /** How long a claimed message stays claimed before another worker may take it over. */
  leaseMs: number;
}

/**
 * A batch is what the SMTP pool (5 connections) can send well within one lease even when the mail
 * server is slow (each attempt gives up after 30 s), so claims do not lapse while queued.
 */
export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { intervalMs: 1000, batchSize: 20, leaseMs: 120_000 };

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

/**
 * Delivers the outbox after commit. Runs in the server process: on a timer, and at once when
 * nudged after a change queued mail. Every outcome is written back to the outbox row, one message
 * at a time, so a crash can repeat at most the messages that were in flight.
 */
export class OutboxWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private again = false;
  private started = false;
  private stopping = false;

  constructor(
    private readonly db: Db,
    private readonly transport: MailTransport,
    private readonly from: string,
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
    let sent = 0;
    while (!this.stopping) {
      const now = Date.now();
      const batch = await claimDue(
        this.db,
        formatTimestamp(new Date(now)),
        formatTimestamp(new Date(now + this.options.leaseMs)),
        this.options.batchSize,
      );
      if (batch.length === 0) break;
      const results = await Promise.all(batch.map((message) => this.deliver(message)));
      sent += results.filter(Boolean).length;
    }
    return sent;
  }

  private async deliver(message: OutboxRow): Promise<boolean> {
    try {
      await this.transport.send(composeMessage(message, this.from, this.links), message.id);
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
      const retryAt = Date.now() + retryDelayMs(message.attempts);
      const final = isPermanentFailure(err) || retryAt > Date.parse(message.retry_until);
      const recorded = await markAttemptFailed(this.db, message, reason, final ? null : formatTimestamp(new Date(retryAt)));
      this.log.warn({ outboxId: message.id, attempts: message.attempts, err: reason, final, recorded }, 'mail delivery failed');
      return false;
    }
    if (!(await markSent(this.db, message, formatTimestamp(new Date())))) {
      // The lease ran out and another worker took the message over: it may go out twice.
      this.log.warn({ outboxId: message.id, messageId: message.message_id }, 'mail delivered after its lease ran out');
      return true;
    }
    this.log.info({ outboxId: message.id, messageId: message.message_id }, 'mail delivered');
    return true;
  }

  /** Stops the timer and waits for a round in progress to finish its batch. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
