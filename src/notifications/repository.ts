import { inChunks } from '../db/chunks.js';
import type { Db, Trx } from '../db/connection.js';

/** The environments the user chose for the product, in code point order; none for every environment. */
export async function findChosenEnvironments(db: Db, productId: number, userId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('notification_environments')
    .select('environment')
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .execute();
  // Sorted here: PostgreSQL would order text by the database's collation, SQLite by code point.
  return rows.map((r) => r.environment).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Replaces the user's choice for the product; an empty list leaves the default, every environment. */
export async function replaceChosenEnvironments(
  trx: Trx,
  productId: number,
  userId: number,
  environments: string[],
): Promise<void> {
  await trx
    .deleteFrom('notification_environments')
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .execute();
  if (environments.length === 0) return;
  await trx
    .insertInto('notification_environments')
    .values(environments.map((environment) => ({ product_id: productId, user_id: userId, environment })))
    .execute();
}

/**
 * Of the given users, those who chose environments for the product, each with whether
 * `environment` is one of them: one row per such user (the primary key's index answers it).
 */
export async function choicesFor(
  db: Db,
  productId: number,
  environment: string,
  userIds: number[],
): Promise<Map<number, boolean>> {
  const rows = await inChunks(userIds, (chunk) =>
    db
      .selectFrom('notification_environments')
      .select((eb) => [
        'user_id',
        eb.fn.max(eb.case().when('environment', '=', environment).then(1).else(0).end()).as('chosen'),
      ])
      .where('product_id', '=', productId)
      .where('user_id', 'in', chunk)
      .groupBy('user_id')
      .execute(),
  );
  return new Map(rows.map((r) => [r.user_id, Number(r.chosen) === 1]));
}

/** Whether the user turned comment mail off for the product (a row says so). */
export async function commentMailOff(db: Db, productId: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('comment_mail_off')
    .select('user_id')
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function setCommentMailOff(trx: Trx, productId: number, userId: number, off: boolean): Promise<void> {
  if (!off) {
    await trx
      .deleteFrom('comment_mail_off')
      .where('product_id', '=', productId)
      .where('user_id', '=', userId)
      .execute();
    return;
  }
  await trx
    .insertInto('comment_mail_off')
    .values({ product_id: productId, user_id: userId })
    .onConflict((oc) => oc.columns(['product_id', 'user_id']).doNothing())
    .execute();
}

/** Of the given users, those who turned comment mail off for the product. */
export async function commentMailOffAmong(db: Db, productId: number, userIds: number[]): Promise<Set<number>> {
  const rows = await inChunks(userIds, (chunk) =>
    db
      .selectFrom('comment_mail_off')
      .select('user_id')
      .where('product_id', '=', productId)
      .where('user_id', 'in', chunk)
      .execute(),
  );
  return new Set(rows.map((r) => r.user_id));
}
