import { sql, type RawBuilder } from 'kysely';
import { inChunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import type { DeployRow, ItemRow } from '../db/schema.js';

export async function findDeployByKey(db: Db, productId: number, userId: number, key: string): Promise<DeployRow | undefined> {
  return db
    .selectFrom('deploys')
    .selectAll()
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function findDeploysByIds(db: Db, ids: number[]): Promise<DeployRow[]> {
  return inChunks([...new Set(ids)], (chunk) => db.selectFrom('deploys').selectAll().where('id', 'in', chunk).execute());
}

export async function insertDeploy(
  trx: Db,
  deploy: Omit<DeployRow, 'id'>,
): Promise<DeployRow> {
  return trx.insertInto('deploys').values(deploy).returningAll().executeTakeFirstOrThrow();
}

/** Links the items to the deploy and makes it their latest deploy to its environment. */
export async function recordDeployedItems(trx: Db, deploy: DeployRow, itemIds: number[]): Promise<void> {
  await trx
    .insertInto('deploy_items')
    .values(itemIds.map((item_id) => ({ deploy_id: deploy.id, item_id })))
    .execute();
  await trx
    .insertInto('item_deployments')
    .values(
      itemIds.map((item_id) => ({
        item_id,
        environment: deploy.environment,
        deploy_id: deploy.id,
        version: deploy.version,
        deployed_at: deploy.created_at,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['item_id', 'environment']).doUpdateSet((eb) => ({
        deploy_id: eb.ref('excluded.deploy_id'),
        version: eb.ref('excluded.version'),
        deployed_at: eb.ref('excluded.deployed_at'),
      })),
    )
    .execute();
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
      .innerJoin('memberships', (j) => j.onRef('memberships.user_id', '=', 'followers.user_id').on('memberships.product_id', '=', productId))
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
export async function listDeploys(db: Db, productId: number, filter: DeployFilter, offset: number, limit: number): Promise<DeployRow[]> {
  return deploysOf(db, productId, filter)
    .selectAll()
    .orderBy('id', filter.newest ? 'desc' : 'asc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countDeploys(db: Db, productId: number, filter: DeployFilter): Promise<number> {
  const row = await deploysOf(db, productId, filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
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
export async function itemsOfDeploys(db: Db, deployIds: number[]): Promise<Map<number, ItemRow[]>> {
  const result = new Map<number, ItemRow[]>(deployIds.map((id) => [id, []]));
  const rows = await inChunks(deployIds, (chunk) =>
    db
      .selectFrom('deploy_items')
      .innerJoin('items', 'items.id', 'deploy_items.item_id')
      .selectAll('items')
      .select('deploy_items.deploy_id')
      .where('deploy_items.deploy_id', 'in', chunk)
      .orderBy('items.number')
      .execute(),
  );
  for (const { deploy_id, ...item } of rows) result.get(deploy_id)!.push(item);
  return result;
}
