import type { Expression, ExpressionBuilder, Selectable, SqlBool, Updateable } from 'kysely';
import { inChunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';

/**
 * Tables whose rows are jobs taken under a lease (the mail outbox, webhook deliveries): each has
 * `id`, `status` ('pending', 'sending', then the kind's own final states), `attempts`,
 * `next_attempt_at` and `lease_until`, and an index on (status, next_attempt_at).
 */
export type LeasedTable = 'outbox' | 'webhook_deliveries';

/** A condition on the rows of a leased table. */
export type Condition<T extends LeasedTable> = (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;

/** What a claim asks for, beyond the due rows of its table. */
export interface ClaimRequest<T extends LeasedTable> {
  now: string;
  leaseUntil: string;
  limit: number;
  /** Only rows matching this as well (the kinds of message a worker renders, the targets below their share). */
  only?: Condition<T>;
  /**
   * A per-target share: candidates are read with this column, and `admit` (called in due order,
   * and keeping its own count) says which are taken, so one target's backlog cannot fill the claim.
   */
  share?: { column: 'webhook_id'; admit: (key: number) => boolean };
}

/**
 * Takes up to `limit` due jobs: first those whose claimant's lease ran out (it died mid-job), then
 * pending ones whose time has come, earliest first; each becomes `sending` until `leaseUntil`,
 * with one more attempt counted. Both look-ups walk the (status, next_attempt_at) index, never the
 * history of finished jobs. One transaction, two steps: the candidates are read (on PostgreSQL
 * locked with SKIP LOCKED, so workers of several instances take disjoint sets instead of queueing
 * on the same rows; SQLite has a single writer, so there is nothing to skip), then updated by id
 * under the same condition, so a row another worker took meanwhile no longer matches and no row
 * is ever taken twice. Not one `UPDATE ... WHERE id IN (SELECT ... LIMIT n)`: with SKIP LOCKED,
 * PostgreSQL may run such a subquery more than once and claim far more than n rows.
 */
export async function claimDue<T extends LeasedTable>(
  db: Db,
  table: T,
  request: ClaimRequest<T>,
): Promise<Selectable<Database[T]>[]> {
  const { now, limit } = request;
  const only = (request.only ?? ((eb) => eb.lit(true))) as Condition<'outbox'>;
  const lapsed: Condition<'outbox'> = (eb) =>
    eb.and([eb('status', '=', 'sending'), eb('lease_until', '<', now), only(eb)]);
  const pending: Condition<'outbox'> = (eb) =>
    eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now), only(eb)]);
  return db.transaction().execute(async (trx) => {
    const claimed = await claimWhere(trx, table, lapsed, request, limit);
    if (claimed.length < limit)
      claimed.push(...(await claimWhere(trx, table, pending, request, limit - claimed.length)));
    return claimed;
  });
}

/** Both tables have the columns a claim reads and writes; Kysely types the statements for one of them. */
async function claimWhere<T extends LeasedTable>(
  trx: Db,
  table: T,
  due: Condition<'outbox'>,
  request: ClaimRequest<T>,
  limit: number,
): Promise<Selectable<Database[T]>[]> {
  const share = request.share;
  // The share's column is read as `key` (the id again when there is no share).
  const key = (share?.column ?? 'id') as 'id';
  let candidates = trx
    .selectFrom(table as 'outbox')
    .select((eb) => ['id', eb.ref(key).as('key')])
    .where(due)
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(limit);
  if (dialectOf(trx) === 'postgres') candidates = candidates.forUpdate().skipLocked();
  const rows = await candidates.execute();
  const ids = rows.filter((row) => !share || share.admit(row.key)).map((row) => row.id);
  if (ids.length === 0) return [];
  const taken = await trx
    .updateTable(table as 'outbox')
    .set((eb) => ({ status: 'sending', lease_until: request.leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', ids)
    .where(due)
    .returningAll()
    .execute();
  return taken.sort((a, b) => a.id - b.id) as unknown as Selectable<Database[T]>[];
}

/** A claimed job: its outcome is written only while the claim is still this worker's. */
export interface Claim {
  id: number;
  attempts: number;
}

/**
 * Writes a claimed job's outcome (its lease cleared); false when the claim had lapsed and another
 * worker took the job over (its attempt count moved on), which is then left alone.
 */
export async function settleClaim<T extends LeasedTable>(
  db: Db,
  table: T,
  claim: Claim,
  changes: Updateable<Database[T]>,
): Promise<boolean> {
  const res = await db
    .updateTable(table as 'outbox')
    .set({ ...(changes as Updateable<Database['outbox']>), lease_until: null })
    .where('id', '=', claim.id)
    .where('status', '=', 'sending')
    .where('attempts', '=', claim.attempts)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** settleClaim for many jobs with the same outcome, in few statements; resolves with the ids written. */
export async function settleClaims<T extends LeasedTable>(
  db: Db,
  table: T,
  claims: Claim[],
  changes: Updateable<Database[T]>,
): Promise<Set<number>> {
  const byAttempts = new Map<number, number[]>();
  for (const c of claims) (byAttempts.get(c.attempts) ?? byAttempts.set(c.attempts, []).get(c.attempts)!).push(c.id);
  const settled = new Set<number>();
  for (const [attempts, ids] of byAttempts) {
    const rows = await inChunks(ids, (chunk) =>
      db
        .updateTable(table as 'outbox')
        .set({ ...(changes as Updateable<Database['outbox']>), lease_until: null })
        .where('id', 'in', chunk)
        .where('status', '=', 'sending')
        .where('attempts', '=', attempts)
        .returning('id')
        .execute(),
    );
    for (const row of rows) settled.add(row.id);
  }
  return settled;
}
