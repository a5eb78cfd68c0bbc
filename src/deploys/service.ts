import crypto from 'node:crypto';
import type { Db, Trx } from '../db/connection.js';
import { storableId, type DeployRow, type UserRow } from '../db/schema.js';
import { BadRequestError, NotFoundError, UnprocessableError } from '../errors.js';
import { findItemHeadsByIds, findItemHeadsByNumbers, touchActivity, type ItemHead } from '../items/index.js';
import { blockersOfItems } from '../conversation/index.js';
import { queueDeployNotifications } from '../mail/index.js';
import { wantDeployMail } from '../notifications/index.js';
import { lockProduct, markItemsChanged } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { shownHtml, type MarkdownRenderer } from '../markdown.js';
import { formatTimestamp } from '../time.js';
import { nextTurn } from '../turns.js';
import { findProfiles, findUsersByIds, type UserProfile } from '../users/index.js';
import { announceDeploy, logDeploy } from './events.js';
import { keptSummaries } from './summaries.js';
import { DEPLOY_PAGE_ITEMS, type DeployInput } from './input.js';
import {
  countDeployItems,
  countDeploys,
  countItemDeploys,
  deploysInEffectAfter,
  entriesOf,
  findDeployByKey,
  findDeploysByIds,
  findListedDeploys,
  findNotesHtml,
  findRollbackTarget,
  findUnrenderedNotes,
  followingMembers,
  insertDeploy,
  keepSummaries,
  listDeployPage,
  type DeployOfPage,
  type ListedDeployRow,
  countDeployPage,
  summaryColumnsOfDeploys,
  itemIdsOfDeploys,
  latestDeploysOfItems,
  listDeploys,
  listItemDeploys,
  recordDeployedItems,
  recordRollback,
  setNotesHtml,
  type DeployFilter,
  type ItemDeployRow,
  type RollbackChange,
} from './repository.js';

/**
 * What identifies a deploy request for its Idempotency-Key: the set of numbers in any order, and
 * the rollback flag only when set, so that keys stored before rollbacks existed still match.
 */
function requestHash(input: DeployInput): string {
  const { environment, version, notes } = input;
  const numbers = [...input.numbers].sort((a, b) => a - b);
  const request = input.rollback
    ? { environment, numbers, version, notes, rollback: true }
    : { environment, numbers, version, notes };
  return crypto.createHash('sha256').update(JSON.stringify(request)).digest('hex');
}

/** A person a deploy mails, with the deploy's items they follow, in number order. */
export interface Recipient {
  user: UserRow;
  items: ItemHead[];
}

/**
 * Who gets mail about a deploy (or rollback) of `items` to `environment`: every member of the
 * product following any of the items, each with the items they follow, except the deployer and
 * those who chose other environments for this product's deploy mail. The one place that rule
 * lives: a real deploy, a rollback and a dry run all ask here.
 */
export async function deployRecipients(
  db: Db,
  scope: ProductScope,
  environment: string,
  items: ItemHead[],
): Promise<Recipient[]> {
  const byId = new Map(items.map((i) => [i.id, i]));
  const perFollower = new Map<number, ItemHead[]>();
  for (const [userId, followed] of await followingMembers(db, scope.product.id, [...byId.keys()])) {
    if (userId !== scope.user.id)
      perFollower.set(
        userId,
        followed.map((id) => byId.get(id)!).sort((a, b) => a.number - b.number),
      );
  }
  const wanting = await wantDeployMail(db, scope.product.id, environment, [...perFollower.keys()]);
  const users = await findUsersByIds(db, wanting);
  return users.sort((a, b) => a.id - b.id).map((user) => ({ user, items: perFollower.get(user.id)! }));
}

/** What a rollback does besides recording itself: the deploys it undoes and each changed item. */
interface RollbackPlan {
  undone: DeployRow[];
  changes: RollbackChange[];
}

/**
 * What a deploy request does, worked out before anything is written: a dry run answers it, a
 * real deploy writes it. `items` are the deploy's own: the items named (a deploy) or the items
 * whose entry for the environment it changes (a rollback), in number order, as heads: the
 * receipt reads the text of only those it can show.
 */
export interface DeployPlan {
  items: ItemHead[];
  unknownNumbers: number[];
  recipients: Recipient[];
  /** Items of a deploy blocked by items the environment will not run (blockedElsewhere). */
  blocked: BlockedItem[];
  rollback?: RollbackPlan;
}

/** A deployed item that items not in the environment block: its number, and theirs. */
export interface BlockedItem {
  number: number;
  blocked_by: number[];
}

/**
 * Of the items a deploy takes to the environment, those blocked (by blocks in force) by items
 * that the environment will not run after it: neither deployed there now (and not reverted) nor
 * in this deploy. In number order, each with the numbers of those blockers.
 */
async function blockedElsewhere(db: Db, environment: string, items: ItemHead[]): Promise<BlockedItem[]> {
  const blockers = await blockersOfItems(
    db,
    items.map((i) => i.id),
  );
  if (blockers.size === 0) return [];
  const coming = new Set(items.map((i) => i.id));
  const outside = [...new Set([...blockers.values()].flat().map((b) => b.id))].filter((id) => !coming.has(id));
  const entries = await entriesOf(db, environment, outside);
  const there = (id: number) => coming.has(id) || (entries.has(id) && entries.get(id)!.reverted_at === null);
  return items
    .map((item) => ({
      number: item.number,
      blocked_by: (blockers.get(item.id) ?? []).filter((b) => !there(b.id)).map((b) => b.number),
    }))
    .filter((b) => b.blocked_by.length > 0)
    .sort((a, b) => a.number - b.number);
}

/**
 * Works out a deploy or rollback from what is stored now, reading only. Throws 400 when no
 * number of a deploy names an item, 422 when a rollback has no deploy to go back to.
 */
export async function planDeploy(db: Db, scope: ProductScope, input: DeployInput): Promise<DeployPlan> {
  const named = await findItemHeadsByNumbers(db, scope.product.id, input.numbers);
  const known = new Set(named.map((i) => i.number));
  const unknownNumbers = input.numbers.filter((n) => !known.has(n));
  if (!input.rollback) {
    if (named.length === 0) throw new BadRequestError('None of the numbers names an item of this product.');
    return {
      items: named,
      unknownNumbers,
      recipients: await deployRecipients(db, scope, input.environment, named),
      blocked: await blockedElsewhere(db, input.environment, named),
    };
  }
  const rollback = await planRollback(db, scope, input.environment, input.version);
  const items = (
    await findItemHeadsByIds(
      db,
      rollback.changes.map((c) => c.itemId),
    )
  ).sort((a, b) => a.number - b.number);
  return {
    items,
    unknownNumbers,
    recipients: await deployRecipients(db, scope, input.environment, items),
    blocked: [],
    rollback,
  };
}

/**
 * A rollback of the environment to `version`: back to the latest deploy of that version that no
 * rollback undid (422 without one), undoing every later deploy not undone yet. Each item of
 * those goes back to the latest ordinary deploy at or before the target that had it and was not
 * undone, or, without one, has its entry reverted. Items whose entry would stay as it is are no
 * change (an entry reverted already stays reverted as it was).
 */
async function planRollback(db: Db, scope: ProductScope, environment: string, version: string): Promise<RollbackPlan> {
  const productId = scope.product.id;
  const target = await findRollbackTarget(db, productId, environment, version);
  if (!target) {
    throw new UnprocessableError(
      `No deploy to ${environment} had version ${version}, or every one was rolled back: ` +
        'there is nothing to roll back to. To deploy that version anew, post the deploy without rollback.',
    );
  }
  const undone = await deploysInEffectAfter(db, productId, environment, target.id);
  const itemIds = await itemIdsOfDeploys(
    db,
    undone.map((d) => d.id),
  );
  const [restore, entries] = await Promise.all([
    latestDeploysOfItems(db, productId, environment, target.id, itemIds),
    entriesOf(db, environment, itemIds),
  ]);
  const changes: RollbackChange[] = [];
  for (const itemId of itemIds) {
    const entry = entries.get(itemId);
    const restoredTo = restore.get(itemId) ?? null;
    const unchanged = restoredTo
      ? entry?.deploy_id === restoredTo.id && entry.reverted_at === null
      : !entry || entry.reverted_at !== null;
    if (!unchanged) changes.push({ itemId, restoredTo });
  }
  return { undone, changes };
}

/** A deploy as recorded, with what its receipt says besides the deploy itself. */
export type RecordedDeploy =
  | { deploy: DeployRow; created: false }
  | { deploy: DeployRow; created: true; items: ItemHead[] };

/**
 * Records a deploy or rollback in the caller's transaction (docs/INTERFACE.md §7.8): the deploy,
 * its items and their latest deploy per environment (a rollback: the deploys it undoes, and each
 * changed item's entry back to an earlier deploy or reverted), and one outbox message per person
 * deployRecipients names. The receipt (unknown numbers, how many were mailed) is kept on the
 * deploy, so that a repeat with the same Idempotency-Key returns the first deploy as it was
 * answered and queues nothing; the same key with other parameters is 422. Throws as planDeploy.
 * A new deploy comes with its items (heads) as they are after it, in number order, and is an event for
 * the product's webhooks (`deploy.created`, or `deploy.rolled_back`).
 */
export async function recordDeploy(
  trx: Trx,
  scope: ProductScope,
  input: DeployInput,
  key: string | undefined,
  urls: Urls,
): Promise<RecordedDeploy> {
  const hash = key === undefined ? null : requestHash(input);
  // Deploys of a product queue here: two requests with one key find each other's deploy, and
  // item rows are always locked after the product's, as every writer does.
  await lockProduct(trx, scope.product.id);
  const earlier = await earlierDeploy(trx, scope, key, hash);
  if (earlier) return { deploy: earlier, created: false };
  const plan = await planDeploy(trx, scope, input);

  const now = new Date();
  const at = formatTimestamp(now);
  const deploy = await insertDeploy(trx, {
    product_id: scope.product.id,
    user_id: scope.user.id,
    environment: input.environment,
    version: input.version,
    notes: input.notes,
    notes_html: input.notesHtml ?? null,
    created_at: at,
    idempotency_key: key ?? null,
    request_hash: hash,
    rollback: input.rollback ? 1 : 0,
    ...receiptColumns(plan),
    // What deploys.json embeds of the items, as they are now (a deploy changes none of it).
    ...keptSummaries(plan.items),
  });
  await recordPlan(trx, deploy, plan, scope.user);
  // Lists filter on where items are deployed: their totals must be counted again.
  await markItemsChanged(trx, scope.product.id, { totals: true });
  await touchItems(trx, plan.items, at);
  await queueDeployNotifications(
    trx,
    { product: scope.product, deploy, recipients: plan.recipients },
    urls.mailDomain,
    now,
  );
  // As touchActivity left them, without reading them again.
  const items = plan.items.map((i) => ({
    ...i,
    version: i.version + 1,
    // biome-ignore lint/complexity/useMathMinMax: timestamps, compared as text
    last_activity: i.last_activity < at ? at : i.last_activity,
  }));
  await announceDeploy(
    trx,
    scope,
    deploy,
    items,
    urls,
    plan.rollback && { undone: plan.rollback.undone.map((d) => d.id) },
  );
  return { deploy, created: true, items };
}

/** What a deploy keeps of its receipt, so that a repeat answers the same. */
const receiptColumns = (plan: DeployPlan) => ({
  unknown_numbers: JSON.stringify(plan.unknownNumbers),
  emailed: plan.recipients.length,
  blocked_items: JSON.stringify(plan.blocked),
});

/**
 * The deploy that an earlier request with the same Idempotency-Key recorded, if any; 422 when that
 * request had other parameters (`hash`). Asked with the product locked, so that two requests with
 * one key find each other's deploy.
 */
async function earlierDeploy(
  trx: Trx,
  scope: ProductScope,
  key: string | undefined,
  hash: string | null,
): Promise<DeployRow | undefined> {
  const earlier = key === undefined ? undefined : await findDeployByKey(trx, scope.product.id, scope.user.id, key);
  if (earlier && earlier.request_hash !== hash)
    throw new UnprocessableError('This Idempotency-Key was used for a deploy with other parameters.');
  return earlier;
}

/**
 * The items of a deploy just inserted: their latest deploy to its environment, or what its rollback
 * changes; and in the activity log, one activity per item, by `deployer`.
 */
async function recordPlan(trx: Trx, deploy: DeployRow, plan: DeployPlan, deployer: UserRow): Promise<void> {
  if (plan.rollback) {
    const { undone, changes } = plan.rollback;
    await recordRollback(
      trx,
      deploy,
      undone.map((d) => d.id),
      changes,
    );
    await logDeploy(trx, deploy, deployer, plan.items, new Map(changes.map((c) => [c.itemId, c.restoredTo])));
  } else {
    await recordDeployedItems(trx, deploy, plan.items);
    await logDeploy(trx, deploy, deployer, plan.items);
  }
}

/** Bytes of stored text that one statement touching items rewrites at most before the next. */
const TOUCH_STEP = 8 * 1024 * 1024;

/**
 * touchActivity for the items of a deploy, a few MB of their rows at a time, stepping aside
 * between the statements (see nextTurn): SQLite rewrites a row whole when any of its columns
 * changes, descriptions included, and rewriting 500 rows of the longest descriptions at once would
 * hold every other request for the better part of a second. Reads do not wait for the transaction.
 */
async function touchItems(trx: Trx, items: ItemHead[], at: string): Promise<void> {
  let step: number[] = [];
  let bytes = 0;
  for (const item of items) {
    if (step.length > 0 && bytes + item.stored_bytes > TOUCH_STEP) {
      await touchActivity(trx, step, at);
      await nextTurn();
      step = [];
      bytes = 0;
    }
    step.push(item.id);
    bytes += item.stored_bytes;
  }
  await touchActivity(trx, step, at);
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
  const sizes = await countDeployItems(
    db,
    candidates.map((d) => d.id),
  );
  const deploys: DeployRow[] = [];
  let items = 0;
  for (const deploy of candidates) {
    items += sizes.get(deploy.id) ?? 0;
    if (deploys.length > 0 && items > DEPLOY_PAGE_ITEMS) break;
    deploys.push(deploy);
  }
  return { deploys, total };
}

/**
 * One page of the product's deploys as deploys.json lists them (docs/INTERFACE.md §7.7): which
 * deploys, and what of them may change (see listedDeploys for the rest), and how many match in
 * all; bounded as findDeploys is.
 */
export async function findDeployPage(
  db: Db,
  scope: ProductScope,
  filter: DeployFilter,
  page: { offset: number; limit: number },
): Promise<{ deploys: DeployOfPage[]; total: number }> {
  const [candidates, total] = await Promise.all([
    listDeployPage(db, scope.product.id, filter, page.offset, page.limit),
    countDeployPage(db, scope.product.id, filter),
  ]);
  const unkept = candidates.filter((d) => d.item_count === null);
  const counts = unkept.length
    ? await countDeployItems(
        db,
        unkept.map((d) => d.id),
      )
    : new Map<number, number>();
  const shown: typeof candidates = [];
  let items = 0;
  for (const deploy of candidates) {
    items += deploy.item_count ?? counts.get(deploy.id) ?? 0;
    if (shown.length > 0 && items > DEPLOY_PAGE_ITEMS) break;
    shown.push(deploy);
  }
  return { deploys: shown, total };
}

/**
 * Deploys of a page whole, each with its items' summaries as kept when it was written, in the
 * order given; one deleted since its page was read is left out. A deploy from before summaries
 * were kept has them kept now, from its items as they are (only the deploys of a page, so at most
 * DEPLOY_PAGE_ITEMS items and one deploy's more), and every later page shows those.
 */
export async function listedDeploys(db: Db, deploys: DeployOfPage[]): Promise<ListedDeployRow[]> {
  const ids = deploys.map((d) => d.id);
  const rows = await findListedDeploys(db, ids);
  const toKeep = rows.filter((row) => row.item_summaries === null).map((row) => row.id);
  const kept = toKeep.length ? await keepSummariesOf(db, toKeep) : new Map<number, never>();
  const byId = new Map(rows.map((row) => [row.id, { ...row, ...kept.get(row.id) } as ListedDeployRow]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Keeps the summaries of deploys that had none, from their items as they are now; answers what is kept. */
async function keepSummariesOf(
  db: Db,
  deployIds: number[],
): Promise<Map<number, { item_summaries: Buffer; item_count: number }>> {
  const itemsOf = await summaryColumnsOfDeploys(db, deployIds);
  const summaries = deployIds.map((id) => {
    const { item_summaries, item_count } = keptSummaries(itemsOf.get(id)!);
    return { id, summaries: item_summaries, count: item_count };
  });
  return db.transaction().execute((trx) => keepSummaries(trx, summaries));
}

/** Who made each of the given deploys of the product, by deploy id (two queries whatever the count). */
export async function deployersOf(db: Db, scope: ProductScope, deployIds: number[]): Promise<Map<number, UserRow>> {
  const deploys = (await findDeploysByIds(db, deployIds)).filter((d) => d.product_id === scope.product.id);
  const users = new Map(
    (
      await findUsersByIds(
        db,
        deploys.map((d) => d.user_id),
      )
    ).map((u) => [u.id, u]),
  );
  return new Map(deploys.map((d) => [d.id, users.get(d.user_id)!]));
}

/** One deploy of the product; 404 when the product has no deploy of that id. */
export async function getDeploy(db: Db, scope: ProductScope, id: number): Promise<DeployRow> {
  const [deploy] = storableId(id) ? await findDeploysByIds(db, [id]) : [];
  if (!deploy || deploy.product_id !== scope.product.id) throw new NotFoundError(`No deploy ${id} in this product.`);
  return deploy;
}

/** A deploy in an item's history, with who made it. */
export interface ItemDeploy {
  deploy: ItemDeployRow;
  by: UserProfile;
}

/**
 * One page of an item's deploy history: the product's deploys that had the item (its own, and
 * the rollbacks that restored or reverted its entry), oldest first or `newest` first, each with
 * who made it, and how many there are in all. The item is the caller's, found in the scope.
 */
export async function deployHistoryOf(
  db: Db,
  scope: ProductScope,
  itemId: number,
  page: { offset: number; limit: number; newest: boolean },
): Promise<{ deploys: ItemDeploy[]; total: number }> {
  const rows = await listItemDeploys(db, scope.product.id, itemId, page.newest, page.offset, page.limit);
  // A first page that is not full holds them all.
  const total =
    page.offset === 0 && rows.length < page.limit ? rows.length : await countItemDeploys(db, scope.product.id, itemId);
  // The people of an item's history are the product's few deployers: remembered, as items' people are.
  const users = await findProfiles(
    db,
    rows.map((d) => d.user_id),
  );
  return { deploys: rows.map((deploy) => ({ deploy, by: users.get(deploy.user_id)! })), total };
}

/**
 * Each deploy's notes as pages and mail show them, by deploy id: the HTML kept when they were
 * written (escaped text for a deploy from before).
 */
export async function notesHtmlOf(db: Db, deploys: Pick<DeployRow, 'id' | 'notes'>[]): Promise<Map<number, string>> {
  const withNotes = deploys.filter((d) => d.notes !== '');
  const kept = withNotes.length
    ? await findNotesHtml(
        db,
        withNotes.map((d) => d.id),
      )
    : new Map<number, string | null>();
  return new Map(deploys.map((d) => [d.id, shownHtml(d.notes, kept.get(d.id))]));
}

/**
 * Renders the notes of up to `batch` deploys recorded before notes were rendered on write,
 * oldest first, and keeps their HTML; returns how many it rendered (0: none is left, or none
 * could be rendered now). Rendered before the short transaction that keeps them.
 */
export async function fillNotesHtml(db: Db, markdown: MarkdownRenderer, batch: number): Promise<number> {
  const rows = await findUnrenderedNotes(db, batch);
  const rendered: { id: number; html: string }[] = [];
  for (const row of rows) {
    const html = await markdown.render(row.notes);
    if (html !== null) rendered.push({ id: row.id, html });
  }
  if (rendered.length === 0) return 0;
  await db.transaction().execute(async (trx) => {
    for (const r of rendered) await setNotesHtml(trx, r.id, r.html);
  });
  return rendered.length;
}
