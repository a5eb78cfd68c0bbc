import type { Db } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import type { OutboxRow } from '../db/schema.js';

export type NewMessage = Pick<
  OutboxRow,
  'deploy_id' | 'user_id' | 'to_address' | 'subject' | 'body_text' | 'body_html' | 'item_ids' | 'message_id'
>;

/** Queues messages; called inside the transaction of the change that causes them. */
export async function enqueueMessages(trx: Db, messages: NewMessage[], now: string, retryUntil: string): Promise<void> {
  if (messages.length === 0) return;
  await trx
    .insertInto('outbox')
    .values(
      messages.map((m) => ({ ...m, status: 'pending', attempts: 0, next_attempt_at: now, retry_until: retryUntil, created_at: now })),
    )
    .execute();
}

/**
 * Takes up to `limit` due messages for delivery: pending ones whose time has come, and ones whose
 * previous claimant's lease ran out (it died mid-delivery). Each claim is an UPDATE guarded by the
 * state that was read, so two workers never take the same message.
 */
export async function claimDue(db: Db, now: string, leaseUntil: string, limit: number): Promise<OutboxRow[]> {
  return db.transaction().execute(async (trx) => {
    let query = trx
      .selectFrom('outbox')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now)]),
          eb.and([eb('status', '=', 'sending'), eb('lease_until', '<', now)]),
        ]),
      )
      .orderBy('id')
      .limit(limit);
    // PostgreSQL: workers of several instances take disjoint batches instead of queueing on the
    // same rows. SQLite has a single writer, so there is nothing to skip.
    if (dialectOf(trx) === 'postgres') query = query.forUpdate().skipLocked();
    const due = await query.execute();
    const claimed: OutboxRow[] = [];
    for (const row of due) {
      const res = await trx
        .updateTable('outbox')
        .set({ status: 'sending', lease_until: leaseUntil, attempts: row.attempts + 1 })
        .where('id', '=', row.id)
        .where('status', '=', row.status)
        .where('attempts', '=', row.attempts)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) claimed.push({ ...row, status: 'sending', lease_until: leaseUntil, attempts: row.attempts + 1 });
    }
    return claimed;
  });
}

/** A claimed message: its outcome is recorded only while the claim is still this worker's. */
type Claim = Pick<OutboxRow, 'id' | 'attempts'>;

/** The outbox row of a claim, as long as the claim is still this worker's. */
function stillClaimed(db: Db, claim: Claim) {
  return db.updateTable('outbox').where('id', '=', claim.id).where('status', '=', 'sending').where('attempts', '=', claim.attempts);
}

/** Records a delivery; false when the claim had lapsed and another worker took the message over. */
export async function markSent(db: Db, claim: Claim, at: string): Promise<boolean> {
  const res = await stillClaimed(db, claim).set({ status: 'sent', sent_at: at, lease_until: null, last_error: null }).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Records a failed attempt: tried again at `retryAt`, or given up (`failed`) when it is null. */
export async function markAttemptFailed(db: Db, claim: Claim, error: string, retryAt: string | null): Promise<boolean> {
  const res = await stillClaimed(db, claim)
    .set(
      retryAt
        ? { status: 'pending', next_attempt_at: retryAt, lease_until: null, last_error: error }
        : { status: 'failed', lease_until: null, last_error: error },
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export interface OutboxSummary {
  counts: Record<'pending' | 'sending' | 'sent' | 'failed', number>;
  oldestPendingAt: string | null;
}

/** Counts by state and the age of the oldest undelivered message: what operators watch. */
export async function summarize(db: Db): Promise<OutboxSummary> {
  const rows = await db
    .selectFrom('outbox')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.min('created_at').as('oldest')])
    .groupBy('status')
    .execute();
  const counts = { pending: 0, sending: 0, sent: 0, failed: 0 };
  let oldestPendingAt: string | null = null;
  for (const row of rows) {
    counts[row.status as keyof typeof counts] = Number(row.n);
    if ((row.status === 'pending' || row.status === 'sending') && row.oldest && (!oldestPendingAt || row.oldest < oldestPendingAt)) {
      oldestPendingAt = row.oldest as string;
    }
  }
  return { counts, oldestPendingAt };
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
