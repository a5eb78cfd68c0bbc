import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import { formatTimestamp } from '../time.js';
import { claimDue, markAttemptFailed, markSent } from './outbox.js';
import type { MailTransport } from './transport.js';

export interface WorkerOptions {
  /** How often due messages are looked for when nobody nudges the worker. */
  intervalMs: number;
  batchSize: number;
  /** How long a claimed message stays claimed before another worker may take it over. */
  leaseMs: number;
  /** A message still failing this long after it was queued is given up. */
  giveUpAfterMs: number;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = {
  intervalMs: 1000,
  batchSize: 50,
  leaseMs: 60_000,
  giveUpAfterMs: 24 * 3600_000,
};

/** A mail server's 5xx answer is final; anything else (network, timeouts, 4xx) is worth a retry. */
export function isPermanentFailure(err: unknown): boolean {
  const code = (err as { responseCode?: number } | null)?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

/** Exponential backoff from 30 s, capped at an hour, with ±50% jitter so retries spread out. */
export function retryDelayMs(attempts: number, random = Math.random): number {
  const base = Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3600_000);
  return Math.round(base * (0.5 + random()));
}

/**
 * Delivers the outbox after commit. Runs in the server process: on a timer, and at once when
 * nudged after a change queued mail. Every outcome is written back to the outbox row.
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
    for (;;) {
      const now = Date.now();
      const batch = await claimDue(this.db, formatTimestamp(new Date(now)), formatTimestamp(new Date(now + this.options.leaseMs)), this.options.batchSize);
      if (batch.length === 0) return sent;
      for (const message of batch) {
        try {
          await this.transport.send(message);
          await markSent(this.db, message.id, formatTimestamp(new Date()));
          sent++;
          this.log.info({ outboxId: message.id, messageId: message.message_id }, 'mail delivered');
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          const retryAt = Date.now() + retryDelayMs(message.attempts);
          const giveUp = isPermanentFailure(err) || retryAt > Date.parse(message.created_at) + this.options.giveUpAfterMs;
          await markAttemptFailed(this.db, message.id, reason.slice(0, 1000), giveUp ? null : formatTimestamp(new Date(retryAt)));
          this.log.warn({ outboxId: message.id, err: reason, final: giveUp }, 'mail delivery failed');
        }
      }
      if (this.stopping) return sent;
    }
  }

  /** Stops the timer and waits for a round in progress to finish. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
