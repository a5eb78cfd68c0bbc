import type { Db, Trx } from '../db/connection.js';
import { sql } from 'kysely';
import type { OutboxRow } from '../db/schema.js';
import { claimDue as claimLeased, settleClaim, settleClaims } from '../jobs/repository.js';
import { formatTimestamp } from '../time.js';

/**
 * A message to queue: whom it goes to, its subject, and what its bodies are rendered from when it
 * is sent (a deploy and the recipient's items, or with kind `invitation` an invitation).
 */
export type NewMessage = Pick<
  OutboxRow,
  'deploy_id' | 'user_id' | 'to_address' | 'subject' | 'item_ids' | 'message_id'
> &
  Partial<Pick<OutboxRow, 'kind' | 'invitation_id' | 'comment_id' | 'block_id' | 'refusal_id'>>;

/** Queues messages; called inside the transaction of the change that causes them. */
export async function enqueueMessages(
  trx: Trx,
  messages: NewMessage[],
  now: string,
  retryUntil: string,
): Promise<void> {
  if (messages.length === 0) return;
  await trx
    .insertInto('outbox')
    .values(
      messages.map((m) => ({
        ...m,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        retry_until: retryUntil,
        created_at: now,
      })),
    )
    .execute();
}

/**
 * Takes up to `limit` due messages for delivery under a lease (see jobs/repository.ts claimDue):
 * those whose claimant died first, then pending ones by due time. Only messages of the given
 * `kinds` are taken: those the worker can render (during a rolling upgrade an older instance leaves
 * a newer kind to the newer ones).
 */
export async function claimDue(
  db: Db,
  now: string,
  leaseUntil: string,
  limit: number,
  kinds: string[],
): Promise<OutboxRow[]> {
  if (kinds.length === 0) return [];
  return claimLeased(db, 'outbox', { now, leaseUntil, limit, only: (eb) => eb('kind', 'in', kinds) });
}

/** A claimed message: its outcome is recorded only while the claim is still this worker's. */
export type Claim = Pick<OutboxRow, 'id' | 'attempts'>;

/**
 * Records deliveries, many in one statement; resolves with the ids recorded. A claim that had
 * lapsed (another worker took the message over, so its attempt count moved on) is left alone.
 */
export async function markAllSent(db: Db, claims: Claim[], at: string): Promise<Set<number>> {
  return settleClaims(db, 'outbox', claims, { status: 'sent', sent_at: at, last_error: null });
}

/**
 * Records a failed attempt: tried again at `retryAt`, given up (`failed`) when it is null, or
 * (`'due'`) pending again with the due time it had, when the mail server rather than the message
 * failed.
 */
export async function markAttemptFailed(
  db: Db,
  claim: Claim,
  error: string,
  retryAt: string | null | 'due',
): Promise<boolean> {
  const change =
    retryAt === null
      ? { status: 'failed', last_error: error }
      : retryAt === 'due'
        ? { status: 'pending', last_error: error }
        : { status: 'pending', next_attempt_at: retryAt, last_error: error };
  return settleClaim(db, 'outbox', claim, change);
}

export interface OutboxSummary {
  counts: Record<'pending' | 'sending' | 'sent' | 'failed', number>;
  /** When the oldest undelivered message was queued. */
  oldestPendingAt: string | null;
  /** Since when the longest-waiting due message has been due (its retry time, or its lapsed lease). */
  oldestDueAt: string | null;
  /** The latest delivery, by any worker. */
  lastSentAt: string | null;
}

/**
 * How many messages were ever sent: the whole history of the outbox, which grows without end, so
 * counting it on every health check or scrape would walk an index of every message sent (a tenth
 * of a second at a million on SQLite, with the process waiting). A sent message stays sent and
 * keeps its `sent_at`, so those sent before a settled time are counted once and remembered, and
 * each summary counts only those sent since, down the `sent_at` index. The settled time trails the
 * clock by an hour: far longer than a delivery takes to be written back, or than the clocks of
 * several instances differ. One per process, shared by its callers.
 */
export class SentCount {
  #settled: { before: string; count: number } | undefined;

  /** The settled time for `now`, and how many messages were sent before it. */
  async settled(db: Db, now: string): Promise<{ before: string; count: number }> {
    const before = formatTimestamp(new Date(Date.parse(now) - SENT_SETTLE_MS));
    let settled = this.#settled;
    if (!settled) settled = { before, count: await countSentBetween(db, null, before) };
    else if (settled.before < before)
      settled = { before, count: settled.count + (await countSentBetween(db, settled.before, before)) };
    // Calls running at once each arrive at a consistent pair; the later settled time is kept.
    if (!this.#settled || this.#settled.before < settled.before) this.#settled = settled;
    return settled;
  }
}

const SENT_SETTLE_MS = 60 * 60 * 1000;

/** Messages sent at or after `from` and before `to` (either open). */
async function countSentBetween(db: Db, from: string | null, to: string | null): Promise<number> {
  let query = db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('sent_at', 'is not', null);
  if (from !== null) query = query.where('sent_at', '>=', from);
  if (to !== null) query = query.where('sent_at', '<', to);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/**
 * Counts by state, the oldest waiting and due messages, and the latest delivery: what operators
 * watch. `sent` remembers the settled part of the sent count between calls (a fresh one counts all).
 */
export async function summarize(db: Db, now: string, sent = new SentCount()): Promise<OutboxSummary> {
  // Each query is served by an index: the unsent counts and the due times by (status,
  // next_attempt_at) (the lapsed leases are among the few messages being sent), the sent count and
  // the latest delivery by sent_at. /health and /metrics ask this often.
  const settled = await sent.settled(db, now);
  // The counts by state in one statement, and so of one moment: counted apart, a message sent
  // between the two counts would show both as being sent and as sent.
  const rows = await db
    .selectFrom('outbox')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('status', 'in', ['pending', 'sending', 'failed'])
    .groupBy('status')
    .unionAll(
      db
        .selectFrom('outbox')
        .select([sql.lit('sent').as('status'), (eb) => eb.fn.countAll<number>().as('n')])
        .where('sent_at', 'is not', null)
        .where('sent_at', '>=', settled.before),
    )
    .execute();
  const counts = { pending: 0, sending: 0, sent: 0, failed: 0 };
  for (const row of rows) counts[row.status as keyof typeof counts] = Number(row.n);
  counts.sent += settled.count;
  const latest = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.max('sent_at').as('at'))
    .executeTakeFirst();
  const summary: OutboxSummary = {
    counts,
    oldestPendingAt: null,
    oldestDueAt: null,
    lastSentAt: (latest?.at as string | null | undefined) ?? null,
  };
  if (counts.pending + counts.sending === 0) return summary;
  const oldest = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', 'in', ['pending', 'sending'])
    .executeTakeFirst();
  const due = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.min('next_attempt_at').as('at'))
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  const lapsed = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.min('lease_until').as('at'))
    .where('status', '=', 'sending')
    .where('lease_until', '<', now)
    .executeTakeFirst();
  const dueTimes = [due?.at, lapsed?.at].filter((t): t is string => typeof t === 'string').sort();
  return {
    ...summary,
    oldestPendingAt: (oldest?.oldest as string | null | undefined) ?? null,
    oldestDueAt: dueTimes[0] ?? null,
  };
}

/** The most recent failures, final or still being retried. */
export async function recentErrors(db: Db, limit = 10): Promise<OutboxRow[]> {
  return db
    .selectFrom('outbox')
    .selectAll()
    .where('last_error', 'is not', null)
    .where('status', 'in', ['pending', 'failed'])
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * Makes waiting messages due now, and with `failed` also the given-up ones (their backoff starting
 * over), each with a fresh retry window. Returns how many messages were touched.
 */
export async function retryNow(db: Db, now: string, retryUntil: string, failed: boolean): Promise<number> {
  const waiting = await db
    .updateTable('outbox')
    .set({ next_attempt_at: now, retry_until: retryUntil })
    .where('status', '=', 'pending')
    .executeTakeFirst();
  const given = failed
    ? await db
        .updateTable('outbox')
        .set({ status: 'pending', attempts: 0, next_attempt_at: now, retry_until: retryUntil })
        .where('status', '=', 'failed')
        .executeTakeFirst()
    : { numUpdatedRows: 0n };
  return Number(waiting.numUpdatedRows) + Number(given.numUpdatedRows);
}

export async function findByMessageId(db: Db, messageId: string): Promise<OutboxRow | undefined> {
  return db.selectFrom('outbox').selectAll().where('message_id', '=', messageId).executeTakeFirst();
}

/** Marks a message's unsubscribe link used; false when it already was (a link works once). */
export async function markUnsubscribed(trx: Db, id: number, at: string): Promise<boolean> {
  const res = await trx
    .updateTable('outbox')
    .set({ unsubscribed_at: at })
    .where('id', '=', id)
    .where('unsubscribed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
