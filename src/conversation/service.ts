import { recordActivity, type ActivityAction } from '../activities/index.js';
import type { Db, Trx } from '../db/connection.js';
import type { AnnotationRow, BlockRow, CommentRow, FavoriteRow, ItemRow } from '../db/schema.js';
import { ForbiddenError, namesNothing, NotFoundError, ValidationError } from '../errors.js';
import {
  addItemFollowers,
  changeItemCounts,
  findItemsByIds,
  findItemsByNumbers,
  getItem,
  itemSummary,
} from '../items/index.js';
import { queueBlockNotification, queueCommentNotifications } from '../mail/index.js';
import { wantCommentMail } from '../notifications/index.js';
import { filterMembers, listMembers, lockProduct, markItemsChanged } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { currentTime, formatTimestamp } from '../time.js';
import { findUserById, findUsersByIds } from '../users/index.js';
import { queueEvent, type BlockSummary } from '../webhooks/index.js';
import { mentionedIn } from './mentions.js';
import type { CommentVia } from './model.js';
import * as repository from './repository.js';
import type { Page } from './repository.js';

export type { Page } from './repository.js';

const commentNotFound = () => new NotFoundError('No comment with that id on this item.', { code: 'comment_not_found' });
const favoriteNotFound = () =>
  new NotFoundError('No favorite with that id on this item.', { code: 'favorite_not_found' });
const blockNotFound = () => new NotFoundError('No block with that id by this item.', { code: 'block_not_found' });

/** A list of the item's, a page of it, and how many there are in all. */
export interface Listed<T> {
  rows: T[];
  total: number;
}

// Comments.

export async function listCommentsOf(
  db: Db,
  scope: ProductScope,
  number: number,
  page: Page,
): Promise<Listed<CommentRow>> {
  return commentsOfItem(db, await getItem(db, scope, number), page);
}

/** A page of the comments of an item of the scope's product read already (its row), oldest first. */
export async function commentsOfItem(
  db: Db,
  item: Pick<ItemRow, 'id' | 'comments_count'>,
  page: Page,
): Promise<Listed<CommentRow>> {
  return { rows: await repository.listComments(db, item.id, page), total: item.comments_count };
}

export async function getComment(db: Db, scope: ProductScope, number: number, id: number): Promise<CommentRow> {
  const item = await getItem(db, scope, number);
  return (await repository.findEntry(db, 'comments', item.id, id)) ?? Promise.reject(commentNotFound());
}

/**
 * A comment on an item, by the scope's user, in one transaction: the item counts it and is active
 * now; the author and the members it mentions follow the item; every other follower who wants
 * comment mail gets a message (threaded with the item's other mail), and webhooks hear of it.
 */
export async function addComment(
  trx: Trx,
  scope: ProductScope,
  number: number,
  input: { body: string; via: CommentVia },
  urls: Urls,
  now: Date = currentTime(),
): Promise<CommentRow> {
  const productId = scope.product.id;
  await lockProduct(trx, productId);
  const item = await getItem(trx, scope, number);
  const at = formatTimestamp(now);
  const comment = await repository.insertComment(trx, {
    item_id: item.id,
    user_id: scope.user.id,
    body: input.body,
    via: input.via,
    at,
  });
  await changeItemCounts(trx, item.id, { comments_count: 1 }, at);
  await markItemsChanged(trx, productId, { totals: false, items: [item.id] });
  // Members are read only when someone may be named.
  const mentioned = input.body.includes('@') ? mentionedIn(input.body, await listMembers(trx, productId)) : [];
  await addItemFollowers(trx, item.id, [scope.user.id, ...mentioned], at);
  const followers = await repository.memberFollowers(trx, productId, item.id, scope.user.id);
  const recipients = await findUsersByIds(trx, await wantCommentMail(trx, productId, followers));
  await queueCommentNotifications(
    trx,
    { product: scope.product, item, commentId: comment.id, recipients },
    urls.mailDomain,
    now,
  );
  await announce(trx, scope, 'comment.created', item, urls, {
    comment: { id: comment.id, body: comment.body, created_at: comment.created_at },
  });
  await logged(trx, scope, 'commented', item, { comment_id: comment.id, body: comment.body }, at);
  return comment;
}

/** Deletes a comment: its author alone may. The item counts one fewer; webhooks hear of it. */
export async function removeComment(
  trx: Trx,
  scope: ProductScope,
  number: number,
  id: number,
  urls: Urls,
): Promise<CommentRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  const comment = await repository.findEntry(trx, 'comments', item.id, id);
  if (!comment) throw commentNotFound();
  if (comment.user_id !== scope.user.id) throw new ForbiddenError('Only its author may delete a comment.');
  await repository.deleteComment(trx, comment.id);
  await changeItemCounts(trx, item.id, { comments_count: -1 });
  await markItemsChanged(trx, scope.product.id, { totals: false, items: [item.id] });
  await announce(trx, scope, 'comment.deleted', item, urls, {
    comment: { id: comment.id, body: comment.body, created_at: comment.created_at },
  });
  await logged(trx, scope, 'comment_deleted', item, { comment_id: comment.id, body: comment.body });
  return comment;
}

// Favorites.

export async function listFavoritesOf(
  db: Db,
  scope: ProductScope,
  number: number,
  page: Page,
): Promise<Listed<FavoriteRow>> {
  const item = await getItem(db, scope, number);
  return { rows: await repository.listEntries(db, 'favorites', item.id, page), total: item.favorites_count };
}

export async function getFavorite(db: Db, scope: ProductScope, number: number, id: number): Promise<FavoriteRow> {
  const item = await getItem(db, scope, number);
  return (await repository.findEntry(db, 'favorites', item.id, id)) ?? Promise.reject(favoriteNotFound());
}

/**
 * The caller favorites an item, once: a second time answers the favorite they have. The item
 * counts it (which moves it in the favorites order), and the caller follows it.
 */
export async function addFavorite(trx: Trx, scope: ProductScope, number: number, urls: Urls): Promise<FavoriteRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  const existing = await repository.findFavoriteOf(trx, item.id, scope.user.id);
  if (existing) return existing;
  const at = formatTimestamp(currentTime());
  const favorite = await repository.insertFavorite(trx, item.id, scope.user.id, at);
  await changeItemCounts(trx, item.id, { favorites_count: 1 }, at);
  await markItemsChanged(trx, scope.product.id, { totals: false, order: true });
  await addItemFollowers(trx, item.id, [scope.user.id], at);
  await announce(trx, scope, 'favorite.created', item, urls, {
    favorite: { id: favorite.id, created_at: favorite.created_at },
  });
  await logged(trx, scope, 'favorited', item, { favorite_id: favorite.id }, at);
  return favorite;
}

/** The scope's user's own favorite of an item, if they made one (what a page's star shows). */
export async function findOwnFavorite(db: Db, scope: ProductScope, number: number): Promise<FavoriteRow | undefined> {
  const item = await getItem(db, scope, number);
  return repository.findFavoriteOf(db, item.id, scope.user.id);
}

/**
 * The scope's user's favorite of an item of the scope's product read already (its row): none
 * without a read when the row counts no favorite, since the count moves with each favorite.
 */
export async function ownFavoriteOn(
  db: Db,
  scope: ProductScope,
  item: Pick<ItemRow, 'id' | 'favorites_count'>,
): Promise<FavoriteRow | undefined> {
  return item.favorites_count === 0 ? undefined : repository.findFavoriteOf(db, item.id, scope.user.id);
}

/** Takes a favorite back: the one who made it alone may. */
export async function removeFavorite(trx: Trx, scope: ProductScope, number: number, id: number): Promise<FavoriteRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  const favorite = await repository.findEntry(trx, 'favorites', item.id, id);
  if (!favorite) throw favoriteNotFound();
  if (favorite.user_id !== scope.user.id) throw new ForbiddenError('Only the one who made it may remove a favorite.');
  await repository.deleteFavorite(trx, favorite.id);
  await changeItemCounts(trx, item.id, { favorites_count: -1 });
  await markItemsChanged(trx, scope.product.id, { totals: false, order: true });
  await logged(trx, scope, 'unfavorited', item, { favorite_id: favorite.id });
  return favorite;
}

// Blocks.

/** The blocks an item makes (`blocking`) or suffers (`blocked_by`), oldest first. */
export async function listBlocksOf(
  db: Db,
  scope: ProductScope,
  number: number,
  side: 'blocking' | 'blocked_by',
  page: Page,
): Promise<Listed<BlockRow>> {
  const item = await getItem(db, scope, number);
  return blocksOn(db, item.id, side, page);
}

async function blocksOn(
  db: Db,
  itemId: number,
  side: 'blocking' | 'blocked_by',
  page: Page,
): Promise<Listed<BlockRow>> {
  const column = side === 'blocking' ? 'item_id' : 'blocked_id';
  const rows = await repository.listBlocks(db, itemId, column, page);
  // A first page that is not full holds them all.
  const whole = page.offset === 0 && rows.length < page.limit;
  return { rows, total: whole ? rows.length : await repository.countEntries(db, 'blocks', itemId, column) };
}

/**
 * The blocks of both sides of an item of the scope's product read already (by its id), a page of
 * each: what an item's page lists.
 */
export async function blocksOfItem(
  db: Db,
  itemId: number,
  page: Page,
): Promise<{ blocking: Listed<BlockRow>; blockedBy: Listed<BlockRow> }> {
  const [blocking, blockedBy] = await Promise.all([
    blocksOn(db, itemId, 'blocking', page),
    blocksOn(db, itemId, 'blocked_by', page),
  ]);
  return { blocking, blockedBy };
}

export async function getBlock(db: Db, scope: ProductScope, number: number, id: number): Promise<BlockRow> {
  const item = await getItem(db, scope, number);
  return (await repository.findEntry(db, 'blocks', item.id, id)) ?? Promise.reject(blockNotFound());
}

/**
 * The item blocks another of its product (`blocked`, by number), as the caller says: refused for
 * the item itself and for a block that would close a loop (the other item already blocks this one,
 * directly or through others). A block of the pair in force already is answered as it is; one
 * marked unblocked is in force again, the caller's. Both items count it; the blocked item's
 * assignee gets a message, unless they made the block.
 */
export async function addBlock(
  trx: Trx,
  scope: ProductScope,
  number: number,
  blockedNumber: number,
  urls: Urls,
): Promise<BlockRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  if (blockedNumber === number) throw new ValidationError({ blocked: 'must name another item than this one' });
  const [blocked] = await findItemsByNumbers(trx, scope.product.id, [blockedNumber]);
  if (!blocked) throw namesNothing('blocked', 'no item of this product');
  const existing = await repository.findBlockOfPair(trx, item.id, blocked.id);
  if (existing && existing.unblocked === 0) return existing;
  if (await repository.blocksThrough(trx, blocked.id, item.id))
    throw new ValidationError({
      blocked: `#${blocked.number} already blocks #${item.number}, directly or through other items`,
    });
  const now = currentTime();
  const at = formatTimestamp(now);
  const block = existing
    ? await repository.setUnblocked(trx, existing.id, false, scope.user.id)
    : await repository.insertBlock(trx, {
        product_id: scope.product.id,
        item_id: item.id,
        blocked_id: blocked.id,
        user_id: scope.user.id,
        created_at: at,
      });
  await countBlock(trx, scope, block, 1, at);
  await tellAssignee(trx, scope, { block, item, blocked }, urls, now);
  await announce(trx, scope, 'block.created', blocked, urls, { block: blockSummary(block, item, blocked, urls) });
  await logged(trx, scope, 'blocked', item, blockMeta(block, item, blocked), at);
  return block;
}

/**
 * DELETE of a block: its creator removes it; the blocked item's assignee marks it unblocked;
 * anyone else is refused. Answers the block as the change left it.
 */
export async function removeBlock(
  trx: Trx,
  scope: ProductScope,
  number: number,
  id: number,
  urls: Urls,
): Promise<BlockRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  const block = await repository.findEntry(trx, 'blocks', item.id, id);
  if (!block) throw blockNotFound();
  const [blocked] = await findItemsByIds(trx, [block.blocked_id]);
  const removes = block.user_id === scope.user.id;
  if (!removes && blocked.assigned_to_id !== scope.user.id)
    throw new ForbiddenError(
      "Only the block's creator may remove it, and the blocked item's assignee mark it unblocked.",
    );
  // Marked unblocked already: nothing changes, nothing is told.
  if (!removes && block.unblocked === 1) return block;
  let after = block;
  if (removes) await repository.deleteBlock(trx, block.id);
  else if (block.unblocked === 0) after = await repository.setUnblocked(trx, block.id, true);
  if (block.unblocked === 0) await countBlock(trx, scope, block, -1);
  await announce(trx, scope, 'block.changed', blocked, urls, {
    block: { ...blockSummary(after, item, blocked, urls), ...(removes ? { removed: true } : {}) },
  });
  await logged(trx, scope, removes ? 'block_removed' : 'unblocked', item, blockMeta(block, item, blocked));
  return removes ? { ...block, unblocked: 1 } : after;
}

/** Both items of a block count it (`by` 1) or stop counting it (-1); with `at`, both are active then. */
async function countBlock(trx: Trx, scope: ProductScope, block: BlockRow, by: number, at?: string): Promise<void> {
  await changeItemCounts(trx, block.item_id, { blocking_count: by }, at);
  await changeItemCounts(trx, block.blocked_id, { blockers_count: by }, at);
  await markItemsChanged(trx, scope.product.id, { totals: false, items: [block.item_id, block.blocked_id] });
}

/** The blocked item's assignee hears of a new block, unless they made it or are no member any more. */
async function tellAssignee(
  trx: Trx,
  scope: ProductScope,
  { block, item, blocked }: { block: BlockRow; item: ItemRow; blocked: ItemRow },
  urls: Urls,
  now: Date,
): Promise<void> {
  const assigneeId = blocked.assigned_to_id;
  if (assigneeId === null || assigneeId === scope.user.id) return;
  if (!(await filterMembers(trx, scope.product.id, [assigneeId])).has(assigneeId)) return;
  const assignee = await findUserById(trx, assigneeId);
  if (!assignee) return;
  await queueBlockNotification(
    trx,
    { product: scope.product, blockId: block.id, blocker: item, blocked, assignee },
    urls.mailDomain,
    now,
  );
}

const blockMeta = (block: BlockRow, item: ItemRow, blocked: ItemRow) => ({
  block_id: block.id,
  blocking: item.number,
  blocked: blocked.number,
});

/** Puts a change of the conversation in the item's activity log, in the change's transaction. */
async function logged(
  trx: Trx,
  scope: ProductScope,
  action: ActivityAction,
  item: ItemRow,
  meta: Record<string, unknown>,
  at?: string,
): Promise<void> {
  await recordActivity(trx, { action, item, actor: scope.user, meta, ...(at ? { at } : {}) });
}

function blockSummary(block: BlockRow, item: ItemRow, blocked: ItemRow, urls: Urls): BlockSummary {
  return {
    id: block.id,
    created_at: block.created_at,
    unblocked: block.unblocked === 1,
    item: itemSummary(item, urls),
    blocked: itemSummary(blocked, urls),
  };
}

/**
 * The items that block each of the given ones (by id), by blocks in force, as `{id, number}` in
 * number order; items nothing blocks are left out.
 */
export async function blockersOfItems(
  db: Db,
  itemIds: number[],
): Promise<Map<number, { id: number; number: number }[]>> {
  const blockers = new Map<number, { id: number; number: number }[]>();
  if (itemIds.length === 0) return blockers;
  for (const row of await repository.blockersOf(db, itemIds)) {
    const list = blockers.get(row.blocked_id) ?? blockers.set(row.blocked_id, []).get(row.blocked_id)!;
    list.push({ id: row.id, number: row.number });
  }
  return blockers;
}

// Annotations.

export async function listAnnotationsOf(
  db: Db,
  scope: ProductScope,
  number: number,
  page: Page,
): Promise<Listed<AnnotationRow>> {
  const item = await getItem(db, scope, number);
  return {
    rows: await repository.listEntries(db, 'annotations', item.id, page),
    total: await repository.countEntries(db, 'annotations', item.id),
  };
}

/** A note a tool leaves on an item (a build, a review): what it is (`label`), what it did, and a body. */
export async function addAnnotation(
  trx: Trx,
  scope: ProductScope,
  number: number,
  input: { label: string; action: string; body: string },
): Promise<AnnotationRow> {
  await lockProduct(trx, scope.product.id);
  const item = await getItem(trx, scope, number);
  return repository.insertAnnotation(trx, {
    item_id: item.id,
    user_id: scope.user.id,
    ...input,
    created_at: formatTimestamp(currentTime()),
  });
}

/** Tells the product's webhooks of a change in an item's conversation, with the item's summary. */
async function announce(
  trx: Trx,
  scope: ProductScope,
  type: 'comment.created' | 'comment.deleted' | 'favorite.created' | 'block.created' | 'block.changed',
  item: ItemRow,
  urls: Urls,
  parts: Record<string, unknown>,
): Promise<void> {
  await queueEvent(trx, {
    product: scope.product,
    actor: scope.user,
    type,
    render: async () => ({ item: itemSummary(item, urls), ...parts }),
  });
}
