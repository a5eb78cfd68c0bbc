import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { WebhookDeliveryRow, WebhookEventRow, WebhookRow } from '../db/schema.js';
import { JobRunner, PeriodicJob, type JobKind } from '../jobs/runner.js';
import { type Clock, formatTimestamp, systemClock } from '../time.js';
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
  /** A round that has made no progress this long is given up (logged), and a new one starts. */
  stuckRoundMs: number;
  /** The time and timers of rounds and retention runs (tests move it by hand). */
  jobClock?: Clock;
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
  // Every attempt ends within its deadline, so a round silent for three of them is stuck elsewhere.
  stuckRoundMs: 30_000,
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

/** A claimed delivery with what it is sent to and what it sends (absent when deleted meanwhile). */
interface ClaimedDelivery {
  delivery: WebhookDeliveryRow;
  webhook: WebhookRow | undefined;
  event: WebhookEventRow | undefined;
}

/**
 * Webhooks' policy as a kind of job: a window of `window` deliveries, at most `perWebhook` of them
 * to one webhook, each with its own deadline, so a receiver that hangs holds its own deliveries
 * only; a failure backs off on its own (Retry-After, else exponential), and a webhook failing too
 * long is disabled. Receivers tell repeats apart by the delivery's id.
 */
class WebhookDelivery implements JobKind<ClaimedDelivery> {
  readonly name = 'webhook delivery';
  /** Deliveries in flight per webhook. */
  private readonly inFlight = new Map<number, number>();

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly options: WebhookWorkerOptions,
    private readonly sender: WebhookSender,
    private readonly clock: Clock,
  ) {}

  room(held: number): number {
    return this.options.window - held;
  }

  /** Claims due deliveries (each webhook within its share) and loads their webhooks and events. */
  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.clock.now();
    const shares = { perWebhook: this.options.perWebhook, inFlight: this.inFlight };
    const claimed = await claimDue(
      this.db,
      formatTimestamp(new Date(now)),
      formatTimestamp(new Date(now + this.options.leaseMs)),
      limit,
      shares,
    );
    if (claimed.length === 0) return [];
    const webhooks = new Map(
      (await findWebhooksByIds(this.db, [...new Set(claimed.map((d) => d.webhook_id))])).map((w) => [w.id, w]),
    );
    const events = new Map(
      (await findEventsByIds(this.db, [...new Set(claimed.map((d) => d.event_id))])).map((e) => [e.id, e]),
    );
    for (const d of claimed) this.inFlight.set(d.webhook_id, (this.inFlight.get(d.webhook_id) ?? 0) + 1);
    return claimed.map((delivery) => ({
      delivery,
      webhook: webhooks.get(delivery.webhook_id),
      event: events.get(delivery.event_id),
    }));
  }

  /** A delivery ended: its webhook may take another, and its retry may be due. */
  ended({ delivery }: ClaimedDelivery): boolean {
    const left = (this.inFlight.get(delivery.webhook_id) ?? 1) - 1;
    if (left > 0) this.inFlight.set(delivery.webhook_id, left);
    else this.inFlight.delete(delivery.webhook_id);
    return true;
  }

  run(job: ClaimedDelivery): Promise<boolean> {
    // The claim stays as it is and runs out; the delivery is tried again then.
    return this.deliver(job).catch((err) => {
      this.log.error({ err, deliveryId: job.delivery.uid }, 'webhook delivery result could not be recorded');
      return false;
    });
  }

  /** One attempt, and its outcome written back; true when the receiver took it. */
  private async deliver({ delivery, webhook, event }: ClaimedDelivery): Promise<boolean> {
    if (!webhook || !event || webhook.disabled_at !== null) {
      // Queued just as its webhook was disabled: given up like the others waiting then.
      const last_error = webhook?.disabled_reason ?? 'The webhook is disabled.';
      await this.db.transaction().execute((trx) => recordAttempt(trx, delivery, { status: 'failed', last_error }));
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
      'shiplog-signature': signatureHeader(webhook.secret, body, Math.floor(this.clock.now() / 1000)),
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
    const at = this.clock.now() + delay;
    return at > Date.parse(delivery.retry_until) ? null : at;
  }

  /**
   * Writes an attempt's outcome, and what it means for the webhook, in one transaction: a success
   * clears its failures; a failure counts, and the webhook is disabled (with the reason, its
   * waiting deliveries given up) at `disableAfterFailures` in a row or after 24 hours of failing.
   */
  private async record(delivery: WebhookDeliveryRow, webhook: WebhookRow, outcome: Outcome): Promise<boolean> {
    const now = new Date(this.clock.now());
    const at = formatTimestamp(now);
    return this.db.transaction().execute(async (trx) => {
      if (!(await recordAttempt(trx, delivery, attemptChange(outcome, at)))) return false;
      if (outcome.delivered) {
        await clearFailures(trx, webhook.id);
        return true;
      }
      const counted = await countFailure(trx, webhook.id, at);
      if (!counted) return true;
      const reason = this.disableReason(counted, now, outcome.answer.error!);
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
}

/** The delivery's row as an outcome leaves it. */
function attemptChange({ delivered, answer, retryAt }: Outcome, at: string) {
  const measured = { response_code: answer.status ?? null, duration_ms: answer.durationMs };
  if (delivered) return { ...measured, status: 'delivered', delivered_at: at, last_error: null };
  if (retryAt === null) return { ...measured, status: 'failed', last_error: answer.error! };
  return {
    ...measured,
    status: 'pending',
    last_error: answer.error!,
    next_attempt_at: formatTimestamp(new Date(retryAt)),
  };
}

/**
 * Delivers webhook events after commit, in every server process: webhooks' kind of job
 * (WebhookDelivery) on the job runner, on a timer (the changes that queue events do not nudge it,
 * so a product without webhooks costs them nothing more). A worker that dies leaves its claims to
 * lapse; another (or the restarted one) takes them over, so a delivery can arrive twice only if
 * the process died between the receiver's answer and the write of the outcome. Retention is a
 * periodic job beside it: what is older than the retention is deleted, a batch at a time.
 */
export class WebhookWorker {
  private readonly runner: JobRunner<ClaimedDelivery>;
  private readonly retention: PeriodicJob<Swept>;
  private readonly sender: WebhookSender;

  constructor(db: Db, log: FastifyBaseLogger, options: WebhookWorkerOptions = DEFAULT_WEBHOOK_WORKER_OPTIONS) {
    const clock = options.jobClock ?? systemClock;
    this.sender = new WebhookSender({ timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate }, clock);
    this.runner = new JobRunner(new WebhookDelivery(db, log, options, this.sender, clock), options, log, clock);
    this.retention = new PeriodicJob(webhookRetention(db, log, options), log, clock);
  }

  start(): void {
    this.runner.start();
    this.retention.start();
  }

  /** Deletes the deliveries and events older than the retention now; resolves with what it deleted. */
  sweep(): Promise<Swept> {
    return this.retention.runNow();
  }

  /** Asks for a round soon, once started; rounds never overlap. */
  nudge(): void {
    this.runner.nudge();
  }

  /** Delivers everything due now (and what falls due meanwhile); resolves with how many arrived. */
  deliverDue(): Promise<number> {
    return this.runner.runDue();
  }

  /** Resolves once no delivery round and no retention run is running. */
  async settled(): Promise<void> {
    await Promise.all([this.runner.settled(), this.retention.settled()]);
  }

  /** Stops the timers and waits for the deliveries in flight and their outcomes, and for a retention run. */
  async stop(): Promise<void> {
    await Promise.all([this.runner.stop(), this.retention.stop()]);
    this.sender.close();
  }
}

type Swept = { deliveries: number; events: number; statements: number };

/**
 * Retention as a periodic kind of job: every `sweepIntervalMs`, the deliveries and events older
 * than the retention are deleted, a batch per statement (see deleteExpired).
 */
function webhookRetention(db: Db, log: FastifyBaseLogger, options: WebhookWorkerOptions) {
  return {
    name: 'deleting old webhook events',
    everyMs: options.sweepIntervalMs,
    async run(stopping: () => boolean): Promise<Swept> {
      const before = new Date(options.clock() - options.retentionMs);
      const done = await deleteExpired(db, before, options.retentionBatch, stopping);
      if (done.deliveries + done.events > 0) log.info(done, 'old webhook events and deliveries deleted');
      return done;
    },
  };
}
