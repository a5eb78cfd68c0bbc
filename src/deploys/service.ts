import crypto from 'node:crypto';
import type { Db, Trx } from '../db/connection.js';
import type { DeployRow, ItemRow, UserRow } from '../db/schema.js';
import { BadRequestError, UnprocessableError } from '../errors.js';
import { findItemsByNumbers, touchActivity } from '../items/index.js';
import { queueDeployNotifications } from '../mail/index.js';
import { wantDeployMail } from '../notifications/index.js';
import { lockProduct } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { formatTimestamp } from '../time.js';
import { findUsersByIds } from '../users/index.js';
import { announceDeploy } from './events.js';
import { DEPLOY_PAGE_ITEMS, type DeployInput } from './input.js';
import {
  countDeployItems,
  countDeploys,
  findDeployByKey,
  findDeploysByIds,
  followingMembers,
  insertDeploy,
  listDeploys,
  recordDeployedItems,
  type DeployFilter,
} from './repository.js';

function requestHash(input: DeployInput): string {
  return crypto.createHash('sha256').update(JSON.stringify(input)).digest('hex');
}

export type RecordedDeploy = { deploy: DeployRow; created: false } | { deploy: DeployRow; created: true; items: ItemRow[] };

/**
 * Records a deploy in the caller's transaction: the deploy, its items, their latest deploy per
 * environment, and one outbox message per following member (the deployer excluded) listing that
 * member's items. With an idempotency key, a repeat returns the first deploy and queues nothing;
 * the same key with other parameters is 422. Throws 400 when no number names an item. A new
 * deploy comes with its items as they are after it, in number order, and is a `deploy.created`
 * event for the product's webhooks.
 */
export async function recordDeploy(trx: Trx, scope: ProductScope, input: DeployInput, key: string | undefined, urls: Urls): Promise<RecordedDeploy> {
  const hash = key === undefined ? null : requestHash(input);
  // Deploys of a product queue here: two requests with one key find each other's deploy, and
  // item rows are always locked after the product's, as every writer does.
  await lockProduct(trx, scope.product.id);
  const earlier = key === undefined ? undefined : await findDeployByKey(trx, scope.product.id, scope.user.id, key);
  if (earlier) {
    if (earlier.request_hash !== hash) throw new UnprocessableError('This Idempotency-Key was used for a deploy with other parameters.');
    return { deploy: earlier, created: false };
  }
  const items = await findItemsByNumbers(trx, scope.product.id, input.numbers);
  if (items.length === 0) throw new BadRequestError('None of the numbers names an item of this product.');

  const now = new Date();
  const at = formatTimestamp(now);
  const deploy = await insertDeploy(trx, {
    product_id: scope.product.id,
    user_id: scope.user.id,
    environment: input.environment,
    version: input.version,
    notes: input.notes,
    created_at: at,
    idempotency_key: key ?? null,
    request_hash: hash,
  });
  const itemIds = items.map((i) => i.id);
  await recordDeployedItems(trx, deploy, itemIds);
  await touchActivity(trx, itemIds, at);
  await notifyFollowers(trx, scope, deploy, items, urls.mailDomain, now);
  // As touchActivity left them, without reading them again.
  const touched = items.map((i) => (i.last_activity < at ? { ...i, last_activity: at } : i));
  await announceDeploy(trx, scope, deploy, touched, urls);
  return { deploy, created: true, items: touched };
}

/**
 * Queues one message per member following any of the deployed items, the deployer excepted, and
 * so are those who chose other environments for this product's deploy mail.
 */
async function notifyFollowers(trx: Trx, scope: ProductScope, deploy: DeployRow, items: ItemRow[], mailDomain: string, now: Date): Promise<void> {
  const byId = new Map(items.map((i) => [i.id, i]));
  const perFollower = new Map<number, ItemRow[]>();
  for (const [userId, followed] of await followingMembers(trx, scope.product.id, [...byId.keys()])) {
    if (userId !== scope.user.id) perFollower.set(userId, followed.map((id) => byId.get(id)!));
  }
  const wanting = await wantDeployMail(trx, scope.product.id, deploy.environment, [...perFollower.keys()]);
  const recipients = (await findUsersByIds(trx, wanting)).map((user) => ({ user, items: perFollower.get(user.id)! }));
  await queueDeployNotifications(trx, { product: scope.product, deploy, recipients }, mailDomain, now);
}

/**
 * One page of the product's deploys (docs/INTERFACE.md §7.7) and how many match in all: at most
 * `limit` deploys, fewer when their items would pass DEPLOY_PAGE_ITEMS, never none while any
 * remain.
 */
export async function findDeploys(
  db: Db,
  scope: ProductScope,
  filter: DeployFilter,
  page: { offset: number; limit: number },
): Promise<{ deploys: DeployRow[]; total: number }> {
  const [candidates, total] = await Promise.all([
    listDeploys(db, scope.product.id, filter, page.offset, page.limit),
    countDeploys(db, scope.product.id, filter),
  ]);
  const sizes = await countDeployItems(db, candidates.map((d) => d.id));
  const deploys: DeployRow[] = [];
  let items = 0;
  for (const deploy of candidates) {
    items += sizes.get(deploy.id) ?? 0;
    if (deploys.length > 0 && items > DEPLOY_PAGE_ITEMS) break;
    deploys.push(deploy);
  }
  return { deploys, total };
}

/** Who made each of the given deploys of the product, by deploy id (two queries whatever the count). */
export async function deployersOf(db: Db, scope: ProductScope, deployIds: number[]): Promise<Map<number, UserRow>> {
  const deploys = (await findDeploysByIds(db, deployIds)).filter((d) => d.product_id === scope.product.id);
  const users = new Map((await findUsersByIds(db, deploys.map((d) => d.user_id))).map((u) => [u.id, u]));
  return new Map(deploys.map((d) => [d.id, users.get(d.user_id)!]));
}
