import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';

export type NewMessage = Pick<OutboxRow, 'deploy_id' | 'user_id' | 'to_address' | 'subject' | 'body_text' | 'message_id'>;

/** Queues messages; called inside the transaction of the change that causes them. */
export async function enqueueMessages(trx: Db, messages: NewMessage[], now: string): Promise<void> {
  if (messages.length === 0) return;
  await trx
    .insertInto('outbox')
    .values(messages.map((m) => ({ ...m, status: 'pending', attempts: 0, next_attempt_at: now, created_at: now })))
    .execute();
}

/**
 * Takes up to `limit` due messages for delivery: pending ones whose time has come, and ones whose
 * previous claimant's lease ran out (it died mid-delivery). Claiming is one UPDATE per row guarded
 * by the state it read, so two workers never take the same message.
 */
export async function claimDue(db: Db, now: string, leaseUntil: string, limit: number): Promise<OutboxRow[]> {
  return db.transaction().execute(async (trx) => {
    const due = await trx
      .selectFrom('outbox')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now)]),
          eb.and([eb('status', '=', 'sending'), eb('lease_until', '<', now)]),
        ]),
      )
      .orderBy('id')
      .limit(limit)
      .execute();
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

export async function markSent(db: Db, id: number, at: string): Promise<void> {
  await db.updateTable('outbox').set({ status: 'sent', sent_at: at, lease_until: null, last_error: null }).where('id', '=', id).execute();
}

/** Records a failed attempt: tried again at `retryAt`, or given up (`failed`) when it is null. */
export async function markAttemptFailed(db: Db, id: number, error: string, retryAt: string | null): Promise<void> {
  await db
    .updateTable('outbox')
    .set(
      retryAt
        ? { status: 'pending', next_attempt_at: retryAt, lease_until: null, last_error: error }
        : { status: 'failed', lease_until: null, last_error: error },
    )
    .where('id', '=', id)
    .execute();
}

export async function listMessages(db: Db, filter: { deployId?: number } = {}): Promise<OutboxRow[]> {
  let q = db.selectFrom('outbox').selectAll().orderBy('id');
  if (filter.deployId !== undefined) q = q.where('deploy_id', '=', filter.deployId);
  return q.execute();
}
