import type { Expression, ExpressionBuilder, Selectable, SelectQueryBuilder, SqlBool } from 'kysely';
import type { Db } from './connection.js';
import { dialectOf } from './dialect.js';
import type { Database } from './schema.js';

/**
 * Tables whose rows workers take under a lease (the mail outbox, webhook deliveries): each has
 * `id`, `status` ('pending', 'sending', ...), `attempts`, `next_attempt_at` and `lease_until`.
 */
export type LeasedTable = 'outbox' | 'webhook_deliveries';

/** Which rows of a leased table are due: the condition a claim reads them under, and updates them under. */
export type Due<T extends LeasedTable> = (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;

/**
 * A claim is two steps in the caller's transaction: the candidates are read, then updated by id
 * under the same condition. This is the first step's lock: on PostgreSQL the candidates are locked
 * with SKIP LOCKED, so workers of several instances take disjoint sets instead of queueing on the
 * same rows (SQLite has a single writer, so there is nothing to skip). Not one
 * `UPDATE ... WHERE id IN (SELECT ... LIMIT n)`: with SKIP LOCKED, PostgreSQL may run such a
 * subquery more than once and claim far more than n rows.
 */
export function lockedForClaim<DB, TB extends keyof DB, O>(
  trx: Db,
  candidates: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return dialectOf(trx) === 'postgres' ? candidates.forUpdate().skipLocked() : candidates;
}

/**
 * The second step: the rows of `ids` still `due` become `sending` until `leaseUntil`, their
 * attempts counted; returned in id order. A row another worker took meanwhile no longer matches
 * `due`, so no row is ever taken twice.
 */
export async function takeLeases<T extends LeasedTable>(
  trx: Db,
  table: T,
  ids: number[],
  due: Due<T>,
  leaseUntil: string,
): Promise<Selectable<Database[T]>[]> {
  if (ids.length === 0) return [];
  // Both tables have the columns a lease writes; Kysely types the statement for one of them.
  const rows = await trx
    .updateTable(table as 'outbox')
    .set((eb) => ({ status: 'sending', lease_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', ids)
    .where(due as unknown as Due<'outbox'>)
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.id - b.id) as unknown as Selectable<Database[T]>[];
}
