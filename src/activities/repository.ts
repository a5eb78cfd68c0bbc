import { sql, type Insertable, type OnConflictBuilder } from 'kysely';
import type { Db, Trx } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import { prepared } from '../db/prepared.js';
import type { ActivitiesTable, ActivityRow, Database } from '../db/schema.js';

/** Rows one statement adds: 7 values each, well inside either database's limit on bound values. */
const INSERT_STEP = 500;
/** What stands for the whole product among the counters. */
const PRODUCT_WIDE = 0;

/**
 * Adds activities and moves their counters (each item's, and each product's) by as many, in the
 * caller's transaction. Counters are moved in key order, a product's own first, so that two
 * writers never wait for each other's counters the other way round.
 */
export async function insertActivities(trx: Trx, rows: Insertable<ActivitiesTable>[]): Promise<void> {
  const counters = countersOf(rows);
  // PostgreSQL, a change's few activities: the rows and their counters in one statement (one
  // round trip of the change instead of two; a data-modifying WITH runs whether or not it is read).
  if (dialectOf(trx) === 'postgres' && rows.length <= INSERT_STEP && counters.length <= INSERT_STEP) {
    await trx
      .with('added', (db) => db.insertInto('activities').values(rows).returning('id'))
      .insertInto('activity_counts')
      .values(counters)
      .onConflict(addToCounter)
      .execute();
    return;
  }
  for (let i = 0; i < rows.length; i += INSERT_STEP)
    await trx
      .insertInto('activities')
      .values(rows.slice(i, i + INSERT_STEP))
      .execute();
  for (let i = 0; i < counters.length; i += INSERT_STEP)
    await trx
      .insertInto('activity_counts')
      .values(counters.slice(i, i + INSERT_STEP))
      .onConflict(addToCounter)
      .execute();
}

/** A counter that exists already is moved by the count given. */
const addToCounter = (oc: OnConflictBuilder<Database, 'activity_counts'>) =>
  oc
    .columns(['product_id', 'item_id'])
    .doUpdateSet((eb) => ({ count: eb('activity_counts.count', '+', eb.ref('excluded.count')) }));

/** How far the activities move each counter (each item's, and each product's), in key order. */
function countersOf(rows: Insertable<ActivitiesTable>[]): { product_id: number; item_id: number; count: number }[] {
  const added = new Map<string, { product_id: number; item_id: number; count: number }>();
  for (const row of rows) {
    for (const item_id of [PRODUCT_WIDE, row.item_id]) {
      const key = `${row.product_id}:${item_id}`;
      const counter = added.get(key) ?? added.set(key, { product_id: row.product_id, item_id, count: 0 }).get(key)!;
      counter.count += 1;
    }
  }
  return [...added.values()].sort((a, b) => a.product_id - b.product_id || a.item_id - b.item_id);
}

/** Whose activities a page lists: a product's, or one item's. */
export type ActivityScope = { productId: number; itemId?: number };

/**
 * One page of activities, newest first. Its ids come from the index of their product or item
 * alone (on PostgreSQL an index-only scan), and only the page's rows are read: a deep offset
 * walks index entries, never the rows it skips.
 */
export async function listActivities(
  db: Db,
  scope: ActivityScope,
  offset: number,
  limit: number,
): Promise<ActivityRow[]> {
  const ids = db.selectFrom('activities').select('id');
  const page =
    scope.itemId === undefined
      ? ids.where('product_id', '=', scope.productId)
      : ids.where('item_id', '=', scope.itemId);
  return (
    db
      .selectFrom('activities')
      .selectAll()
      // A LIMIT in the text: SQLite plans a bound one anew each time (see db/prepared.ts).
      .where('id', 'in', page.orderBy('id', 'desc').limit(sql.lit(limit)).offset(offset))
      .orderBy('id', 'desc')
      .execute()
  );
}

/** The statement of a page of an item's activities per page size (its LIMIT is written in its text). */
const itemPages = new Map<number, (db: Db, itemId: number, offset: number) => Promise<ActivityRow[]>>();

function itemPageOf(limit: number) {
  return prepared((db, itemId: number, offset: number) =>
    db
      .selectFrom('activities')
      .selectAll()
      .where(
        'id',
        'in',
        db
          .selectFrom('activities')
          .select('id')
          .where('item_id', '=', itemId)
          .orderBy('id', 'desc')
          .limit(sql.lit(limit))
          .offset(offset),
      )
      .orderBy('id', 'desc'),
  );
}

/**
 * One page of an item's activities, newest first, as listActivities reads it; prepared (see
 * db/prepared.ts), since an item's page reads it on every view. Pages come in a few sizes.
 */
export async function listItemActivities(
  db: Db,
  itemId: number,
  offset: number,
  limit: number,
): Promise<ActivityRow[]> {
  let page = itemPages.get(limit);
  if (!page) {
    page = itemPageOf(limit);
    itemPages.set(limit, page);
  }
  return page(db, itemId, offset);
}

/** How many activities a product or item has, as counted when they were written. */
export async function countActivities(db: Db, scope: ActivityScope): Promise<number> {
  const row = await db
    .selectFrom('activity_counts')
    .select('count')
    .where('product_id', '=', scope.productId)
    .where('item_id', '=', scope.itemId ?? PRODUCT_WIDE)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}
