import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';
import { formatTimestamp } from '../time.js';
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

/** Lets a waiting round go on: when a send ends, or when the worker is nudged. */
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

/** Rejects with an `EDEADLINE` error when `work` has not settled within `ms`. */
function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          Object.assign(new Error(`No answer from the mail server within ${Math.round(ms / 1000)} s.`), {
            code: 'EDEADLINE',
          }),
        ),
      ms,
    );
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Delivers the outbox after commit. Runs in the server process: on a timer, and at once when
 * nudged after a change queued mail. Sends run in a sliding window: new messages are claimed as
 * earlier ones finish or as new ones are queued, never waiting for a whole batch, and no send can
 * hold the window longer than its deadline. Outcomes are written back together, as each write
 * finishes the next takes everything that came in meanwhile; a message counts as held until its
 * outcome is written, so a crash can repeat at most the messages of one window.
 *
 * When the mail server cannot be reached, messages do not each back off on their own: the worker
 * stops claiming, keeps them due, and tries one every `probeIntervalMs`; the first that goes
 * through resumes delivery of everything due, so recovery takes one probe interval however long
 * the outage was.
 */
export class OutboxWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  /** Rounds get a number; a round given up as stuck sees that it is no longer the current one. */
  private round = 0;
  private progressAt = 0;
  private again = false;
  private started = false;
  private stopping = false;
  private readonly signal = new Signal();
  private outcomes: { outcome: Outcome; done: (recorded: boolean) => void; failed: (err: unknown) => void }[] = [];
  private writing = false;
  private outage: { since: number; code: string; nextProbeAt: number } | undefined;
  /** Since when delivery rounds fail, and with what (see roundFailed). */
  private failing: { since: number; code: string } | undefined;

  constructor(
    private readonly db: Db,
    private readonly transport: MailTransport,
    /** The sender address of every message. */
    private readonly from: string,
    private readonly links: UnsubscribeLinks,
    /** How each kind of message is rendered when it is sent. */
    private readonly renderers: MessageRenderers,
    private readonly log: FastifyBaseLogger,
    private readonly options: WorkerOptions = DEFAULT_WORKER_OPTIONS,
  ) {
    this.kinds = Object.keys(renderers);
  }

  /** The kinds of message this worker can render: it claims no other (a newer instance may). */
  private readonly kinds: string[];

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
      if (Date.now() - this.progressAt <= this.options.stuckRoundMs) {
        this.again = true;
        this.signal.notify();
        return;
      }
      this.log.error(
        { stuckForMs: Date.now() - this.progressAt },
        'mail delivery round made no progress; starting a new one',
      );
      this.running = undefined;
    }
    void this.deliverDue().then(
      () => this.roundWorked(),
      (err) => this.roundFailed(err),
    );
  }

  /**
   * A round that fails (the database out of reach, or taking no writes: a full disk) leaves its
   * messages due and the next tick tries again. The same failure round after round is logged once,
   * and so is the first round that works again.
   */
  private roundFailed(err: unknown): void {
    const code = String((err as { code?: unknown } | null)?.code ?? (err instanceof Error ? err.message : err));
    if (this.failing?.code === code) return this.log.debug({ err }, 'mail delivery round failed again');
    this.failing = { code, since: this.failing?.since ?? Date.now() };
    this.log.error({ err }, 'mail delivery round failed; trying again every interval');
  }

  private roundWorked(): void {
    if (!this.failing) return;
    this.log.info({ failedForMs: Date.now() - this.failing.since }, 'mail delivery rounds work again');
    this.failing = undefined;
  }

  /** Delivers everything due now; resolves with how many messages were sent. */
  deliverDue(): Promise<number> {
    if (this.running) {
      return this.running.then(() => this.deliverDue());
    }
    const round = ++this.round;
    this.progressAt = Date.now();
    const running = this.deliverRound(round).finally(() => {
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

  /** What this worker knows of the mail server right now. */
  state(): WorkerState {
    const since = this.outage?.since;
    return {
      unreachableSince: since === undefined ? null : formatTimestamp(new Date(since)),
      lastErrorCode: this.outage?.code ?? null,
    };
  }

  /** How many messages may be claimed now: the free part of the window, or one probe during an outage. */
  private capacity(held: number): number {
    if (!this.outage) return this.options.window - held;
    if (held > 0 || Date.now() < this.outage.nextProbeAt) return 0;
    this.outage.nextProbeAt = Date.now() + this.options.probeIntervalMs;
    return 1;
  }

  private async deliverRound(round: number): Promise<number> {
    const refill = Math.max(1, Math.floor(this.options.window / 2));
    const held = new Set<Promise<void>>();
    const tally = { sent: 0 };
    let drained = false;
    try {
      while (!this.stopping && round === this.round) {
        if (this.again && this.started) {
          // Something was queued meanwhile: look again rather than after this round.
          this.again = false;
          drained = false;
        }
        const room = drained ? 0 : this.capacity(held.size);
        if (room > 0 && (room >= refill || this.outage)) {
          const started = await this.claimAndSend(room, held, tally);
          if (started > 0) continue;
          drained = true;
          // A probe with nothing to send learns nothing: the next message tries the server afresh.
          this.outage = undefined;
        }
        if (held.size === 0) break;
        await this.signal.wait();
      }
    } finally {
      await Promise.all(held);
    }
    return tally.sent;
  }

  /** Claims up to `room` due messages, renders them, and starts their sends; returns how many. */
  private async claimAndSend(room: number, held: Set<Promise<void>>, tally: { sent: number }): Promise<number> {
    const now = Date.now();
    const claimed = await claimDue(
      this.db,
      formatTimestamp(new Date(now)),
      formatTimestamp(new Date(now + this.options.leaseMs)),
      room,
      this.kinds,
    );
    this.progressAt = Date.now();
    if (claimed.length === 0) return 0;
    const bodies = await renderMessages(this.db, claimed, this.renderers, (err, kind) =>
      this.log.error({ err, kind }, 'mail could not be rendered'),
    );
    for (const message of claimed) {
      const delivery: Promise<void> = this.deliver(message, bodies.get(message.id)).then((ok) => {
        if (ok) tally.sent += 1;
        held.delete(delivery);
        this.progressAt = Date.now();
        this.signal.notify();
      });
      held.add(delivery);
    }
    return claimed.length;
  }

  /** Sends one message and waits for its outcome to be written; true when it went out. */
  private async deliver(message: OutboxRow, body: MessageBody | null | undefined): Promise<boolean> {
    let outcome: Outcome;
    try {
      if (body === undefined) throw new Error('The message could not be rendered; it is tried again later.');
      if (body === null)
        throw Object.assign(new Error('What this message is about no longer exists.'), { permanent: true });
      await withDeadline(
        this.transport.send(composeMessage(message, body, this.from, this.links), message.id),
        this.options.sendTimeoutMs,
      );
      outcome = { claim: message };
      this.serverAnswered();
    } catch (err) {
      outcome = this.failure(message, err);
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
    const retryAt = Date.now() + retryDelayMs(message.attempts);
    const final = permanent === true || isPermanentFailure(err) || retryAt > Date.parse(message.retry_until);
    return { claim: message, error, retryAt: final ? null : formatTimestamp(new Date(retryAt)) };
  }

  private serverFailed(code: string): void {
    const now = Date.now();
    if (!this.outage) this.log.warn({ code }, 'mail server unreachable; pausing delivery and probing');
    this.outage = { since: this.outage?.since ?? now, code, nextProbeAt: now + this.options.probeIntervalMs };
  }

  /** The mail server answered (took a message, or gave any answer but 421): an outage is over. */
  private serverAnswered(): void {
    if (!this.outage) return;
    this.log.info({ downForMs: Date.now() - this.outage.since }, 'mail server reachable again; delivering what waited');
    this.outage = undefined;
    this.again = true;
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
          const recorded = sent.length
            ? await markAllSent(this.db, sent, formatTimestamp(new Date()))
            : new Set<number>();
          for (const { outcome } of batch) {
            if (
              outcome.error !== undefined &&
              (await markAttemptFailed(this.db, outcome.claim, outcome.error, outcome.retryAt))
            ) {
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
    this.signal.notify();
    await this.running?.catch(() => undefined);
  }
}
