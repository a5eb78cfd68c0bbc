import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import { inChunks } from '../db/chunks.js';
import { prepared } from '../db/prepared.js';
import type { Db } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import {
  columnsOf,
  DEPLOY_COLUMNS,
  ITEM_COLUMNS,
  type DeployRow,
  type DeploysTable,
  type ItemDeploymentsTable,
  type ItemRow,
} from '../db/schema.js';

export async function findDeployByKey(
  db: Db,
  productId: number,
  userId: number,
  key: string,
): Promise<DeployRow | undefined> {
  return db
    .selectFrom('deploys')
    .select(DEPLOY_COLUMNS)
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function findDeploysByIds(db: Db, ids: number[]): Promise<DeployRow[]> {
  return inChunks([...new Set(ids)], (chunk) =>
    db.selectFrom('deploys').select(DEPLOY_COLUMNS).where('id', 'in', chunk).execute(),
  );
}

export async function insertDeploy(trx: Db, deploy: Insertable<DeploysTable>): Promise<DeployRow> {
  return trx.insertInto('deploys').values(deploy).returning(DEPLOY_COLUMNS).executeTakeFirstOrThrow();
}

/**
 * Links the items to an ordinary deploy and makes it their latest deploy to its environment, in
 * effect again where a rollback had reverted the entry.
 */
export async function recordDeployedItems(
  trx: Db,
  deploy: DeployRow,
  items: Pick<ItemRow, 'id' | 'status'>[],
): Promise<void> {
  await trx
    .insertInto('deploy_items')
    .values(items.map((item) => ({ deploy_id: deploy.id, item_id: item.id })))
    .execute();
  await trx
    .insertInto('item_deployments')
    .values(
      items.map((item) => ({
        item_id: item.id,
        environment: deploy.environment,
        deploy_id: deploy.id,
        version: deploy.version,
        deployed_at: deploy.created_at,
        product_id: deploy.product_id,
        // Read after the product's lock, which every change of an item's status takes first.
        status: item.status,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['item_id', 'environment']).doUpdateSet((eb) => ({
        deploy_id: eb.ref('excluded.deploy_id'),
        version: eb.ref('excluded.version'),
        deployed_at: eb.ref('excluded.deployed_at'),
        status: eb.ref('excluded.status'),
        reverted_at: null,
        reverted_by: null,
      })),
    )
    .execute();
}

/** The product's deploys to the environment that no rollback undid. */
function inEffect(db: Db, productId: number, environment: string) {
  return db
    .selectFrom('deploys')
    .select(DEPLOY_COLUMNS)
    .where('product_id', '=', productId)
    .where('environment', '=', environment)
    .where('reverted_at', 'is', null);
}

/**
 * The deploy a rollback to `version` goes back to: the latest to the environment with that version
 * that no rollback undid.
 */
export async function findRollbackTarget(
  db: Db,
  productId: number,
  environment: string,
  version: string,
): Promise<DeployRow | undefined> {
  return inEffect(db, productId, environment)
    .where('version', '=', version)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The deploys to the environment after `afterId` that no rollback undid yet, oldest first. */
export async function deploysInEffectAfter(
  db: Db,
  productId: number,
  environment: string,
  afterId: number,
): Promise<DeployRow[]> {
  return inEffect(db, productId, environment).where('id', '>', afterId).orderBy('id').execute();
}

/** The distinct ids of the items of the given deploys. */
export async function itemIdsOfDeploys(db: Db, deployIds: number[]): Promise<number[]> {
  const rows = await inChunks(deployIds, (chunk) =>
    db.selectFrom('deploy_items').select('item_id').distinct().where('deploy_id', 'in', chunk).execute(),
  );
  return [...new Set(rows.map((r) => r.item_id))];
}

/**
 * For each of the items, the latest ordinary deploy to the environment, at or before deploy
 * `atOrBefore`, that had the item and that no rollback undid: what the item's entry for the
 * environment was as that deploy left it. Items without one are left out.
 */
export async function latestDeploysOfItems(
  db: Db,
  productId: number,
  environment: string,
  atOrBefore: number,
  itemIds: number[],
): Promise<Map<number, DeployRow>> {
  const latest = await inChunks(itemIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('deploys', 'deploys.id', 'deploy_items.deploy_id')
      .select(['deploy_items.item_id', (eb) => eb.fn.max('deploys.id').as('deploy_id')])
      .where('deploy_items.item_id', 'in', chunk)
      .where('deploys.product_id', '=', productId)
      .where('deploys.environment', '=', environment)
      .where('deploys.id', '<=', atOrBefore)
      .where('deploys.rollback', '=', 0)
      .where('deploys.reverted_at', 'is', null)
      .groupBy('deploy_items.item_id')
      .execute(),
  );
  const deploys = new Map(
    (
      await findDeploysByIds(
        db,
        latest.map((r) => Number(r.deploy_id)),
      )
    ).map((d) => [d.id, d]),
  );
  return new Map(latest.map((r) => [r.item_id, deploys.get(Number(r.deploy_id))!]));
}

/** The items' entries for one environment (their latest deploy there), by item id. */
export async function entriesOf(
  db: Db,
  environment: string,
  itemIds: number[],
): Promise<Map<number, Selectable<ItemDeploymentsTable>>> {
  const rows = await inChunks(itemIds, (chunk) =>
    db
      .selectFrom('item_deployments')
      .selectAll()
      .where('environment', '=', environment)
      .where('item_id', 'in', chunk)
      .execute(),
  );
  return new Map(rows.map((r) => [r.item_id, r]));
}

/** What a rollback changes for one item: its entry goes back to `restoredTo`, or (null) is reverted. */
export interface RollbackChange {
  itemId: number;
  restoredTo: DeployRow | null;
}

/**
 * Writes a rollback: the deploys it undoes are marked reverted by it, each changed item's entry
 * for the environment goes back to its earlier deploy or is marked reverted, and the changed items
 * become the rollback's own, each with the deploy it went back to.
 */
export async function recordRollback(
  trx: Db,
  rollback: DeployRow,
  undone: number[],
  changes: RollbackChange[],
): Promise<void> {
  const reverted = { reverted_at: rollback.created_at, reverted_by: rollback.id };
  await inChunks(undone, (chunk) => trx.updateTable('deploys').set(reverted).where('id', 'in', chunk).execute());
  const byDeploy = new Map<DeployRow | null, number[]>();
  for (const { itemId, restoredTo } of changes)
    (byDeploy.get(restoredTo) ?? byDeploy.set(restoredTo, []).get(restoredTo)!).push(itemId);
  for (const [deploy, itemIds] of byDeploy) {
    const entry =
      deploy === null
        ? reverted
        : {
            deploy_id: deploy.id,
            version: deploy.version,
            deployed_at: deploy.created_at,
            reverted_at: null,
            reverted_by: null,
          };
    await inChunks(itemIds, (chunk) =>
      trx
        .updateTable('item_deployments')
        .set(entry)
        .where('environment', '=', rollback.environment)
        .where('item_id', 'in', chunk)
        .execute(),
    );
  }
  if (changes.length === 0) return;
  await trx
    .insertInto('deploy_items')
    .values(
      changes.map((c) => ({ deploy_id: rollback.id, item_id: c.itemId, restored_deploy_id: c.restoredTo?.id ?? null })),
    )
    .execute();
}

/** For each rollback, the deploy each of its items went back to (an item absent: its entry was reverted). */
export async function restoredDeploysOf(db: Db, rollbackIds: number[]): Promise<Map<number, Map<number, DeployRow>>> {
  const rows = await inChunks(rollbackIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('deploys', 'deploys.id', 'deploy_items.restored_deploy_id')
      .select(columnsOf('deploys', DEPLOY_COLUMNS))
      .select(['deploy_items.deploy_id as rollback_id', 'deploy_items.item_id'])
      .where('deploy_items.deploy_id', 'in', chunk)
      .execute(),
  );
  const restored = new Map<number, Map<number, DeployRow>>();
  for (const { rollback_id, item_id, ...deploy } of rows)
    (restored.get(rollback_id) ?? restored.set(rollback_id, new Map()).get(rollback_id)!).set(item_id, deploy);
  return restored;
}

/**
 * Who is told about a deploy: each member of the product following any of the items, with the
 * ids of the items they follow. One row per member rather than one per (member, item) pair: a
 * deploy of 50 items that 20 people follow reads 20 rows, not 1,000.
 */
export async function followingMembers(db: Db, productId: number, itemIds: number[]): Promise<Map<number, number[]>> {
  // A JSON array of the item ids: parsed by pg, a string from SQLite.
  const ids: RawBuilder<number[] | string> =
    dialectOf(db) === 'postgres' ? sql`json_agg(followers.item_id)` : sql`json_group_array(followers.item_id)`;
  const rows = await inChunks(itemIds, (chunk) =>
    db
      .selectFrom('followers')
      .innerJoin('memberships', (j) =>
        j.onRef('memberships.user_id', '=', 'followers.user_id').on('memberships.product_id', '=', productId),
      )
      .select(['followers.user_id', ids.as('item_ids')])
      .where('followers.item_id', 'in', chunk)
      .groupBy('followers.user_id')
      .execute(),
  );
  const following = new Map<number, number[]>();
  for (const row of rows) {
    const mine = typeof row.item_ids === 'string' ? (JSON.parse(row.item_ids) as number[]) : row.item_ids;
    following.set(row.user_id, [...(following.get(row.user_id) ?? []), ...mine]);
  }
  return following;
}

export interface DeployFilter {
  environment?: string;
  newest: boolean;
}

function deploysOf(db: Db, productId: number, filter: DeployFilter) {
  let q = db.selectFrom('deploys').where('product_id', '=', productId);
  if (filter.environment !== undefined) q = q.where('environment', '=', filter.environment);
  return q;
}

/** One page of a product's deploys (optionally of one environment), oldest or newest first. */
export async function listDeploys(
  db: Db,
  productId: number,
  filter: DeployFilter,
  offset: number,
  limit: number,
): Promise<DeployRow[]> {
  return deploysOf(db, productId, filter)
    .select(DEPLOY_COLUMNS)
    .orderBy('id', filter.newest ? 'desc' : 'asc')
    .limit(limit)
    .offset(offset)
    .execute();
}

/**
 * A deploy of a page of deploys.json as the page is read: which one, and what of it may change
 * (its deployer's profile, a later rollback); the rest is read only for a deploy whose JSON this
 * instance does not keep (deploys/listed.ts). `item_count` is null while no summaries are kept.
 */
export type DeployOfPage = Pick<DeployRow, 'id' | 'user_id' | 'reverted_at' | 'reverted_by'> & {
  item_count: number | null;
};

/** A deploy of a page of deploys.json whole, with its items' kept summaries. */
export type ListedDeployRow = DeployRow & { item_summaries: Buffer; item_count: number };

/** Deploys whole, with their items' kept summaries (null, and a null count, while none are kept). */
export async function findListedDeploys(
  db: Db,
  ids: number[],
): Promise<(DeployRow & { item_summaries: Buffer | null; item_count: number | null })[]> {
  return inChunks(ids, (chunk) =>
    db
      .selectFrom('deploys')
      .select([...DEPLOY_COLUMNS, 'item_summaries', 'item_count'])
      .where('id', 'in', chunk)
      .execute(),
  );
}

/**
 * A page of deploys in two steps: the ids, from the (product, environment, id) or (product, id)
 * index alone, then only the rows of those ids, so that the deploys skipped by a deep offset are
 * never read (nor their kept summaries, kilobytes each); of those, only what may change.
 */
function deployPage(db: Db, ids: DeployIds, direction: 'asc' | 'desc', offset: number, limit: number) {
  return db
    .selectFrom('deploys')
    .select(['id', 'user_id', 'reverted_at', 'reverted_by', 'item_count'])
    .where('id', 'in', ids.orderBy('id', direction).limit(limit).offset(offset))
    .orderBy('id', direction);
}
type DeployIds = ReturnType<typeof deployIdsOf>;
const deployIdsOf = (db: Db, productId: number) =>
  db.selectFrom('deploys').select('id').where('product_id', '=', productId);

const pageOfAll = (direction: 'asc' | 'desc') =>
  prepared((db, productId: number, offset: number, limit: number) =>
    deployPage(db, deployIdsOf(db, productId), direction, offset, limit),
  );
const pageIn = (direction: 'asc' | 'desc') =>
  prepared((db, productId: number, environment: string, offset: number, limit: number) =>
    deployPage(db, deployIdsOf(db, productId).where('environment', '=', environment), direction, offset, limit),
  );
const deployPages = { oldest: pageOfAll('asc'), newest: pageOfAll('desc') };
const deployPagesIn = { oldest: pageIn('asc'), newest: pageIn('desc') };

/** One page of a product's deploys (optionally of one environment): which, and what of them may change. */
export async function listDeployPage(
  db: Db,
  productId: number,
  filter: DeployFilter,
  offset: number,
  limit: number,
): Promise<DeployOfPage[]> {
  const order = filter.newest ? 'newest' : 'oldest';
  return filter.environment === undefined
    ? deployPages[order](db, productId, offset, limit)
    : deployPagesIn[order](db, productId, filter.environment, offset, limit);
}

const deployCounts = {
  all: prepared((db, productId: number) =>
    db
      .selectFrom('deploys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('product_id', '=', productId),
  ),
  in: prepared((db, productId: number, environment: string) =>
    db
      .selectFrom('deploys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('product_id', '=', productId)
      .where('environment', '=', environment),
  ),
};

/** How many deploys of the product (to the environment) there are, from the index alone. */
export async function countDeployPage(db: Db, productId: number, filter: DeployFilter): Promise<number> {
  const rows =
    filter.environment === undefined
      ? await deployCounts.all(db, productId)
      : await deployCounts.in(db, productId, filter.environment);
  return Number(rows[0].n);
}

/** What a deploy's kept summary is made of: its items, by number. */
export async function summaryColumnsOfDeploys(
  db: Db,
  deployIds: number[],
): Promise<Map<number, Pick<ItemRow, 'product_id' | 'number' | 'title' | 'type' | 'status'>[]>> {
  const result = new Map<number, Pick<ItemRow, 'product_id' | 'number' | 'title' | 'type' | 'status'>[]>(
    deployIds.map((id) => [id, []]),
  );
  const rows = await inChunks(deployIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('items', 'items.id', 'deploy_items.item_id')
      .select(['deploy_items.deploy_id', 'items.product_id', 'items.number', 'items.title', 'items.type'])
      .select('items.status')
      .where('deploy_items.deploy_id', 'in', chunk)
      .orderBy('items.number')
      .execute(),
  );
  for (const { deploy_id, ...item } of rows) result.get(deploy_id)!.push(item);
  return result;
}

/**
 * Keeps the summaries of deploys that had none, unless another request kept them first, and
 * answers what is kept now for each: what every later page shows.
 */
export async function keepSummaries(
  trx: Db,
  kept: { id: number; summaries: Buffer; count: number }[],
): Promise<Map<number, { item_summaries: Buffer; item_count: number }>> {
  for (const k of kept)
    await trx
      .updateTable('deploys')
      .set({ item_summaries: k.summaries, item_count: k.count })
      .where('id', '=', k.id)
      .where('item_summaries', 'is', null)
      .execute();
  const rows = await inChunks(
    kept.map((k) => k.id),
    (chunk) =>
      trx.selectFrom('deploys').select(['id', 'item_summaries', 'item_count']).where('id', 'in', chunk).execute(),
  );
  return new Map(rows.map((r) => [r.id, { item_summaries: r.item_summaries!, item_count: r.item_count! }]));
}

export async function countDeploys(db: Db, productId: number, filter: DeployFilter): Promise<number> {
  const row = await deploysOf(db, productId, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A deploy that had an item: an ordinary deploy of it, or a rollback that changed its entry. */
export type ItemDeployRow = DeployRow & {
  /** On a rollback: the deploy the item's entry went back to (null: the entry was reverted). */
  restored_deploy_id: number | null;
  restored_version: string | null;
};

/** The deploys of the product that had the item, through the link table's (item, deploy) index. */
function deploysOfItem(db: Db, productId: number, itemId: number) {
  return db
    .selectFrom('deploy_items')
    .innerJoin('deploys', 'deploys.id', 'deploy_items.deploy_id')
    .where('deploy_items.item_id', '=', itemId)
    .where('deploys.product_id', '=', productId);
}

const itemDeploysPage = (direction: 'asc' | 'desc') =>
  prepared((db, productId: number, itemId: number, offset: number, limit: number) =>
    deploysOfItem(db, productId, itemId)
      .leftJoin('deploys as restored', 'restored.id', 'deploy_items.restored_deploy_id')
      .select(columnsOf('deploys', DEPLOY_COLUMNS))
      .select(['deploy_items.restored_deploy_id', 'restored.version as restored_version'])
      // The link table's deploy id (the same as the deploy's), so that its index gives the order.
      .orderBy('deploy_items.deploy_id', direction)
      .limit(limit)
      .offset(offset),
  );
const itemDeploysInOrder = itemDeploysPage('asc');
const itemDeploysNewestFirst = itemDeploysPage('desc');

/** One page of the deploys that had the item, in the order they were recorded or newest first. */
export async function listItemDeploys(
  db: Db,
  productId: number,
  itemId: number,
  newest: boolean,
  offset: number,
  limit: number,
): Promise<ItemDeployRow[]> {
  return (newest ? itemDeploysNewestFirst : itemDeploysInOrder)(db, productId, itemId, offset, limit);
}

const itemDeployCount = prepared((db, productId: number, itemId: number) =>
  deploysOfItem(db, productId, itemId).select((eb) => eb.fn.countAll<number>().as('n')),
);

export async function countItemDeploys(db: Db, productId: number, itemId: number): Promise<number> {
  return Number((await itemDeployCount(db, productId, itemId))[0].n);
}

/** How many items each deploy holds, from the link table's key alone. */
export async function countDeployItems(db: Db, deployIds: number[]): Promise<Map<number, number>> {
  const rows = await inChunks(deployIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .select(['deploy_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('deploy_id', 'in', chunk)
      .groupBy('deploy_id')
      .execute(),
  );
  return new Map(rows.map((r) => [r.deploy_id, Number(r.n)]));
}

/** The items of each deploy, by deploy id, in ascending number order. */
/** What a deploy's item takes at least in JSON (its text's bytes), before its row is read. */
export interface ItemSize {
  id: number;
  number: number;
  least: number;
}

/**
 * The items of each deploy by number, as ids with the length of their text only: enough to choose
 * which fit in an answer without reading the text of those that do not (itemsOfDeploys `only`).
 */
export async function itemSizesOfDeploys(db: Db, deployIds: number[]): Promise<Map<number, ItemSize[]>> {
  const result = new Map<number, ItemSize[]>(deployIds.map((id) => [id, []]));
  const rows = await inChunks(deployIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('items', 'items.id', 'deploy_items.item_id')
      .select(['deploy_items.deploy_id', 'items.id', 'items.number'])
      .select(sql<number>`octet_length(items.description) + octet_length(items.title)`.as('least'))
      .where('deploy_items.deploy_id', 'in', chunk)
      .orderBy('items.number')
      .execute(),
  );
  for (const { deploy_id, id, number, least } of rows)
    result.get(deploy_id)!.push({ id, number, least: Number(least) });
  return result;
}

/** The items of each deploy by number; with `only`, just those of these ids. */
export async function itemsOfDeploys(db: Db, deployIds: number[], only?: number[]): Promise<Map<number, ItemRow[]>> {
  const result = new Map<number, ItemRow[]>(deployIds.map((id) => [id, []]));
  const rows = await inChunks(deployIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('items', 'items.id', 'deploy_items.item_id')
      .select(columnsOf('items', ITEM_COLUMNS))
      .select('deploy_items.deploy_id')
      .where('deploy_items.deploy_id', 'in', chunk)
      .$if(only !== undefined, (q) => q.where('items.id', 'in', only!.length ? only! : [0]))
      .orderBy('items.number')
      .execute(),
  );
  for (const { deploy_id, ...item } of rows) result.get(deploy_id)!.push(item);
  return result;
}

/**
 * The notes of deploys as rendered when they were written, by deploy id: null for one from before
 * that is not filled yet.
 */
export async function findNotesHtml(db: Db, deployIds: number[]): Promise<Map<number, string | null>> {
  const rows = await inChunks([...new Set(deployIds)], (chunk) =>
    db.selectFrom('deploys').select(['id', 'notes_html']).where('id', 'in', chunk).execute(),
  );
  return new Map(rows.map((r) => [r.id, r.notes_html]));
}

/** Deploys with notes and no HTML for them yet, from the partial index of just those, by id. */
export async function findUnrenderedNotes(db: Db, limit: number): Promise<{ id: number; notes: string }[]> {
  return db
    .selectFrom('deploys')
    .select(['id', 'notes'])
    .where('notes_html', 'is', null)
    .where('notes', '<>', '')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Keeps the HTML of a deploy's notes (which never change) unless some other fill kept it first. */
export async function setNotesHtml(trx: Db, deployId: number, html: string): Promise<void> {
  await trx
    .updateTable('deploys')
    .set({ notes_html: html })
    .where('id', '=', deployId)
    .where('notes_html', 'is', null)
    .execute();
}
