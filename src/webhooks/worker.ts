import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { WebhookDeliveryRow, WebhookEventRow, WebhookRow } from '../db/schema.js';
import { formatTimestamp } from '../time.js';
import { FAILING_FOR_MS, RETENTION_BATCH } from './model.js';
import { signatureHeader, slackOfStoredBody } from './payload.js';
import {
  claimDue,
  clearFailures,
  countFailure,
  disableWebhook,
  findEventsByIds,
  findWebhooksByIds,
  recordAttempt,
} from './repository.js';
import { WebhookSender, type Answer } from './sender.js';
import { deleteExpired } from './service.js';

export interface WebhookWorkerOptions {
  /** How often due deliveries are looked for. */
  intervalMs: number;
  /** Most deliveries in flight at once. */
  window: number;
  /** Most deliveries in flight to one webhook, so that a receiver that hangs takes only these. */
  perWebhook: number;
  /** How long a claimed delivery stays claimed before another worker may take it over. */
  leaseMs: number;
  /** The deadline of one attempt; shorter than the lease. */
  timeoutMs: number;
  /** The first retry's delay; each later one doubles, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Failed attempts in a row that disable a webhook (as do 24 hours of failing). */
  disableAfterFailures: number;
  /** Whether targets on loopback, private and link-local addresses may be called. */
  allowPrivate: boolean;
  /** Events and deliveries older than this are deleted. */
  retentionMs: number;
  /** How often they are looked for. */
  sweepIntervalMs: number;
  /** Rows deleted per statement. */
  retentionBatch: number;
  /** The time retention counts from (tests move it). */
  clock: () => number;
}

export const DEFAULT_WEBHOOK_WORKER_OPTIONS: WebhookWorkerOptions = {
  intervalMs: 1000,
  window: 20,
  perWebhook: 2,
  leaseMs: 60_000,
  timeoutMs: 10_000,
  retryBaseMs: 30_000,
  retryMaxMs: 3600_000,
  disableAfterFailures: 20,
  allowPrivate: false,
  retentionMs: 30 * 24 * 3600_000,
  sweepIntervalMs: 600_000,
  retentionBatch: RETENTION_BATCH,
  clock: () => Date.now(),
};

/** What became of an attempt, as it is written back. */
interface Outcome {
  delivered: boolean;
  answer: Answer;
  /** For a failure: when to try again, or null when it is final. */
  retryAt: number | null;
}

/**
 * Whether a failed attempt is worth another: no answer (timeouts, refused or dropped connections),
 * a 5xx, 408 or 429. Other answers (3xx: redirects are not followed; 4xx) and forbidden targets
 * would fail again the same way.
 */
export function retryable(answer: Answer): boolean {
  if (answer.forbidden) return false;
  if (answer.status === undefined) return true;
  return answer.status >= 500 || answer.status === 408 || answer.status === 429;
}

/**
 * Delivers webhook events after commit, in every server process: on a timer (the changes that
 * queue events do not nudge it, so a product without webhooks costs them nothing more). Due
 * deliveries are claimed with a lease and sent in a sliding window, at most `perWebhook` at a
 * time to one webhook, each with its own deadline: a receiver that hangs holds its own
 * deliveries only. A worker that dies leaves its claims to lapse; another (or the restarted one)
 * takes them over, so a delivery can arrive twice only if the process died between the
 * receiver's answer and the write of the outcome. Receivers tell repeats apart by the delivery's id.
 * It also deletes, a batch at a time, what is older than the retention.
 */
export class WebhookWorker {
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private running: Promise<number> | undefined;
  private again = false;
  private started = false;
  private stopping = false;
  private wake: (() => void) | undefined;
  /** Deliveries ended so far: a claim that found nothing while one ended looks again. */
  private ended = 0;
  /** Deliveries in flight per webhook. */
  private readonly inFlight = new Map<number, number>();
  private readonly sender: WebhookSender;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly options: WebhookWorkerOptions = DEFAULT_WEBHOOK_WORKER_OPTIONS,
  ) {
    this.sender = new WebhookSender({ timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate });
  }

  start(): void {
    this.started = true;
    this.timer = setInterval(() => this.nudge(), this.options.intervalMs);
    this.timer.unref();
    this.sweepTimer = setInterval(() => {
      if (!this.sweeping)
        this.sweeping = this.sweep().catch((err) => this.log.error({ err }, 'deleting old webhook events failed'));
    }, this.options.sweepIntervalMs);
    this.sweepTimer.unref();
    this.nudge();
  }

  /**
   * Deletes the deliveries and events older than the retention, a batch per statement (see
   * deleteExpired); resolves with what it deleted.
   */
  async sweep(): Promise<{ deliveries: number; events: number; statements: number }> {
    try {
      const before = new Date(this.options.clock() - this.options.retentionMs);
      const done = await deleteExpired(this.db, before, this.options.retentionBatch, () => this.stopping);
      if (done.deliveries + done.events > 0) this.log.info(done, 'old webhook events and deliveries deleted');
      return done;
    } finally {
      this.sweeping = undefined;
    }
  }

  /** Asks for a round soon, once started; rounds never overlap. */
  nudge(): void {
    if (!this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    void this.deliverDue().catch((err) => this.log.error({ err }, 'webhook delivery round failed'));
  }

  /** Delivers everything due now (and what falls due meanwhile); resolves with how many arrived. */
  deliverDue(): Promise<number> {
    if (this.running) return this.running.then(() => this.deliverDue());
    const running = this.deliverRound().finally(() => {
      this.running = undefined;
      if (this.again && this.started) {
        this.again = false;
        this.nudge();
      }
    });
    this.running = running;
    return running;
  }

  private async deliverRound(): Promise<number> {
    const held = new Set<Promise<void>>();
    const tally = { delivered: 0 };
    let drained = false;
    try {
      while (!this.stopping) {
        const room = this.options.window - held.size;
        if (room > 0 && !drained) {
          const ended = this.ended;
          const started = await this.claimAndSend(room, held, tally);
          // Claimed some: there may be more (of other webhooks). None, while one ended (so its
          // webhook may take another): look again. Else wait for one to end.
          if (started > 0 || this.ended !== ended) continue;
          drained = true;
        }
        if (held.size === 0) break;
        await new Promise<void>((resolve) => (this.wake = resolve));
        // A delivery ended: its webhook may take another, and its retry may be due.
        drained = false;
      }
    } finally {
      await Promise.all(held);
    }
    return tally.delivered;
  }

  /** Claims up to `room` due deliveries (each webhook within its share) and starts them; returns how many. */
  private async claimAndSend(room: number, held: Set<Promise<void>>, tally: { delivered: number }): Promise<number> {
    const now = Date.now();
    const shares = { perWebhook: this.options.perWebhook, inFlight: this.inFlight };
    const claimed = await claimDue(
      this.db,
      formatTimestamp(new Date(now)),
      formatTimestamp(new Date(now + this.options.leaseMs)),
      room,
      shares,
    );
    if (claimed.length === 0) return 0;
    const webhooks = new Map(
      (await findWebhooksByIds(this.db, [...new Set(claimed.map((d) => d.webhook_id))])).map((w) => [w.id, w]),
    );
    const events = new Map(
      (await findEventsByIds(this.db, [...new Set(claimed.map((d) => d.event_id))])).map((e) => [e.id, e]),
    );
    for (const delivery of claimed) {
      this.inFlight.set(delivery.webhook_id, (this.inFlight.get(delivery.webhook_id) ?? 0) + 1);
      const sending: Promise<void> = this.deliver(
        delivery,
        webhooks.get(delivery.webhook_id),
        events.get(delivery.event_id),
      )
        .then((ok) => {
          if (ok) tally.delivered += 1;
        })
        // The claim stays as it is and runs out; the delivery is tried again then.
        .catch((err) =>
          this.log.error({ err, deliveryId: delivery.uid }, 'webhook delivery result could not be recorded'),
        )
        .finally(() => {
          const left = (this.inFlight.get(delivery.webhook_id) ?? 1) - 1;
          if (left > 0) this.inFlight.set(delivery.webhook_id, left);
          else this.inFlight.delete(delivery.webhook_id);
          held.delete(sending);
          this.ended += 1;
          this.wake?.();
        });
      held.add(sending);
    }
    return claimed.length;
  }

  /** One attempt, and its outcome written back; true when the receiver took it. */
  private async deliver(
    delivery: WebhookDeliveryRow,
    webhook: WebhookRow | undefined,
    event: WebhookEventRow | undefined,
  ): Promise<boolean> {
    if (!webhook || !event || webhook.disabled_at !== null) {
      // Queued just as its webhook was disabled: given up like the others waiting then.
      await this.db
        .transaction()
        .execute((trx) =>
          recordAttempt(trx, delivery, {
            status: 'failed',
            last_error: webhook?.disabled_reason ?? 'The webhook is disabled.',
          }),
        );
      return false;
    }
    // The bytes written with the event, as they are (events older than the kept Slack body render theirs).
    const body = Buffer.from(
      webhook.format === 'slack' ? event.slack_body || slackOfStoredBody(event.body) : event.body,
    );
    const answer = await this.sender.post(webhook.url, body, {
      'content-type': 'application/json',
      'user-agent': 'Shiplog-Webhooks/1',
      'shiplog-event': event.type,
      'shiplog-delivery': delivery.uid,
      'shiplog-signature': signatureHeader(webhook.secret, body, Math.floor(Date.now() / 1000)),
    });
    const delivered = answer.error === undefined;
    const outcome: Outcome = { delivered, answer, retryAt: delivered ? null : this.retryAt(delivery, answer) };
    const recorded = await this.record(delivery, webhook, outcome);
    const context = {
      deliveryId: delivery.uid,
      webhookId: webhook.id,
      event: event.type,
      attempts: delivery.attempts,
      recorded,
    };
    if (delivered)
      this.log.info({ ...context, status: answer.status, durationMs: answer.durationMs }, 'webhook delivered');
    else this.log.warn({ ...context, err: answer.error, final: outcome.retryAt === null }, 'webhook delivery failed');
    return delivered;
  }

  /**
   * When to try a failed delivery again, or null when not: Retry-After when the receiver gives
   * one (408, 429, 503), else exponential backoff with ±50% jitter; never past the retry window.
   */
  private retryAt(delivery: WebhookDeliveryRow, answer: Answer): number | null {
    if (!retryable(answer)) return null;
    const backoff = Math.min(
      this.options.retryBaseMs * 2 ** Math.max(0, delivery.attempts - 1),
      this.options.retryMaxMs,
    );
    const delay = answer.retryAfterMs ?? backoff * (0.5 + Math.random());
    const at = Date.now() + delay;
    return at > Date.parse(delivery.retry_until) ? null : at;
  }

  /**
   * Writes an attempt's outcome, and what it means for the webhook, in one transaction: a success
   * clears its failures; a failure counts, and the webhook is disabled (with the reason, its
   * waiting deliveries given up) at `disableAfterFailures` in a row or after 24 hours of failing.
   */
  private async record(delivery: WebhookDeliveryRow, webhook: WebhookRow, outcome: Outcome): Promise<boolean> {
    const now = new Date();
    const at = formatTimestamp(now);
    const { answer } = outcome;
    const measured = { response_code: answer.status ?? null, duration_ms: answer.durationMs };
    return this.db.transaction().execute(async (trx) => {
      const change = outcome.delivered
        ? { ...measured, status: 'delivered', delivered_at: at, last_error: null }
        : outcome.retryAt === null
          ? { ...measured, status: 'failed', last_error: answer.error! }
          : {
              ...measured,
              status: 'pending',
              last_error: answer.error!,
              next_attempt_at: formatTimestamp(new Date(outcome.retryAt)),
            };
      if (!(await recordAttempt(trx, delivery, change))) return false;
      if (outcome.delivered) {
        await clearFailures(trx, webhook.id);
        return true;
      }
      const counted = await countFailure(trx, webhook.id, at);
      if (!counted) return true;
      const reason = this.disableReason(counted, now, answer.error!);
      if (reason) {
        await disableWebhook(trx, webhook.id, at, reason);
        this.log.warn({ webhookId: webhook.id, reason }, 'webhook disabled');
      }
      return true;
    });
  }

  private disableReason(webhook: WebhookRow, now: Date, lastError: string): string | undefined {
    if (webhook.consecutive_failures >= this.options.disableAfterFailures) {
      return `Disabled after ${webhook.consecutive_failures} failed deliveries in a row; the last: ${lastError}`;
    }
    if (webhook.failing_since && now.getTime() - Date.parse(webhook.failing_since) >= FAILING_FOR_MS) {
      return `Disabled after failing since ${webhook.failing_since} (24 hours); the last: ${lastError}`;
    }
    return undefined;
  }

  /** Stops the timer and waits for the deliveries in flight and their outcomes. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.wake?.();
    await this.running?.catch(() => undefined);
    await this.sweeping?.catch(() => undefined);
    this.sender.close();
  }
}
