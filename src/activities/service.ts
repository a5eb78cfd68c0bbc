import type { Db, Trx } from '../db/connection.js';
import type { ActivityRow, ItemRow, UserRow } from '../db/schema.js';
import { nowTimestamp } from '../time.js';
import { boundedMeta, type ActivityAction } from './model.js';
import {
  countActivities,
  insertActivities,
  listActivities,
  listItemActivities,
  type ActivityScope,
} from './repository.js';

/** A change to put in the log: what happened, to which item, by whom, and what `meta` tells of it. */
export interface ActivityInput {
  action: ActivityAction;
  item: Pick<ItemRow, 'id' | 'product_id' | 'number'>;
  actor: Pick<UserRow, 'id'>;
  /** Stored bounded (boundedMeta): long texts cut, with `truncated` naming them. */
  meta?: Record<string, unknown>;
  /** When it happened: the change's own timestamp; now unless given. */
  at?: string;
}

/**
 * Puts one change, or several (a deploy's items), in the activity log, in the transaction of the
 * change itself: rolled back with it, it never happened. Every change of an item calls it after
 * its write (a change that changes nothing, none). Called after lockProduct, as every change of
 * a product's items is: the product's counter is then moved by one writer at a time.
 */
export async function recordActivity(trx: Trx, activity: ActivityInput | readonly ActivityInput[]): Promise<void> {
  const activities = 'action' in activity ? [activity] : activity;
  if (activities.length === 0) return;
  const now = nowTimestamp();
  await insertActivities(
    trx,
    activities.map((a) => ({
      product_id: a.item.product_id,
      item_id: a.item.id,
      item_number: a.item.number,
      user_id: a.actor.id,
      action: a.action,
      meta: boundedMeta(a.meta ?? {}),
      created_at: a.at ?? now,
    })),
  );
}

/** One page of a product's activities, or of one of its items' (`itemId`), newest first, and how many there are. */
export async function activitiesOf(
  db: Db,
  scope: ActivityScope,
  page: { offset: number; limit: number },
): Promise<{ rows: ActivityRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    listActivities(db, scope, page.offset, page.limit),
    countActivities(db, scope),
  ]);
  return { rows, total };
}

/**
 * A page of an item's activities, newest first, and how many it has, as activitiesOf gives them:
 * what an item's page shows on every view, so its statement is prepared, and a first page that is
 * not full holds them all (the counter, moved with every activity, is not read).
 */
export async function itemActivitiesOf(
  db: Db,
  scope: { productId: number; itemId: number },
  page: { offset: number; limit: number },
): Promise<{ rows: ActivityRow[]; total: number }> {
  const rows = await listItemActivities(db, scope.itemId, page.offset, page.limit);
  if (page.offset === 0 && rows.length < page.limit) return { rows, total: rows.length };
  return { rows, total: await countActivities(db, scope) };
}
