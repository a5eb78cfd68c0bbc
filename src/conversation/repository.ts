import { sql } from 'kysely';
import { inChunks } from '../db/chunks.js';
import type { Db, Trx } from '../db/connection.js';
import type { Selectable } from 'kysely';
import {
  storableId,
  type AnnotationRow,
  type BlockRow,
  type CommentRow,
  type Database,
  type FavoriteRow,
} from '../db/schema.js';
import type { CommentVia } from './model.js';
import { prepared } from '../db/prepared.js';

export interface Page {
  offset: number;
  limit: number;
}

/** The tables of an item's entries, each keyed by its own id and read under its item. */
type EntryTable = 'comments' | 'favorites' | 'blocks' | 'annotations';
type EntryRow<T extends EntryTable> = Selectable<Database[T]>;

/** One entry of an item's, by id: none when it is another item's. */
export async function findEntry<T extends EntryTable>(
  db: Db,
  table: T,
  itemId: number,
  id: number,
): Promise<EntryRow<T> | undefined> {
  // An id past what a column holds names nothing (PostgreSQL would refuse to compare it).
  if (!storableId(id)) return undefined;
  const row = await db
    .selectFrom(table as 'comments')
    .selectAll()
    .where('item_id', '=', itemId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row as EntryRow<T> | undefined;
}

/** A page of the entries whose `column` names the item, oldest first. */
export async function listEntries<T extends EntryTable>(
  db: Db,
  table: T,
  itemId: number,
  page: Page,
  column: 'item_id' | 'blocked_id' = 'item_id',
): Promise<EntryRow<T>[]> {
  const rows = await db
    .selectFrom(table as 'blocks')
    .selectAll()
    .where(column, '=', itemId)
    .orderBy('id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows as EntryRow<T>[];
}

// An item's page reads its blocks and the viewer's favorite on every view: prepared (see db/prepared.ts).
const blocksMade = prepared((db, itemId: number, limit: number, offset: number) =>
  db.selectFrom('blocks').selectAll().where('item_id', '=', itemId).orderBy('id').limit(limit).offset(offset),
);
const blocksSuffered = prepared((db, itemId: number, limit: number, offset: number) =>
  db.selectFrom('blocks').selectAll().where('blocked_id', '=', itemId).orderBy('id').limit(limit).offset(offset),
);

/** A page of the blocks the item makes (`item_id`) or suffers (`blocked_id`), oldest first. */
export async function listBlocks(
  db: Db,
  itemId: number,
  column: 'item_id' | 'blocked_id',
  page: Page,
): Promise<BlockRow[]> {
  return (column === 'item_id' ? blocksMade : blocksSuffered)(db, itemId, page.limit, page.offset);
}

const commentsPage = prepared((db, itemId: number, limit: number, offset: number) =>
  db.selectFrom('comments').selectAll().where('item_id', '=', itemId).orderBy('id').limit(limit).offset(offset),
);

/** A page of the item's comments, oldest first. */
export async function listComments(db: Db, itemId: number, page: Page): Promise<CommentRow[]> {
  return commentsPage(db, itemId, page.limit, page.offset);
}

const favoriteOf = prepared((db, itemId: number, userId: number) =>
  db.selectFrom('favorites').selectAll().where('item_id', '=', itemId).where('user_id', '=', userId),
);

/** How many entries name the item in `column`. */
export async function countEntries(
  db: Db,
  table: 'blocks' | 'annotations',
  itemId: number,
  column: 'item_id' | 'blocked_id' = 'item_id',
): Promise<number> {
  const row = await db
    .selectFrom(table as 'blocks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(column, '=', itemId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

// Comments: an item's, oldest first.

export async function insertComment(
  trx: Trx,
  row: { item_id: number; user_id: number; body: string; via: CommentVia; at: string },
): Promise<CommentRow> {
  return trx
    .insertInto('comments')
    .values({
      item_id: row.item_id,
      user_id: row.user_id,
      body: row.body,
      via: row.via,
      created_at: row.at,
      last_modified: row.at,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteComment(trx: Trx, id: number): Promise<void> {
  await trx.deleteFrom('comments').where('id', '=', id).execute();
}

// Favorites: one per item and person.

export async function findFavoriteOf(db: Db, itemId: number, userId: number): Promise<FavoriteRow | undefined> {
  const [row] = await favoriteOf(db, itemId, userId);
  return row;
}

export async function insertFavorite(trx: Trx, itemId: number, userId: number, at: string): Promise<FavoriteRow> {
  return trx
    .insertInto('favorites')
    .values({ item_id: itemId, user_id: userId, created_at: at })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteFavorite(trx: Trx, id: number): Promise<void> {
  await trx.deleteFrom('favorites').where('id', '=', id).execute();
}

// Blocks: `item_id` blocks `blocked_id`.

export async function findBlockOfPair(db: Db, itemId: number, blockedId: number): Promise<BlockRow | undefined> {
  return db
    .selectFrom('blocks')
    .selectAll()
    .where('item_id', '=', itemId)
    .where('blocked_id', '=', blockedId)
    .executeTakeFirst();
}

export async function insertBlock(
  trx: Trx,
  row: { product_id: number; item_id: number; blocked_id: number; user_id: number; created_at: string },
): Promise<BlockRow> {
  return trx.insertInto('blocks').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Marks a block unblocked, or (`by` blocking again) in force again and theirs from now on. */
export async function setUnblocked(trx: Trx, id: number, unblocked: boolean, by?: number): Promise<BlockRow> {
  return trx
    .updateTable('blocks')
    .set({ unblocked: unblocked ? 1 : 0, ...(by === undefined ? {} : { user_id: by }) })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteBlock(trx: Trx, id: number): Promise<void> {
  await trx.deleteFrom('blocks').where('id', '=', id).execute();
}

/** The blocks an item makes (`item_id`) or suffers (`blocked_id`), oldest first. */

/**
 * Whether `from` blocks `to`, directly or through other items, by blocks in force: then `to`
 * blocking `from` would close a loop. The walk follows each item once (UNION, not UNION ALL).
 */
export async function blocksThrough(db: Db, from: number, to: number): Promise<boolean> {
  const { rows } = await sql<{ found: number }>`
    with recursive reached(id) as (
      select cast(${from} as integer)
      union
      select blocks.blocked_id from blocks join reached on blocks.item_id = reached.id where blocks.unblocked = 0
    )
    select 1 as found from reached where id = ${to} limit 1`.execute(db);
  return rows.length > 0;
}

// Annotations: notes tools leave on an item, oldest first.

export async function insertAnnotation(
  trx: Trx,
  row: { item_id: number; user_id: number; label: string; action: string; body: string; created_at: string },
): Promise<AnnotationRow> {
  return trx.insertInto('annotations').values(row).returningAll().executeTakeFirstOrThrow();
}

// Who hears about a comment.

/** The item's followers who are members of its product, but for `except` (the comment's author). */
export async function memberFollowers(db: Db, productId: number, itemId: number, except: number): Promise<number[]> {
  const rows = await db
    .selectFrom('followers')
    .innerJoin('memberships', (j) =>
      j.onRef('memberships.user_id', '=', 'followers.user_id').on('memberships.product_id', '=', productId),
    )
    .select('followers.user_id')
    .where('followers.item_id', '=', itemId)
    .where('followers.user_id', '!=', except)
    .orderBy('followers.user_id')
    .execute();
  return rows.map((r) => r.user_id);
}

export async function findCommentsByIds(db: Db, ids: number[]): Promise<CommentRow[]> {
  return ids.length === 0 ? [] : db.selectFrom('comments').selectAll().where('id', 'in', ids).execute();
}

export async function findBlocksByIds(db: Db, ids: number[]): Promise<BlockRow[]> {
  return ids.length === 0 ? [] : db.selectFrom('blocks').selectAll().where('id', 'in', ids).execute();
}

/** For each of the items, the items that block it by blocks in force: their ids and numbers. */
export async function blockersOf(
  db: Db,
  itemIds: number[],
): Promise<{ blocked_id: number; id: number; number: number }[]> {
  return inChunks(itemIds, (chunk) =>
    db
      .selectFrom('blocks')
      .innerJoin('items', 'items.id', 'blocks.item_id')
      .select(['blocks.blocked_id', 'items.id', 'items.number'])
      .where('blocks.blocked_id', 'in', chunk)
      .where('blocks.unblocked', '=', 0)
      .orderBy('items.number')
      .execute(),
  );
}
