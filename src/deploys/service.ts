import crypto from 'node:crypto';
import type { Db } from '../db/connection.js';
import type { DeployRow, ItemRow } from '../db/schema.js';
import { BadRequestError, ForbiddenError, UnprocessableError, ValidationError } from '../errors.js';
import { asEnum, asList, asPage, asText, collectErrors, invalid, asInteger, type ParamValue } from '../http/params.js';
import { findItemsByNumbers, touchActivity } from '../items/repository.js';
import { BIG_PAGE, renderItems } from '../items/service.js';
import { nextTurn } from '../turns.js';
import { deploySubject, mailbox } from '../mail/deploy-email.js';
import { enqueueMessages } from '../mail/outbox.js';
import type { ProductScope, Urls } from '../scope.js';
import { formatTimestamp, nowTimestamp } from '../time.js';
import { RETRY_WINDOW_MS } from '../mail/worker.js';
import { findUsersByIds } from '../users/repository.js';
import { lockProduct } from '../products/repository.js';
import { presentDeploy, type DeployJson } from './present.js';
import {
  countDeployItems,
  countDeploys,
  findDeployByKey,
  followingMembers,
  insertDeploy,
  itemsOfDeploys,
  listDeploys,
  recordDeployedItems,
  type DeployFilter,
} from './repository.js';

/** Items one deploy may name: far more than any release, few enough for one transaction. */
export const MAX_DEPLOY_ITEMS = 1000;

/** Deploys per page of deploys.json: without `limit`, and at most. */
export const DEPLOY_PAGE = { default: 20, max: 100 } as const;
/**
 * Items one page of deploys.json may embed in all. A deploy holds up to MAX_DEPLOY_ITEMS, so a
 * page of full-size deploys would weigh a megabyte per deploy: a page ends before the deploy that
 * would take it past this many items (it always holds at least one deploy). Clients page on by
 * the number of deploys they got, as they must anyway when asking for more than the maximum.
 */
export const DEPLOY_PAGE_ITEMS = 1000;

export const DEPLOY_ORDERS = ['oldest', 'newest'] as const;

export interface DeployInput {
  environment: string;
  numbers: number[];
  version: string;
  notes: string;
}

/** Parameters of a new deploy; missing environment or numbers are 403, as the original service answers. */
export function parseDeploy(p: Record<string, ParamValue>): DeployInput {
  const environment = asText('environment', p.environment, 255);
  const rawNumbers = asList('numbers', p.numbers);
  if (environment === undefined || environment.trim() === '' || !rawNumbers?.length) {
    throw new ForbiddenError('Both environment and numbers are required to record a deploy.');
  }
  const numbers = rawNumbers.map((n) => (/^\d+$/.test(n) ? asInteger('numbers', n)! : invalid('numbers', `"${n}" is not an item number`)));
  if (new Set(numbers).size > MAX_DEPLOY_ITEMS) invalid('numbers', `at most ${MAX_DEPLOY_ITEMS} items per deploy`);
  return {
    environment,
    numbers: [...new Set(numbers)].sort((a, b) => a - b),
    version: asText('version', p.version, 255) ?? '',
    notes: asText('notes', p.notes, 65535) ?? '',
  };
}

/** Parameters of a deploy list (INTERFACE.md §7.7); every malformed one is named in one 400. */
export function parseDeployList(p: Record<string, ParamValue>): { filter: DeployFilter; page: { offset: number; limit: number } } {
  return collectErrors((field) => {
    const page = field(() => asPage(p, DEPLOY_PAGE));
    const environment = field(() => asText('environment', p.environment, 255)) || undefined;
    const order = field(() => asEnum('order_by', p.order_by, DEPLOY_ORDERS));
    return { filter: { environment, newest: order === 'newest' }, page: page! };
  });
}

export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined || key === '') return undefined;
  if (key.length > 255) throw new ValidationError({ 'Idempotency-Key': 'must be at most 255 characters' });
  return key;
}

function requestHash(input: DeployInput): string {
  return crypto.createHash('sha256').update(JSON.stringify(input)).digest('hex');
}

/**
 * Records a deploy in the caller's transaction: the deploy, its items, their latest deploy per
 * environment, and one outbox message per following member (the deployer excluded) listing that
 * member's items. With an idempotency key, a repeat returns the first deploy and queues nothing;
 * the same key with other parameters is 422. Throws 400 when no number names an item. A new
 * deploy comes with its items as they are after it, in number order.
 */
export async function recordDeploy(
  trx: Db,
  scope: ProductScope,
  input: DeployInput,
  key: string | undefined,
  urls: Urls,
): Promise<{ deploy: DeployRow; created: false } | { deploy: DeployRow; created: true; items: ItemRow[] }> {
  const hash = key === undefined ? null : requestHash(input);
  // Deploys of a product queue here: two requests with one key find each other's deploy, and
  // item rows are always locked after the product's, as every writer does.
  await lockProduct(trx, scope.product.id);
  if (key !== undefined) {
    const earlier = await findDeployByKey(trx, scope.product.id, scope.user.id, key);
    if (earlier) {
      if (earlier.request_hash !== hash) throw new UnprocessableError('This Idempotency-Key was used for a deploy with other parameters.');
      return { deploy: earlier, created: false };
    }
  }
  const items = await findItemsByNumbers(trx, scope.product.id, input.numbers);
  if (items.length === 0) throw new BadRequestError('None of the numbers names an item of this product.');

  const now = nowTimestamp();
  const deploy = await insertDeploy(trx, {
    product_id: scope.product.id,
    user_id: scope.user.id,
    environment: input.environment,
    version: input.version,
    notes: input.notes,
    created_at: now,
    idempotency_key: key ?? null,
    request_hash: hash,
  });
  const itemIds = items.map((i) => i.id);
  await recordDeployedItems(trx, deploy, itemIds);
  await touchActivity(trx, itemIds, now);

  const byId = new Map(items.map((i) => [i.id, i]));
  const perFollower = new Map<number, ItemRow[]>();
  for (const [userId, followed] of await followingMembers(trx, scope.product.id, itemIds)) {
    if (userId !== scope.user.id) perFollower.set(userId, followed.map((id) => byId.get(id)!));
  }
  const recipients = await findUsersByIds(trx, [...perFollower.keys()]);
  const retryUntil = formatTimestamp(new Date(Date.parse(now) + RETRY_WINDOW_MS));
  // The bodies are rendered when the worker sends (src/mail/deploy-email.ts): a row holds what
  // they are made from, which keeps this transaction short however many followers there are.
  // The random part keeps Message-IDs unique even where deploy ids repeat (a restored backup).
  const unique = crypto.randomBytes(6).toString('hex');
  await enqueueMessages(
    trx,
    recipients.map((user) => {
      const mine = perFollower.get(user.id)!.sort((a, b) => a.number - b.number);
      return {
        deploy_id: deploy.id,
        user_id: user.id,
        to_address: mailbox(user),
        subject: deploySubject(scope.product, deploy, mine),
        item_ids: JSON.stringify(mine.map((i) => i.id)),
        message_id: `<deploy-${deploy.id}-${user.id}.${unique}@${urls.mailDomain}>`,
      };
    }),
    now,
    retryUntil,
  );
  // As touchActivity left them, without reading them again.
  const after = items.map((i) => (i.last_activity < now ? { ...i, last_activity: now } : i));
  return { deploy, created: true, items: after };
}

/** Deploys as JSON, each with its items (embedded: a short deployed_to) in their current state. */
export async function renderDeploys(db: Db, scope: ProductScope, deploys: DeployRow[], urls: Urls): Promise<DeployJson[]> {
  const itemsByDeploy = await itemsOfDeploys(db, deploys.map((d) => d.id));
  const allItems = [...new Map([...itemsByDeploy.values()].flat().map((i) => [i.id, i])).values()];
  if (allItems.length > BIG_PAGE) await nextTurn();
  const rendered = new Map((await renderItems(db, scope.product, allItems, urls, scope.user.id, true)).map((json, i) => [allItems[i].id, json]));
  const users = new Map((await findUsersByIds(db, deploys.map((d) => d.user_id))).map((u) => [u.id, u]));
  const json = deploys.map((d) =>
    presentDeploy(d, users.get(d.user_id)!, scope.user.id, itemsByDeploy.get(d.id)!.map((i) => rendered.get(i.id)!)),
  );
  // Serialising a page of a thousand items is a step of its own (see nextTurn).
  if (allItems.length > BIG_PAGE) await nextTurn();
  return json;
}

/** A deploy just recorded as JSON: its items and its deployer (the caller) are in hand. */
export async function renderNewDeploy(db: Db, scope: ProductScope, deploy: DeployRow, items: ItemRow[], urls: Urls): Promise<DeployJson> {
  const json = presentDeploy(deploy, scope.user, scope.user.id, await renderItems(db, scope.product, items, urls, scope.user.id, true));
  if (items.length > BIG_PAGE) await nextTurn();
  return json;
}

/**
 * One page of the product's deploys (INTERFACE.md §7.7) and how many match in all: at most
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
