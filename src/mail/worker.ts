import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';
import { JobRunner, withDeadline, type JobKind } from '../jobs/runner.js';
import { type Clock, formatTimestamp, systemClock } from '../time.js';
import { claimDue, markAllSent, markAttemptFailed } from './outbox.js';
import { renderMessages, type MessageBody, type MessageRenderers } from './render.js';
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
  /**
   * The deadline of one delivery attempt, from hand-over to the mail server's answer (connect,
   * greeting, the whole transaction). A send that misses it is a failure of that message alone,
   * and the transport's connections are replaced. Shorter than the lease, so an attempt always
   * ends while its claim holds.
   */
  sendTimeoutMs: number;
  /**
   * While the mail server cannot be reached, one message is tried this often (the probe); the
   * first that goes through lets everything due go again at once.
   */
  probeIntervalMs: number;
  /** A round that has made no progress this long is given up (logged), and a new one starts. */
  stuckRoundMs: number;
  /** The time and timers of rounds, deadlines and probes (tests move it by hand). */
  clock?: Clock;
}

/**
 * A window is what the SMTP pool (5 connections) can send well within one lease even when the
 * mail server is slow, so claims do not lapse while queued; and enough to keep every connection
 * busy while results are written back.
 */
export const DEFAULT_WORKER_OPTIONS: WorkerOptions = {
  intervalMs: 1000,
  window: 20,
  leaseMs: 120_000,
  sendTimeoutMs: 60_000,
  probeIntervalMs: 15_000,
  stuckRoundMs: 180_000,
};

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

/**
 * nodemailer's codes for a mail server that could not be reached or talked to at all: refused or
 * dropped connections, no greeting or no answer within its socket timeouts, DNS, TLS, login.
 */
const SERVER_CODES = new Set([
  'ECONNECTION',
  'ESOCKET',
  'ETIMEDOUT',
  'EDNS',
  'ETLS',
  'EAUTH',
  'ECONNREFUSED',
  'ECONNRESET',
]);

/**
 * A failure of the mail server rather than of the message: it would fail every message alike
 * (refused, dropped or silent connections, failed TLS or login, "421 closing"). Such messages do
 * not back off one by one; the worker pauses and probes until the server answers again. A send
 * that merely missed the worker's own deadline is not one: the server may be slow, and may even
 * take the message in the end, so that message backs off alone (and could otherwise be sent
 * again and again).
 */
export function isServerFailure(err: unknown): boolean {
  const { code, responseCode } = (err ?? {}) as { code?: string; responseCode?: number };
  return responseCode === 421 || (code !== undefined && SERVER_CODES.has(code));
}

/** Exponential backoff from 30 s, capped at an hour, with ±50% jitter so retries spread out. */
export function retryDelayMs(attempts: number, random = Math.random): number {
  const base = Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3600_000);
  return Math.round(base * (0.5 + random()));
}

/**
 * The outcome of one delivery attempt, waiting to be written back to the outbox. A failure is
 * tried again at `retryAt`, given up when it is null, or (`'due'`) left due as it was: a message
 * that waits for its mail server keeps the time it became due, which is what /health measures.
 */
type Outcome =
  | { claim: OutboxRow; error?: undefined }
  | { claim: OutboxRow; error: string; retryAt: string | null | 'due' };

/** What this worker knows of the mail server, for operators (`/health`). */
export interface WorkerState {
  /** Since when the mail server cannot be reached (null while it can). */
  unreachableSince: string | null;
  /** The code of the last failure that said so (`ECONNREFUSED`, `ETIMEDOUT`, `421`): no addresses. */
  lastErrorCode: string | null;
}

/** A claimed message with its bodies: null when what it is about is gone, undefined when it could not be rendered. */
interface ClaimedMessage {
  message: OutboxRow;
  body: MessageBody | null | undefined;
}

/**
 * Writes outcomes back to the outbox together: as each write finishes, the next takes everything
 * that came in meanwhile, all deliveries in one statement, failures (rare, each with its own error
 * and retry time) one by one.
 */
class OutcomeWriter {
  private outcomes: { outcome: Outcome; done: (recorded: boolean) => void; failed: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Queues an outcome for the next write; resolves with whether the claim was still ours. */
  record(outcome: Outcome): Promise<boolean> {
    return new Promise((done, failed) => {
      this.outcomes.push({ outcome, done, failed });
      if (!this.writing) void this.writeAll();
    });
  }

  private async writeAll(): Promise<void> {
    this.writing = true;
    try {
      while (this.outcomes.length) {
        const batch = this.outcomes.splice(0);
        try {
          const recorded = await this.write(batch.map(({ outcome }) => outcome));
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

  private async write(outcomes: Outcome[]): Promise<Set<number>> {
    const sent = outcomes.flatMap((outcome) => (outcome.error === undefined ? [outcome.claim] : []));
    const at = formatTimestamp(new Date(this.clock.now()));
    const recorded = sent.length ? await markAllSent(this.db, sent, at) : new Set<number>();
    for (const outcome of outcomes) {
      if (outcome.error === undefined) continue;
      if (await markAttemptFailed(this.db, outcome.claim, outcome.error, outcome.retryAt))
        recorded.add(outcome.claim.id);
    }
    return recorded;
  }
}

/**
 * Mail's policy as a kind of job: a window of `window` messages, claimed again whenever half of
 * it is free, of the kinds of message it can render; each send with a deadline; outcomes written
 * in batches. When the mail server cannot be reached, messages do not each back off on their own:
 * the kind claims nothing, keeps them due, and lets one through every `probeIntervalMs`; the first
 * that goes through resumes delivery of everything due, so recovery takes one probe interval
 * however long the outage was.
 */
class MailDelivery implements JobKind<ClaimedMessage> {
  readonly name = 'mail delivery';
  /** The kinds of message this worker can render: it claims no other (a newer instance may). */
  private readonly kinds: string[];
  private readonly writer: OutcomeWriter;
  private outage: { since: number; code: string; nextProbeAt: number } | undefined;
  /** The mail server answered again after an outage: what waited may be claimed at once. */
  private resumed = false;

  constructor(
    private readonly db: Db,
    private readonly transport: MailTransport,
    private readonly from: string,
    private readonly links: UnsubscribeLinks,
    private readonly renderers: MessageRenderers,
    private readonly log: FastifyBaseLogger,
    private readonly options: WorkerOptions,
    private readonly clock: Clock,
  ) {
    this.kinds = Object.keys(renderers);
    this.writer = new OutcomeWriter(db, clock);
  }

  /** The free part of the window once half of it is free, or one probe during an outage. */
  room(held: number): number {
    const refill = Math.max(1, Math.floor(this.options.window / 2));
    if (!this.outage) {
      const room = this.options.window - held;
      return room >= refill ? room : 0;
    }
    const now = this.clock.now();
    if (held > 0 || now < this.outage.nextProbeAt) return 0;
    this.outage.nextProbeAt = now + this.options.probeIntervalMs;
    return 1;
  }

  /** A probe with nothing to send learns nothing: the next message tries the server afresh. */
  drained(): void {
    this.outage = undefined;
  }

  async claim(limit: number): Promise<ClaimedMessage[]> {
    const now = this.clock.now();
    const claimed = await claimDue(
      this.db,
      formatTimestamp(new Date(now)),
      formatTimestamp(new Date(now + this.options.leaseMs)),
      limit,
      this.kinds,
    );
    if (claimed.length === 0) return [];
    const bodies = await renderMessages(this.db, claimed, this.renderers, (err, kind) =>
      this.log.error({ err, kind }, 'mail could not be rendered'),
    );
    return claimed.map((message) => ({ message, body: bodies.get(message.id) }));
  }

  /** Sends one message and waits for its outcome to be written; true when it went out. */
  async run({ message, body }: ClaimedMessage): Promise<boolean> {
    const outcome = await this.send(message, body);
    let recorded: boolean;
    try {
      recorded = await this.writer.record(outcome);
    } catch (err) {
      // The claim stays as it is and runs out; the message is tried again then.
      this.log.error({ err, outboxId: message.id }, 'mail delivery result could not be recorded');
      return outcome.error === undefined;
    }
    if (outcome.error !== undefined) {
      const final = outcome.retryAt === null;
      this.log.warn(
        { outboxId: message.id, attempts: message.attempts, err: outcome.error, final, recorded },
        'mail delivery failed',
      );
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

  private async send(message: OutboxRow, body: MessageBody | null | undefined): Promise<Outcome> {
    try {
      if (body === undefined) throw new Error('The message could not be rendered; it is tried again later.');
      if (body === null)
        throw Object.assign(new Error('What this message is about no longer exists.'), { permanent: true });
      const ms = this.options.sendTimeoutMs;
      const sending = this.transport.send(composeMessage(message, body, this.from, this.links), message.id);
      await withDeadline(this.clock, sending, ms, () =>
        Object.assign(new Error(`No answer from the mail server within ${Math.round(ms / 1000)} s.`), {
          code: 'EDEADLINE',
        }),
      );
      this.serverAnswered();
      return { claim: message };
    } catch (err) {
      return this.failure(message, err);
    }
  }

  /**
   * The outcome of a failed attempt. A failure of the server keeps the message due (the outage
   * paces it, and it is never given up for it); a failure of the message backs off, and is final
   * when permanent or past the message's retry window.
   */
  private failure(message: OutboxRow, err: unknown): Outcome {
    const error = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
    const { code, responseCode, permanent } = (err ?? {}) as {
      code?: string;
      responseCode?: number;
      permanent?: boolean;
    };
    // Connections that missed a deadline may never answer: later sends get fresh ones.
    if (code === 'EDEADLINE') this.transport.reset();
    // Sent nowhere: the pool it waited in was replaced. It goes again as it was.
    if (code === 'ERESET') return { claim: message, error, retryAt: 'due' };
    if (isServerFailure(err)) {
      this.serverFailed(code ?? String(responseCode));
      return { claim: message, error, retryAt: 'due' };
    }
    // Any other answer shows the server is there.
    if (responseCode !== undefined) this.serverAnswered();
    const retryAt = this.clock.now() + retryDelayMs(message.attempts);
    const final = permanent === true || isPermanentFailure(err) || retryAt > Date.parse(message.retry_until);
    return { claim: message, error, retryAt: final ? null : formatTimestamp(new Date(retryAt)) };
  }

  private serverFailed(code: string): void {
    const now = this.clock.now();
    if (!this.outage) this.log.warn({ code }, 'mail server unreachable; pausing delivery and probing');
    this.outage = { since: this.outage?.since ?? now, code, nextProbeAt: now + this.options.probeIntervalMs };
  }

  /** The mail server answered (took a message, or gave any answer but 421): an outage is over. */
  private serverAnswered(): void {
    if (!this.outage) return;
    const downForMs = this.clock.now() - this.outage.since;
    this.log.info({ downForMs }, 'mail server reachable again; delivering what waited');
    this.outage = undefined;
    this.resumed = true;
  }

  /** A send ended: true when it ended an outage, so that the runner looks for what waited. */
  ended(): boolean {
    const resumed = this.resumed;
    this.resumed = false;
    return resumed;
  }

  state(): WorkerState {
    const since = this.outage?.since;
    return {
      unreachableSince: since === undefined ? null : formatTimestamp(new Date(since)),
      lastErrorCode: this.outage?.code ?? null,
    };
  }
}

/**
 * Delivers the outbox after commit: mail's kind of job (MailDelivery) on the job runner. Runs in
 * the server process: on a timer, and at once when nudged after a change queued mail.
 */
export class OutboxWorker {
  private readonly kind: MailDelivery;
  private readonly runner: JobRunner<ClaimedMessage>;

  constructor(
    db: Db,
    transport: MailTransport,
    /** The sender address of every message. */
    from: string,
    links: UnsubscribeLinks,
    /** How each kind of message is rendered when it is sent. */
    renderers: MessageRenderers,
    log: FastifyBaseLogger,
    options: WorkerOptions = DEFAULT_WORKER_OPTIONS,
  ) {
    const clock = options.clock ?? systemClock;
    this.kind = new MailDelivery(db, transport, from, links, renderers, log, options, clock);
    this.runner = new JobRunner(this.kind, options, log, clock);
  }

  start(): void {
    this.runner.start();
  }

  /** Asks for a delivery round soon, once started; rounds never overlap. */
  nudge(): void {
    this.runner.nudge();
  }

  /** Delivers everything due now; resolves with how many messages were sent. */
  deliverDue(): Promise<number> {
    return this.runner.runDue();
  }

  /** Resolves once no delivery round is running. */
  settled(): Promise<void> {
    return this.runner.settled();
  }

  /** What this worker knows of the mail server right now. */
  state(): WorkerState {
    return this.kind.state();
  }

  /** Stops the timer and waits for the sends in flight and their outcomes to be written. */
  stop(): Promise<void> {
    return this.runner.stop();
  }
}
