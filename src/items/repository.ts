import { sql, type CompiledQuery } from 'kysely';
import { inChunks } from '../db/chunks.js';
import { findProfiles, type UserProfile } from '../users/index.js';
import type { Db } from '../db/connection.js';
import { foldedTag, foldTag } from '../db/tags.js';
import { dialectOf } from '../db/dialect.js';
import { prepared } from '../db/prepared.js';
import { namePageStatement, nameServerStatement } from '../db/statements.js';
import { leadingWithin } from '../http/answer-size.js';
import { LruCache } from '../lru.js';
import {
  columnsOf,
  ITEM_COLUMNS,
  storableId,
  type ItemRow,
  type ItemUpdate,
  type NewItem,
  type ProductRow,
} from '../db/schema.js';
import { SORT_STEP, type Order } from './model.js';

const itemByNumber = prepared((db, productId: number, number: number) =>
  db.selectFrom('items').select(ITEM_COLUMNS).where('product_id', '=', productId).where('number', '=', number),
);

export async function findItemByNumber(db: Db, productId: number, number: number): Promise<ItemRow | undefined> {
  if (!storableId(number)) return undefined;
  return (await itemByNumber(db, productId, number))[0];
}

export async function findItemsByNumbers(db: Db, productId: number, requested: number[]): Promise<ItemRow[]> {
  const numbers = requested.filter(storableId);
  if (numbers.length === 0) return [];
  return db
    .selectFrom('items')
    .select(ITEM_COLUMNS)
    .where('product_id', '=', productId)
    .where('number', 'in', numbers)
    .orderBy('number')
    .execute();
}

const itemsByIds = prepared((db, ids: number[]) => db.selectFrom('items').select(ITEM_COLUMNS).where('id', 'in', ids));

export async function findItemsByIds(db: Db, ids: number[]): Promise<ItemRow[]> {
  return inChunks([...new Set(ids)], (chunk) => itemsByIds(db, chunk));
}

/**
 * What an item's JSON is rendered from besides its relations' own rows: its id and version (see
 * entityTag), its parent, and the people it names (see KeptItems.keyOf). `least` is what its JSON
 * takes at least when read with a page (the bytes of its text).
 */
export interface ItemStamp {
  id: number;
  version: number;
  parent_id: number | null;
  created_by_id: number;
  assigned_to_id: number | null;
  least?: number;
}

const STAMP_COLUMNS = ['id', 'version', 'parent_id', 'created_by_id', 'assigned_to_id'] as const;

const stampsByIds = prepared((db, ids: number[]) =>
  db
    .selectFrom('items')
    .select(STAMP_COLUMNS)
    .select(sql<number>`octet_length(description) + octet_length(title)`.as('least'))
    .where('id', 'in', ids),
);

/** The stamps of the items of these ids, in no particular order. */
export async function findItemStamps(db: Db, ids: number[]): Promise<ItemStamp[]> {
  if (ids.length === 0) return [];
  return (await inChunks([...new Set(ids)], (chunk) => stampsByIds(db, chunk))).map((s) => ({
    ...s,
    least: Number(s.least),
  }));
}

/** The stamps of the items of these ids, in their order (ids of items that are gone left out). */
export async function findItemStampsInOrder(db: Db, ids: number[]): Promise<ItemStamp[]> {
  const byId = new Map((await findItemStamps(db, ids)).map((s) => [s.id, s]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * An item without its description, with what its text takes: `text_bytes`, the UTF-8 bytes of
 * its title and description (the least its JSON takes), and `stored_bytes`, those of its
 * description and rendered description (what a change of any column of its row rewrites). What
 * a deploy needs of the items it names: a deploy of 500 items of the longest descriptions would
 * otherwise read tens of MB of text it does not show.
 */
export type ItemHead = Omit<ItemRow, 'description'> & { text_bytes: number; stored_bytes: number };

const ITEM_HEAD_COLUMNS = ITEM_COLUMNS.filter(
  (c): c is Exclude<(typeof ITEM_COLUMNS)[number], 'description'> => c !== 'description',
);

function itemHeads(db: Db) {
  return db
    .selectFrom('items')
    .select(ITEM_HEAD_COLUMNS)
    .select(sql<number>`octet_length(description) + octet_length(title)`.as('text_bytes'))
    .select(sql<number>`octet_length(description) + coalesce(octet_length(description_html), 0)`.as('stored_bytes'));
}

const headOf = <R extends { text_bytes: number | string; stored_bytes: number | string }>(row: R) => ({
  ...row,
  text_bytes: Number(row.text_bytes),
  stored_bytes: Number(row.stored_bytes),
});

/** The heads of the product's items of these numbers, by number. */
export async function findItemHeadsByNumbers(db: Db, productId: number, requested: number[]): Promise<ItemHead[]> {
  const numbers = requested.filter(storableId);
  if (numbers.length === 0) return [];
  return (
    await itemHeads(db).where('product_id', '=', productId).where('number', 'in', numbers).orderBy('number').execute()
  ).map(headOf);
}

/** The heads of the items of these ids, in no particular order. */
export async function findItemHeadsByIds(db: Db, ids: number[]): Promise<ItemHead[]> {
  return (await inChunks([...new Set(ids)], (chunk) => itemHeads(db).where('id', 'in', chunk).execute())).map(headOf);
}

const newItem = prepared((db, item: NewItem) => db.insertInto('items').values(item).returning(ITEM_COLUMNS));

/**
 * The version a new item starts at (see entityTag; only its changes matter). SQLite stores 0 and 1
 * in no bytes and 2 to 127 in one: from 1, an item's first change (a deploy of it, say) would grow
 * its row by a byte, and a row that changes size is written anew whole, its description and that
 * description's HTML included (up to a few hundred KB), where a row that keeps its size has only
 * the page that changed written. A deploy of 500 such items would write 230 MB in one commit.
 */
const FIRST_VERSION = 2;

export async function insertItem(trx: Db, item: NewItem): Promise<ItemRow> {
  return (await newItem(trx, { version: FIRST_VERSION, ...item }))[0];
}

// Every change of an item's row is a new version of it (see entityTag).
const itemChanges = prepared((db, id: number, changes: ItemUpdate) =>
  db
    .updateTable('items')
    .set(changes)
    .set((eb) => ({ version: eb('version', '+', 1) }))
    .where('id', '=', id)
    .returning(ITEM_COLUMNS),
);
const deploymentsStatus = prepared((db, itemId: number, status: number) =>
  db.updateTable('item_deployments').set({ status }).where('item_id', '=', itemId),
);

export async function updateItemRow(trx: Db, id: number, changes: ItemUpdate): Promise<ItemRow> {
  // Its deployments carry its status (a `deployed_to` list reads them by status): same transaction.
  if (changes.status !== undefined) await deploymentsStatus(trx, id, changes.status);
  const [row] = await itemChanges(trx, id, changes);
  if (!row) throw new Error(`No item ${id} to change.`);
  return row;
}

const largestSort = prepared((db, productId: number, status: number) =>
  db
    .selectFrom('items')
    .select((eb) => eb.fn.max('sort').as('max'))
    .where('product_id', '=', productId)
    .where('status', '=', status),
);

/** The position just below the last item of a status. */
export async function bottomSort(trx: Db, productId: number, status: number): Promise<number> {
  const [row] = await largestSort(trx, productId, status);
  return row?.max === null || row?.max === undefined ? SORT_STEP : Number(row.max) + SORT_STEP;
}

/**
 * The sort of the nearest item of the status below a position (a larger sort; a move with
 * `before` lands between its reference and this one) or above it (a smaller sort; a move with
 * `after`), skipping the item being moved.
 */
export async function neighbourSort(
  trx: Db,
  productId: number,
  status: number,
  sort: number,
  direction: 'below' | 'above',
  skipId: number,
): Promise<number | undefined> {
  const row = await trx
    .selectFrom('items')
    .select('sort')
    .where('product_id', '=', productId)
    .where('status', '=', status)
    .where('id', '!=', skipId)
    .where('sort', direction === 'below' ? '>' : '<', sort)
    .orderBy('sort', direction === 'below' ? 'asc' : 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.sort) : undefined;
}

/** Items on each side of a used-up gap that a spread takes in first; four times as many each round after. */
const SPREAD_FIRST = 32;
/** The least room a spread leaves between two items: ten more moves into one gap before the next spread. */
const SPREAD_ROOM = 1024;

/** Up to `limit` items of a status from `sort` up (smaller sorts, `sort` included) or down, nearest first. */
const sortsBeside = (trx: Db, productId: number, status: number, sort: number, side: 'up' | 'down', limit: number) =>
  trx
    .selectFrom('items')
    .select(['id', 'sort'])
    .where('product_id', '=', productId)
    .where('status', '=', status)
    .where('sort', side === 'up' ? '<=' : '>', sort)
    .orderBy('sort', side === 'up' ? 'desc' : 'asc')
    .limit(limit)
    .execute();

/**
 * Spreads positions out around a used-up gap of a status, just below `sort`, keeping their order:
 * the fewest items on each side (SPREAD_FIRST, then four times as many each round) whose span
 * gives each at least SPREAD_ROOM; before the first item and after the last, positions are free.
 * Only those items move, each to a new version: renumbering the whole status, at a hundred
 * thousand items in it, held every write for seconds.
 */
export async function spreadAround(trx: Db, productId: number, status: number, sort: number): Promise<void> {
  for (let side = SPREAD_FIRST; ; side *= 4) {
    const up = await sortsBeside(trx, productId, status, sort, 'up', side + 1);
    const down = await sortsBeside(trx, productId, status, sort, 'down', side + 1);
    // The (side + 1)th item on a side bounds the window; without one, that side is open.
    const bound = (rows: { sort: number | string }[]) => (rows.length > side ? Number(rows.pop()!.sort) : undefined);
    const [above, below] = [bound(up), bound(down)];
    const window = [...up.reverse(), ...down];
    const n = window.length;
    const step = above !== undefined && below !== undefined ? Math.floor((below - above) / (n + 1)) : SORT_STEP;
    if (step < SPREAD_ROOM) continue;
    // Where a side is open, SORT_STEP apart from the bounded side (from the first item, with neither).
    const start = above !== undefined ? above + step : below !== undefined ? below - n * step : Number(window[0].sort);
    const moves = window.map((row, i) => ({ id: row.id, from: Number(row.sort), to: start + i * step }));
    // A status holds each position once (a unique index), at every statement: those moving down go
    // first, the lowest first, then those moving up, the highest first; each lands where nobody is.
    const movingDown = moves.filter((m) => m.to > m.from).reverse();
    const movingUp = moves.filter((m) => m.to < m.from);
    for (const move of [...movingDown, ...movingUp]) {
      // Each item shows its sort: a new position is a new version of it.
      await trx
        .updateTable('items')
        .set((eb) => ({ sort: move.to, version: eb('version', '+', 1) }))
        .where('id', '=', move.id)
        .execute();
    }
    return;
  }
}

const tagsOfItems = prepared((db, itemIds: number[]) =>
  db
    .selectFrom('item_tags')
    .select(['item_id', 'tag'])
    .where('item_id', 'in', itemIds)
    .orderBy('item_id')
    .orderBy('position'),
);

export async function findTags(db: Db, itemId: number): Promise<string[]> {
  return (await tagsOfItems(db, [itemId])).map((r) => r.tag);
}

export async function replaceTags(trx: Db, itemId: number, tags: string[]): Promise<void> {
  await trx.deleteFrom('item_tags').where('item_id', '=', itemId).execute();
  await insertTags(trx, itemId, tags);
}

/** The tags of an item that has none yet (a new one). */
export async function insertTags(trx: Db, itemId: number, tags: string[]): Promise<void> {
  if (tags.length) await tagRows(trx, itemId, tags);
}

const tagRows = prepared((db, itemId: number, tags: string[]) =>
  db.insertInto('item_tags').values(tags.map((tag, position) => ({ item_id: itemId, position, tag }))),
);

export async function addFollower(trx: Db, itemId: number, userId: number, at: string): Promise<void> {
  await addFollowers(trx, itemId, [userId], at);
}

/** Several followers in one statement; those who follow already are left as they were. */
export async function addFollowers(trx: Db, itemId: number, userIds: number[], at: string): Promise<void> {
  await followerRows(trx, itemId, [...new Set(userIds)], at);
}

const followerRows = prepared((db, itemId: number, userIds: number[], at: string) =>
  db
    .insertInto('followers')
    .values(userIds.map((userId) => ({ item_id: itemId, user_id: userId, created_at: at })))
    .onConflict((oc) => oc.columns(['item_id', 'user_id']).doNothing()),
);

export async function removeFollower(trx: Db, itemId: number, userId: number): Promise<void> {
  await trx.deleteFrom('followers').where('item_id', '=', itemId).where('user_id', '=', userId).execute();
}

const firstFollowers = prepared((db, itemId: number, limit: number) =>
  db
    .selectFrom('followers')
    .select('user_id')
    .where('item_id', '=', itemId)
    .orderBy('created_at')
    .orderBy('user_id')
    .limit(limit),
);

/** The first `limit` followers of an item, by when they started following. */
export async function listFollowerIds(db: Db, itemId: number, limit: number): Promise<number[]> {
  return (await firstFollowers(db, itemId, limit)).map((r) => r.user_id);
}

const following = prepared((db, itemId: number, userId: number) =>
  db.selectFrom('followers').select('user_id').where('item_id', '=', itemId).where('user_id', '=', userId),
);

export async function isFollower(db: Db, itemId: number, userId: number): Promise<boolean> {
  return (await following(db, itemId, userId)).length > 0;
}

/**
 * Something happened to the items (a deploy changed their `deployed_to`, someone follows one):
 * each is a new version, and `last_activity` moves to `at` unless it is later already.
 */
export async function touchActivity(trx: Db, itemIds: number[], at: string): Promise<void> {
  if (itemIds.length === 0) return;
  await trx
    .updateTable('items')
    .set((eb) => ({
      last_activity: eb.case().when('last_activity', '<', at).then(at).else(eb.ref('last_activity')).end(),
      version: eb('version', '+', 1),
    }))
    .where('id', 'in', itemIds)
    .execute();
}

/** What `counts` shows of an item, as its columns. */
export type CountColumn = 'comments_count' | 'favorites_count' | 'blockers_count' | 'blocking_count';

/**
 * Moves an item's counts by `delta` (a new comment: +1 comments): a new version of the item,
 * and with `at`, activity then, unless the item was active later already.
 */
export async function changeCounts(
  trx: Db,
  itemId: number,
  delta: Partial<Record<CountColumn, number>>,
  at?: string,
): Promise<void> {
  await trx
    .updateTable('items')
    .set((eb) => ({
      ...Object.fromEntries(Object.entries(delta).map(([column, by]) => [column, eb(column as CountColumn, '+', by)])),
      ...(at === undefined
        ? {}
        : { last_activity: eb.case().when('last_activity', '<', at).then(at).else(eb.ref('last_activity')).end() }),
      version: eb('version', '+', 1),
    }))
    .where('id', '=', itemId)
    .execute();
}

export interface ItemFilter {
  productId: number;
  statuses: number[];
  types?: string[];
  assignedTo?: number;
  createdBy?: number;
  tags?: string[];
  /** Deployed, and not reverted, to any of these environments. */
  deployedTo?: string[];
  /** Not deployed (or reverted) to any of these environments. */
  notDeployedTo?: string[];
  /**
   * Few of the items deployed to the `deployedTo` environments have the statuses: queries start
   * from them (see readFilter).
   */
  deployedToFew?: boolean;
  /** Only these items (the matches of a search: the board's query). */
  ids?: number[];
}

type OrderKey = {
  column: 'status' | 'sort' | 'number' | 'created_at' | 'last_modified' | 'last_activity' | 'favorites_count';
  dir: 'asc' | 'desc';
};

// Positions are unique within a product's status (items_position), so status and sort alone are a
// total order, and one an index walks without looking at a single row.
const PRIORITY: OrderKey[] = [
  { column: 'status', dir: 'asc' },
  { column: 'sort', dir: 'asc' },
];
const by = (column: OrderKey['column'], dir: OrderKey['dir']): OrderKey[] => [
  { column, dir },
  { column: 'number', dir },
];

/** The sort keys of each order_by; each is a total order (ending on number or sort), so pages are stable. */
const ORDER_KEYS: Record<Order, OrderKey[]> = {
  priority: PRIORITY,
  favorites: [{ column: 'favorites_count', dir: 'desc' }, ...PRIORITY],
  oldest: by('created_at', 'asc'),
  newest: by('created_at', 'desc'),
  recent: by('last_modified', 'desc'),
  stale: by('last_modified', 'asc'),
  active: by('last_activity', 'desc'),
  abandoned: by('last_activity', 'asc'),
};

/**
 * The statuses as the order at hand wants them. PostgreSQL (before 17) cannot walk an index in
 * (status, sort) order through an IN list and sorts the whole product instead, so for the priority
 * order adjacent statuses (the default backlog + in-progress) become one range. SQLite walks an IN
 * list in order, and a range there turns its planner away from the index of a time order.
 */
function statusesAsRange(db: Db, statuses: number[], order: Order | undefined): boolean {
  if (dialectOf(db) !== 'postgres' || (order !== undefined && ORDER_KEYS[order][0].column !== 'status')) return false;
  return statuses.length > 1 && statuses[statuses.length - 1] - statuses[0] === statuses.length - 1;
}

/**
 * The ids of the product's items deployed, and not reverted, to any of the environments now
 * (index item_deployments_current).
 */
function deployedNow(db: Db, productId: number, environments: string[]) {
  return db
    .selectFrom('item_deployments')
    .select('item_deployments.item_id')
    .where('item_deployments.product_id', '=', productId)
    .where('item_deployments.environment', 'in', environments)
    .where('item_deployments.reverted_at', 'is', null);
}

/**
 * The product's items in the statuses deployed, and not reverted, to any of the environments now
 * (index item_deployments_current_status).
 */
function deployedNowIn(db: Db, productId: number, environments: string[], statuses: number[]) {
  return deployedNow(db, productId, environments).where('item_deployments.status', 'in', statuses);
}

/**
 * Up to this many items in a list's statuses deployed to its `deployed_to` environments, the list
 * is read from them. SQLite reads rows fast enough that its index walk wins sooner (10,000
 * candidates: about 30 ms from the ids, 3 ms walking the index, at a million items).
 */
const FEW_DEPLOYED = { postgres: 20_000, sqlite: 2_000 };

/**
 * The filter as the list's queries will read it. Both databases plan `deployed_to` from the
 * order's index, testing each item against the environments' entries: cheap when the list's
 * items are often deployed there, but a walk over every item of the list's statuses when they
 * rarely are (open items in production, which holds the done ones): about a second at a million
 * on PostgreSQL, tens of milliseconds on SQLite, for every page. When the environments' entries
 * in the list's statuses are few (a count that stops at FEW_DEPLOYED + 1 says so), the queries
 * start from those items instead and read them alone, by id.
 */
export async function readFilter(db: Db, f: ItemFilter): Promise<ItemFilter> {
  const { deployedTo } = f;
  if (!deployedTo?.length) return f;
  const few = FEW_DEPLOYED[dialectOf(db)];
  const row = await db
    .selectFrom(
      deployedNowIn(db, f.productId, deployedTo, f.statuses)
        .distinct()
        .limit(few + 1)
        .as('d'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { ...f, deployedToFew: Number(row.n) <= few };
}

/**
 * The product's items, from the few ids of readFilter first on SQLite: its planner, without
 * statistics, prefers any index of items to the ids, and CROSS JOIN fixes the order of the tables.
 */
function itemsFrom(db: Db, f: ItemFilter) {
  const items = db.selectFrom('items');
  if (!f.deployedToFew || dialectOf(db) === 'postgres') return items;
  const ids = deployedNowIn(db, f.productId, f.deployedTo!, f.statuses).distinct().as('few');
  // The same rows and columns as items alone: items.<column> still names them.
  return db.selectFrom(ids).crossJoin('items').whereRef('items.id', '=', 'few.item_id') as unknown as typeof items;
}

/**
 * Values of a list's query that SQLite must see to plan it are written into its text: the
 * archived flag and the statuses (the conditions of partial indexes: items_listed_* and, for open
 * work, items_open_*, which a query can use only when it says the same), and the LIMIT (which its
 * planner reads). Bound, they make SQLite compile the statement again at every run, which cost a
 * list more than running it. They come from a few fixed values, so the statements stay few.
 */
const written = (value: number) => sql.lit(value);

function topLevelQuery(db: Db, f: ItemFilter, order?: Order) {
  let q = itemsFrom(db, f)
    .where('items.product_id', '=', f.productId)
    .where('items.archived', '=', written(0))
    .where('items.parent_id', 'is', null);
  const statuses = [...new Set(f.statuses)].sort((a, b) => a - b);
  if (statusesAsRange(db, statuses, order))
    q = q
      .where('items.status', '>=', written(statuses[0]))
      .where('items.status', '<=', written(statuses[statuses.length - 1]));
  else q = q.where('items.status', 'in', statuses.map(written));
  if (f.types?.length) q = q.where('items.type', 'in', f.types);
  if (f.assignedTo !== undefined) q = q.where('items.assigned_to_id', '=', f.assignedTo);
  if (f.createdBy !== undefined) q = q.where('items.created_by_id', '=', f.createdBy);
  if (f.ids) q = f.ids.length ? q.where('items.id', 'in', f.ids) : q.where(sql<boolean>`1 = 0`);
  const { deployedTo, notDeployedTo } = f;
  if (deployedTo?.length) {
    // The plan readFilter asks for: the few ids first, then their items by id. PostgreSQL computes
    // ARRAY(...) once; SQLite reads them first in itemsFrom.
    if (!f.deployedToFew) q = q.where('items.id', 'in', deployedNow(db, f.productId, deployedTo));
    else if (dialectOf(db) === 'postgres')
      q = q.where(
        sql<boolean>`${sql.ref('items.id')} = any(array(${deployedNowIn(db, f.productId, deployedTo, statuses)}))`,
      );
  }
  if (notDeployedTo?.length) {
    q = q.where((eb) =>
      eb.not(
        eb.exists(
          deployedNow(db, f.productId, notDeployedTo).where('item_deployments.item_id', '=', eb.ref('items.id')),
        ),
      ),
    );
  }
  for (const tag of f.tags ?? []) {
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('item_tags')
          .select(sql`1`.as('one'))
          .whereRef('item_tags.item_id', '=', 'items.id')
          .where(foldedTag(db, 'item_tags.tag'), '=', foldTag(tag)),
      ),
    );
  }
  return q;
}

function ordered<S extends ReturnType<typeof topLevelQuery>>(query: S, order: Order): S {
  let q = query;
  for (const k of ORDER_KEYS[order]) q = q.orderBy(`items.${k.column}`, k.dir) as S;
  return q;
}

/** Pages of more items than this read their ids and sizes first when their answer is bounded in bytes. */
const SIZED_PAGE = 100;

/**
 * One page of top-level items matching the filter. With `budget` (the bytes its answer may take), a
 * big page reads only the rows that may fit whole: first each item's id and the bytes of its text
 * (a lower bound of its JSON, known without reading the text), then the leading rows within the
 * budget, so that 500 long descriptions are not read to show 60.
 */
export async function listTopLevel(
  db: Db,
  f: ItemFilter,
  order: Order,
  offset: number,
  limit: number,
  budget?: number,
): Promise<ItemRow[]> {
  const page = ordered(topLevelQuery(db, f, order), order);
  if (budget === undefined || limit <= SIZED_PAGE)
    return page.select(columnsOf('items', ITEM_COLUMNS)).limit(written(limit)).offset(offset).execute();
  return (
    await rowsWithin(
      db,
      await page.select(['items.id', LEAST_BYTES]).limit(written(limit)).offset(offset).execute(),
      budget,
    )
  ).rows;
}

/** One page of top-level items matching the filter, as stamps with the least each one's JSON takes. */
export async function listTopLevelStamps(
  db: Db,
  f: ItemFilter,
  order: Order,
  offset: number,
  limit: number,
): Promise<ItemStamp[]> {
  const key = JSON.stringify([dialectOf(db), f, order, offset, limit]);
  let query = stampQueries.get(key);
  if (!query) {
    query = ordered(topLevelQuery(db, f, order), order)
      .select(columnsOf('items', STAMP_COLUMNS))
      .select(LEAST_BYTES)
      .limit(written(limit))
      .offset(offset)
      .compile();
    if (dialectOf(db) === 'postgres') namePageStatement(query.sql);
    stampQueries.set(key, query);
  }
  const { rows } = await db.executeQuery(query);
  return rows.map((row) => ({ ...row, least: Number(row.least) }));
}

/**
 * The page queries of the lists asked recently, compiled, by everything they are built from: a list
 * is asked again and again (a board, a client polling), and building one with Kysely took longer
 * than SQLite takes to run it. The same question is the same query, so nothing here can be stale.
 */
const stampQueries = new LruCache<string, CompiledQuery<ItemStamp & { least: number }>>(1000);

/** What an item's JSON takes at least, known without reading its text: the bytes of its text. */
const LEAST_BYTES = sql<number>`octet_length(items.description) + octet_length(items.title)`.as('least');

/**
 * The rows of the leading items, of those whose sizes a page read, that may fit in `budget`
 * bytes; and how many the page matched. An item archived or moved between the two reads is left
 * out; the exact fit comes later anyway.
 */
async function rowsWithin(
  db: Db,
  sizes: { id: number; least: number }[],
  budget: number,
): Promise<{ rows: ItemRow[]; matched: number }> {
  const ids = sizes
    .slice(
      0,
      leadingWithin(
        sizes.map((s) => Number(s.least)),
        budget,
      ),
    )
    .map((s) => s.id);
  const byId = new Map((await findItemsByIds(db, ids)).map((row) => [row.id, row]));
  return { rows: ids.flatMap((id) => byId.get(id) ?? []), matched: sizes.length };
}

/** How many top-level items match the filter. */
export async function countTopLevel(db: Db, f: ItemFilter): Promise<number> {
  const { notDeployedTo, ...rest } = f;
  // Counting the items not deployed somewhere probes each candidate (every completed item, say);
  // counting all candidates and those deployed there, from the environment's own index entries,
  // and subtracting reads far less.
  if (notDeployedTo?.length && !rest.deployedTo?.length) {
    const [all, deployed] = await Promise.all([
      countTopLevel(db, rest),
      countTopLevel(db, await readFilter(db, { ...rest, deployedTo: notDeployedTo })),
    ]);
    return all - deployed;
  }
  const row = await topLevelQuery(db, f)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many entries a list with sub-items has: the matching top-level items and their live sub-items. */
export async function countWithChildren(db: Db, f: ItemFilter): Promise<number> {
  const topLevel = await countTopLevel(db, f);
  // Only stories have sub-items: a list of other types has none to add.
  if (f.types?.length && !f.types.includes('story')) return topLevel;
  const children = await db
    .selectFrom('items as c')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('c.archived', '=', 0)
    .where('c.parent_id', 'in', topLevelQuery(db, { ...f, types: ['story'] }).select('items.id'))
    .executeTakeFirstOrThrow();
  return topLevel + Number(children.n);
}

/** Live (not archived) sub-items of the given stories by priority, in a query to narrow further. */
function liveChildren(db: Db, parentIds: number[]) {
  return db
    .selectFrom('items')
    .select(ITEM_COLUMNS)
    .where('parent_id', 'in', parentIds)
    .where('archived', '=', 0)
    .orderBy('parent_id')
    .orderBy('status')
    .orderBy('sort')
    .orderBy('number');
}

/** Live sub-items of the given stories, each story's by priority. */
export async function listChildren(db: Db, parentIds: number[]): Promise<ItemRow[]> {
  if (parentIds.length === 0) return [];
  return liveChildren(db, parentIds).execute();
}

/**
 * A product's live sub-items of one status assigned to a person, by priority: on a board filtered
 * by assignee they are cards of their own, since their stories may be somebody else's.
 */
export async function listAssignedChildren(
  db: Db,
  f: { productId: number; status: number; assignedTo: number; limit: number },
): Promise<ItemRow[]> {
  return db
    .selectFrom('items')
    .select(ITEM_COLUMNS)
    .where('product_id', '=', f.productId)
    .where('assigned_to_id', '=', f.assignedTo)
    .where('status', '=', f.status)
    .where('archived', '=', 0)
    .where('parent_id', 'is not', null)
    .orderBy('sort')
    .orderBy('number')
    .limit(f.limit)
    .execute();
}

const childrenPage = prepared((db, parentId: number, offset: number, limit: number) =>
  liveChildren(db, [parentId]).limit(limit).offset(offset),
);

/**
 * One page of a story's live sub-items, by priority, and how many it matched; with `budget`, a
 * big page reads the rows of only those that may fit in it, as listTopLevel does.
 */
export async function listChildrenPage(
  db: Db,
  parentId: number,
  offset: number,
  limit: number,
  budget?: number,
): Promise<{ rows: ItemRow[]; matched: number }> {
  if (budget === undefined || limit <= SIZED_PAGE) {
    const rows = await childrenPage(db, parentId, offset, limit);
    return { rows, matched: rows.length };
  }
  const sizes = await liveChildren(db, [parentId])
    .clearSelect()
    .select(['items.id', LEAST_BYTES])
    .limit(limit)
    .offset(offset)
    .execute();
  return rowsWithin(db, sizes, budget);
}

const liveChildCount = prepared((db, parentId: number) =>
  db
    .selectFrom('items')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('parent_id', '=', parentId)
    .where('archived', '=', 0),
);

/** How many live sub-items a story has. */
export async function countChildren(db: Db, parentId: number): Promise<number> {
  return Number((await liveChildCount(db, parentId))[0].n);
}

/** How many live sub-items each of the given items has (those with none are left out). */
export async function countLiveChildren(db: Db, ids: number[]): Promise<Map<number, number>> {
  // Only stories have sub-items, but asking for every id spares reading rows to learn their types.
  const counted = await db
    .selectFrom('items')
    .select(['parent_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('parent_id', 'in', ids)
    .where('archived', '=', 0)
    .groupBy('parent_id')
    .execute();
  return new Map(counted.map((r) => [r.parent_id!, Number(r.n)]));
}

/**
 * Which top-level entries of a chunk a page reaches: each with where in its group (the item and
 * its sub-items) the page starts, after `skip` entries still to pass over and with `room` left.
 */
function reachedEntries(tops: { id: number }[], childCounts: Map<number, number>, skip: number, room: number) {
  const reached: { id: number; from: number }[] = [];
  for (const top of tops) {
    const size = 1 + (childCounts.get(top.id) ?? 0);
    if (skip >= size) {
      skip -= size;
      continue;
    }
    reached.push({ id: top.id, from: skip });
    room -= size - skip;
    skip = 0;
    if (room <= 0) break;
  }
  return { reached, skip };
}

/**
 * One page of matching top-level items with each story followed by its live sub-items; offset
 * and limit count both kinds of entries. Walks the top-level items in order, a chunk at a time,
 * counting each story's sub-items, so a page costs what lies before it and no more (callers
 * bound the offset: MAX_CHILDREN_OFFSET). Chunks grow while the walk is still short of the
 * page, so a deep page takes a few steps rather than one per hundred items.
 */
export async function listWithChildren(
  db: Db,
  f: ItemFilter,
  order: Order,
  offset: number,
  limit: number,
): Promise<ItemRow[]> {
  const page: ItemRow[] = [];
  let skip = offset;
  for (
    let topOffset = 0, chunk = Math.max(100, limit);
    page.length < limit;
    topOffset += chunk, chunk = Math.min(chunk * 2, 2000)
  ) {
    // Only ids, which the order's index holds; whole rows are read for the entries the page shows.
    const tops = await ordered(topLevelQuery(db, f, order), order)
      .select('items.id')
      .limit(chunk)
      .offset(topOffset)
      .execute();
    if (tops.length === 0) break;
    const childCounts = await countLiveChildren(
      db,
      tops.map((t) => t.id),
    );
    const walk = reachedEntries(tops, childCounts, skip, limit - page.length);
    skip = walk.skip;
    const reached = walk.reached;
    const [rows, children] = await Promise.all([
      findItemsByIds(
        db,
        reached.map((r) => r.id),
      ),
      listChildren(
        db,
        reached.filter((r) => childCounts.has(r.id)).map((r) => r.id),
      ),
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const byParent = new Map<number, ItemRow[]>();
    for (const c of children) (byParent.get(c.parent_id!) ?? byParent.set(c.parent_id!, []).get(c.parent_id!)!).push(c);
    for (const { id, from } of reached) {
      page.push(...[byId.get(id)!, ...(byParent.get(id) ?? [])].slice(from, from + limit - page.length));
      if (page.length >= limit) break;
    }
    if (tops.length < chunk) break;
  }
  return page;
}

/** An item's latest deploy to one environment, reverted (by a rollback) or not. */
export interface Deployment {
  environment: string;
  version: string;
  deployed_at: string;
  deploy_id: number;
  reverted_at: string | null;
  reverted_by: number | null;
}

/** Everything an item's JSON embeds, fetched for a whole page of items at once. */
export interface ItemRelations {
  product: ProductRow;
  users: Map<number, UserProfile>;
  tags: Map<number, string[]>;
  /** Each item's latest deployments (at most the number asked for), latest first. */
  deployments: Map<number, Deployment[]>;
  /** How many environments each item was deployed to in all. */
  deploymentCounts: Map<number, number>;
  parents: Map<number, ItemRow>;
}

/**
 * The latest `shown` deployments of each item, latest first, and how many each has in all (on
 * SQLite; PostgreSQL reads them with the tags, see extrasOnPostgres). One index walk per item that
 * stops after `shown + 1` entries; only items that have more are counted.
 */
async function latestDeployments(
  db: Db,
  ids: number[],
  shown: number,
): Promise<{ deployments: Map<number, Deployment[]>; counts: Map<number, number> }> {
  const take = shown + 1;
  // One item (a fetch, a create, a page): its own page of deployments, the same index walk.
  const rows =
    ids.length === 1
      ? (await deploymentsPage(db, ids[0], 0, take)).map((d) => ({ item_id: ids[0], ...d }))
      : await inChunks(ids, async (chunk) => {
          // Through a correlated rowid list per item: SQLite has no LATERAL.
          const query = sql<
            Deployment & { item_id: number }
          >`select d.item_id, d.environment, d.version, d.deployed_at, d.deploy_id, d.reverted_at, d.reverted_by
              from items i
              join item_deployments d on d.rowid in (
                select x.rowid from item_deployments x where x.item_id = i.id order by x.deploy_id desc limit ${take}
              )
              where i.id in (${sql.join(chunk)})`;
          return (await query.execute(db)).rows;
        });
  const deployments = new Map<number, Deployment[]>();
  for (const { item_id, ...deployment } of rows) {
    (deployments.get(item_id) ?? deployments.set(item_id, []).get(item_id)!).push(deployment);
  }
  const counts = new Map<number, number>();
  const cut: number[] = [];
  for (const [itemId, list] of deployments) {
    list.sort((a, b) => b.deploy_id - a.deploy_id);
    if (list.length > shown) {
      list.length = shown;
      cut.push(itemId);
    } else {
      counts.set(itemId, list.length);
    }
  }
  for (const [itemId, n] of await countDeployments(db, cut)) counts.set(itemId, n);
  return { deployments, counts };
}

/** How many environments each item was deployed to. */
export async function countDeployments(db: Db, itemIds: number[]): Promise<Map<number, number>> {
  const rows = await inChunks(itemIds, (chunk) =>
    db
      .selectFrom('item_deployments')
      .select(['item_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('item_id', 'in', chunk)
      .groupBy('item_id')
      .execute(),
  );
  return new Map(rows.map((r) => [r.item_id, Number(r.n)]));
}

const deploymentsPage = prepared((db, itemId: number, offset: number, limit: number) =>
  db
    .selectFrom('item_deployments')
    .select(['environment', 'version', 'deployed_at', 'deploy_id', 'reverted_at', 'reverted_by'])
    .where('item_id', '=', itemId)
    .orderBy('deploy_id', 'desc')
    .limit(limit)
    .offset(offset),
);

/** One page of an item's deployments, latest first. */
export async function listDeployments(db: Db, itemId: number, offset: number, limit: number): Promise<Deployment[]> {
  return deploymentsPage(db, itemId, offset, limit);
}

/**
 * The items' latest deploy to each of the environments, by item id and then environment: what a
 * page of items shows per environment. One read of the (item, environment) key per pair, so a
 * page of 50 items and a dozen environments reads at most 600 rows, whatever else they went to.
 */
export async function deploymentsIn(
  db: Db,
  itemIds: number[],
  environments: string[],
): Promise<Map<number, Map<string, Deployment>>> {
  const result = new Map<number, Map<string, Deployment>>();
  if (environments.length === 0) return result;
  const rows = await inChunks(itemIds, (chunk) =>
    db
      .selectFrom('item_deployments')
      .select(['item_id', 'environment', 'version', 'deployed_at', 'deploy_id', 'reverted_at', 'reverted_by'])
      .where('item_id', 'in', chunk)
      .where('environment', 'in', environments)
      .execute(),
  );
  for (const { item_id, ...deployment } of rows)
    (result.get(item_id) ?? result.set(item_id, new Map()).get(item_id)!).set(deployment.environment, deployment);
  return result;
}

/**
 * What some items embed, read already: their deployments (latest first, at least as many as are
 * shown), how many each has in all, and maybe their tags.
 */
export interface KnownRelations {
  tags?: Map<number, string[]>;
  deployments: Map<number, Deployment[]>;
  counts: Map<number, number>;
}

/** What is known of one item's deployments: a first page of them (latest first) and how many there are. */
export const knownDeploymentsOf = (itemId: number, deployments: Deployment[], total: number): KnownRelations => ({
  deployments: new Map([[itemId, deployments]]),
  counts: new Map([[itemId, total]]),
});

/** Each item's tags in order, its latest deployments (latest first) and how many it has in all. */
type Extras = Required<KnownRelations>;

/**
 * What PostgreSQL reads of an item besides its row, as columns of a query over items `i`: tags
 * and the latest `take` deployments as JSON arrays, and their number in all. Every query to
 * PostgreSQL is a round trip and a statement for its backend, so this is one query where SQLite,
 * in-process, runs three small prepared ones.
 */
const extraColumns = (take: number) => [
  sql<
    string[]
  >`coalesce((select json_agg(t.tag order by t.position) from item_tags t where t.item_id = i.id), '[]'::json)`.as(
    'tags',
  ),
  sql<Deployment[]>`coalesce((select json_agg(d order by d.deploy_id desc) from (
      select x.environment, x.version, x.deployed_at, x.deploy_id, x.reverted_at, x.reverted_by
      from item_deployments x where x.item_id = i.id order by x.deploy_id desc limit ${take}
    ) d), '[]'::json)`.as('deployments'),
  sql<number>`(select count(*)::integer from item_deployments x where x.item_id = i.id)`.as('deployments_total'),
];

const itemWithExtras = prepared((db, productId: number, number: number, take: number) =>
  db
    .selectFrom('items as i')
    .select(columnsOf('i', ITEM_COLUMNS))
    .select(extraColumns(take))
    .where('i.product_id', '=', productId)
    .where('i.number', '=', number),
);

/** The extras of rows read with extraColumns, keyed by item. */
function extrasOf(
  rows: { id: number; tags: string[]; deployments: Deployment[]; deployments_total: number }[],
): Extras {
  const extras: Extras = { tags: new Map(), deployments: new Map(), counts: new Map() };
  for (const row of rows) {
    extras.tags.set(row.id, row.tags);
    if (row.deployments.length) extras.deployments.set(row.id, row.deployments);
    extras.counts.set(row.id, row.deployments_total);
  }
  return extras;
}

async function extrasOnPostgres(db: Db, ids: number[], shown: number): Promise<Extras> {
  const rows = await inChunks(ids, async (chunk) => {
    const query = db
      .selectFrom('items as i')
      .select(['i.id', ...extraColumns(shown)])
      .where(sql<boolean>`i.id = any(${chunk}::integer[])`)
      .compile();
    // One text for any number of items: prepared once per connection, not planned at every page.
    nameServerStatement(query.sql);
    return (await db.executeQuery(query)).rows;
  });
  return extrasOf(rows);
}

/**
 * An item of a product by number, to be shown with its latest `shown` deployments: on PostgreSQL
 * read with its tags and deployments in the same query (given as `known`, for loadRelations).
 */
export async function findItemToShow(
  db: Db,
  productId: number,
  number: number,
  shown: number,
): Promise<{ row: ItemRow; known?: KnownRelations } | undefined> {
  if (dialectOf(db) !== 'postgres') {
    const row = await findItemByNumber(db, productId, number);
    return row && { row };
  }
  if (!storableId(number)) return undefined;
  const [found] = await itemWithExtras(db, productId, number, shown);
  if (!found) return undefined;
  const { tags, deployments, deployments_total, ...row } = found;
  return { row, known: extrasOf([{ id: row.id, tags, deployments, deployments_total }]) };
}

/** The extras of items `ids`, those in `known` (tags and deployments alike) not read again. */
async function readExtras(db: Db, ids: number[], shown: number, known?: KnownRelations): Promise<Extras> {
  const lacking = (had?: Map<number, unknown>) => (had ? ids.filter((id) => !had.has(id)) : ids);
  let read: Extras;
  if (dialectOf(db) === 'postgres') {
    read = await extrasOnPostgres(db, [...new Set([...lacking(known?.tags), ...lacking(known?.counts)])], shown);
  } else {
    const [tags, deployments] = await Promise.all([
      inChunks(lacking(known?.tags), (chunk) => tagsOfItems(db, chunk)),
      latestDeployments(db, lacking(known?.counts), shown),
    ]);
    const tagMap = new Map<number, string[]>();
    for (const t of tags) (tagMap.get(t.item_id) ?? tagMap.set(t.item_id, []).get(t.item_id)!).push(t.tag);
    read = { tags: tagMap, ...deployments };
  }
  if (!known) return read;
  return {
    tags: new Map([...read.tags, ...(known.tags ?? [])]),
    deployments: new Map([...read.deployments, ...known.deployments]),
    counts: new Map([...read.counts, ...known.counts]),
  };
}

/**
 * Loads what a page of items embeds, each item's `deployed_to` cut to its latest `shown`
 * environments (parents included); what `known` holds of an item is not read again.
 */
export async function loadRelations(
  db: Db,
  product: ProductRow,
  rows: ItemRow[],
  shown: number,
  known?: KnownRelations,
): Promise<ItemRelations> {
  // A list with sub-items usually holds their parents too.
  const listed = new Map(rows.map((r) => [r.id, r]));
  const parentIds = [...new Set(rows.map((r) => r.parent_id).filter((id): id is number => id !== null))];
  const missing = parentIds.filter((id) => !listed.has(id));
  const parents = [
    ...parentIds.filter((id) => listed.has(id)).map((id) => listed.get(id)!),
    ...(await findItemsByIds(db, missing)),
  ];
  const all = [...rows, ...parents];
  const ids = [...new Set(all.map((r) => r.id))];
  const userIds = [
    ...new Set(all.flatMap((r) => (r.assigned_to_id ? [r.created_by_id, r.assigned_to_id] : [r.created_by_id]))),
  ];
  const [users, extras] = await Promise.all([findProfiles(db, userIds), readExtras(db, ids, shown, known)]);
  return {
    product,
    users,
    tags: extras.tags,
    deployments: extras.deployments,
    deploymentCounts: extras.counts,
    parents: new Map(parents.map((p) => [p.id, p])),
  };
}

/** The description as rendered when it was written: null for a row from before that is not filled yet. */
export async function findDescriptionHtml(db: Db, itemId: number): Promise<string | null> {
  const row = await db.selectFrom('items').select('description_html').where('id', '=', itemId).executeTakeFirst();
  return row?.description_html ?? null;
}

/** Items with a description and no HTML for it yet, from the partial index of just those, by id. */
export async function findUnrenderedDescriptions(
  db: Db,
  limit: number,
): Promise<{ id: number; description: string }[]> {
  return db
    .selectFrom('items')
    .select(['id', 'description'])
    .where('description_html', 'is', null)
    .where('description', '<>', '')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Keeps the HTML of a description, unless the description changed since it was read (its writer rendered it then). */
export async function setDescriptionHtml(trx: Db, itemId: number, description: string, html: string): Promise<void> {
  await trx
    .updateTable('items')
    .set({ description_html: html })
    .where('id', '=', itemId)
    .where('description_html', 'is', null)
    .where('description', '=', description)
    .execute();
}
