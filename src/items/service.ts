import type { Db, Trx } from '../db/connection.js';
import { shownHtml, type MarkdownRenderer } from '../markdown.js';
import type { ItemRow, ItemUpdate } from '../db/schema.js';
import {
  BadRequestError,
  itemNotFound,
  namesNothing,
  PreconditionFailedError,
  userNotFound,
  ValidationError,
} from '../errors.js';
import { recordActivity, type ActivityAction } from '../activities/index.js';
import { allocateItemNumber, filterMembers, lockProduct, markItemsChanged } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { nowTimestamp } from '../time.js';
import type { EventType } from '../webhooks/index.js';
import { findUserById } from '../users/index.js';
import {
  listQuery,
  parseUpdateItem,
  type CreateItemInput,
  type IfMatch,
  type ListItemsInput,
  type ResortInput,
  type UpdateItemInput,
  type UserRef,
} from './input.js';
import {
  DEPLOYED_TO_SHOWN,
  entityTag,
  isClosed,
  progressOnEntering,
  SORT_STEP,
  statusCode,
  statusName,
  storyTitle,
  type Order,
  type Status,
} from './model.js';
import type { ListCounts, ListPages, ListWindows } from './counts.js';
import { announceItem, fieldChanges, previousOf } from './events.js';
import {
  addFollower,
  addFollowers,
  bottomSort,
  countChildren,
  countDeployments,
  countTopLevel,
  countWithChildren,
  findItemByNumber,
  countLiveChildren,
  findTags,
  insertItem,
  isFollower,
  listFollowerIds,
  listChildrenPage,
  listAssignedChildren,
  listChildren,
  listDeployments,
  listTopLevel,
  listTopLevelStamps,
  findItemStampsInOrder,
  listWithChildren,
  neighbourSort,
  readFilter,
  removeFollower,
  spreadAround,
  insertTags,
  replaceTags,
  updateItemRow,
  findItemToShow,
  findDescriptionHtml,
  findUnrenderedDescriptions,
  setDescriptionHtml,
  type Deployment,
  type ItemHead,
  type KnownRelations,
  type ItemFilter,
  type ItemStamp,
  type CountColumn,
} from './repository.js';
import * as repository from './repository.js';

export type { Deployment, ItemHead } from './repository.js';

export async function getItem(db: Db, scope: ProductScope, number: number): Promise<ItemRow> {
  const item = await findItemByNumber(db, scope.product.id, number);
  if (!item) throw itemNotFound(number);
  return item;
}

/**
 * The first step of a change to one item: the product's lock (see lockProduct), then the item as
 * the previous change left it, on PostgreSQL with its relations as an answer shows them (`known`),
 * which the answer then need not read again. The read is a statement of its own: one that waited
 * for the lock would read the item at the snapshot it started with (PostgreSQL reads again only
 * the rows it locks), from before the change that held the lock.
 */
async function lockedItem(
  trx: Trx,
  scope: ProductScope,
  number: number,
): Promise<{ row: ItemRow; known?: KnownRelations }> {
  await lockProduct(trx, scope.product.id);
  const found = await repository.findItemToShow(trx, scope.product.id, number, DEPLOYED_TO_SHOWN);
  if (!found) throw itemNotFound(number);
  return found;
}

/**
 * An item to be shown on its own (not embedded), and what was read of its relations along with
 * it (for presentItems), in as few queries as the database allows.
 */
export async function getItemToShow(
  db: Db,
  scope: ProductScope,
  number: number,
): Promise<{ row: ItemRow; known?: KnownRelations }> {
  const found = await findItemToShow(db, scope.product.id, number, DEPLOYED_TO_SHOWN);
  if (!found) throw itemNotFound(number);
  return found;
}

/** A user id that must name an existing user (404 otherwise). */
async function knownUser(db: Db, param: string, ref: { id: number } | { invalid: true }): Promise<number> {
  if ('invalid' in ref || !(await findUserById(db, ref.id))) throw userNotFound(param);
  return ref.id;
}

/**
 * An assignee must be a user and a member of the product (404 otherwise). A member is a user: the
 * user is looked up only to say which of the two is wrong.
 */
async function assignee(db: Db, productId: number, ref: Exclude<UserRef, null | undefined>): Promise<number> {
  if (!('invalid' in ref) && (await filterMembers(db, productId, [ref.id])).has(ref.id)) return ref.id;
  await knownUser(db, 'assigned_to', ref);
  throw namesNothing('assigned_to', 'no member of this product');
}

/** A parent must be a story of the same product. */
async function parentStory(db: Db, productId: number, number: number): Promise<ItemRow> {
  const parent = await findItemByNumber(db, productId, number);
  if (!parent) throw namesNothing('parent', 'no item of this product');
  if (parent.type !== 'story') throw new ValidationError({ parent: 'must be the number of a story' });
  return parent;
}

/**
 * Lists items as docs/INTERFACE.md §7.1 describes, with the total the query matches (remembered in
 * `counts` while the product's items do not change). Throws 404 when assigned_to/created_by
 * names no user.
 */
export async function listItems(
  db: Db,
  scope: ProductScope,
  input: ListItemsInput,
  counts: ListCounts,
  budget?: number,
): Promise<{ rows: ItemRow[]; total: number }> {
  const filter = await listFilter(db, scope, input);
  const rows = input.children
    ? await listWithChildren(db, filter, input.order, input.offset, input.limit)
    : await listTopLevel(db, filter, input.order, input.offset, input.limit, budget);
  return { rows, total: await listTotal(db, scope, input, filter, counts) };
}

/**
 * The same list as listItems, as stamps where it can (a page of top-level items: what its items'
 * JSON is kept by, read without their text), rows otherwise; for answers assembled from kept JSON.
 */
export async function listItemStamps(
  db: Db,
  scope: ProductScope,
  input: ListItemsInput,
  kept: { counts: ListCounts; pages: ListPages; windows?: ListWindows },
): Promise<{ stamps: ItemStamp[]; total: number }> {
  const filter = await listFilter(db, scope, input);
  const total = () => listTotal(db, scope, input, filter, kept.counts);
  const page = (): Promise<ItemStamp[]> =>
    input.children
      ? listWithChildren(db, filter, input.order, input.offset, input.limit)
      : listTopLevelStamps(db, filter, input.order, input.offset, input.limit);
  if (!input.children && !isByPosition(input) && kept.windows) {
    const { product } = scope;
    const sliced = await kept.windows.page(
      product.id,
      product.revision,
      { filter, order: input.order },
      input,
      (size) => listTopLevelStamps(db, filter, input.order, 0, size),
    );
    if (sliced) return { stamps: sliced, total: await total() };
  }
  if (input.children || !isByPosition(input)) return { stamps: await page(), total: await total() };
  let read: ItemStamp[] | undefined;
  const ids = await kept.pages.get(scope.product.id, scope.product.order_version, { filter, input }, async () => {
    read = await page();
    return read.map((s) => s.id);
  });
  return { stamps: read ?? (await findItemStampsInOrder(db, ids)), total: await total() };
}

/** Orders by position or by creation: what edits of text leave alone (see ListPages). */
const ORDERS_BY_POSITION = new Set<Order>(['priority', 'favorites', 'oldest', 'newest']);

/** Whether a list stands in an order that edits of text leave alone: its items change, their places do not. */
export const isByPosition = (input: ListItemsInput): boolean => ORDERS_BY_POSITION.has(input.order);

/** What a list asks of the repository: its users resolved (404 for unknown ones), its statuses as codes. */
async function listFilter(db: Db, scope: ProductScope, input: ListItemsInput): Promise<ItemFilter> {
  return readFilter(db, {
    productId: scope.product.id,
    statuses: input.statuses.map(statusCode),
    types: input.types,
    tags: input.tags,
    assignedTo: input.assignedTo ? await knownUser(db, 'assigned_to', input.assignedTo) : undefined,
    createdBy: input.createdBy ? await knownUser(db, 'created_by', input.createdBy) : undefined,
    deployedTo: input.deployedTo,
    notDeployedTo: input.notDeployedTo,
    ids: input.ids,
  });
}

/** How many items a list matches in all, remembered while the product's items version stays. */
function listTotal(
  db: Db,
  scope: ProductScope,
  input: ListItemsInput,
  filter: ItemFilter,
  counts: ListCounts,
): Promise<number> {
  return counts.get(scope.product.id, scope.product.items_version, { ...filter, children: input.children }, () =>
    (input.children ? countWithChildren : countTopLevel)(db, filter),
  );
}

/** One page of a story's sub-items by priority, and how many it has; 400 for any other type. */
export async function childrenOf(
  db: Db,
  scope: ProductScope,
  number: number,
  page: { offset: number; limit: number },
  budget?: number,
): Promise<{ rows: ItemRow[]; total: number }> {
  return childrenOfItem(db, await getItem(db, scope, number), page, budget);
}

/** The same, for an item already read; with `budget`, the rows of a big page that cannot fit in it are not read. */
export async function childrenOfItem(
  db: Db,
  item: ItemRow,
  page: { offset: number; limit: number },
  budget?: number,
): Promise<{ rows: ItemRow[]; total: number }> {
  if (item.type !== 'story') throw new BadRequestError('Only stories have sub-items.');
  const { rows, matched } = await listChildrenPage(db, item.id, page.offset, page.limit, budget);
  // A first page that is not full holds them all.
  const total = page.offset === 0 && matched < page.limit ? matched : await countChildren(db, item.id);
  return { rows, total };
}

/** One page of every environment an item was deployed to, latest first, and how many there are. */
export async function deploymentsOf(
  db: Db,
  scope: ProductScope,
  number: number,
  page: { offset: number; limit: number },
): Promise<{ deployments: Deployment[]; total: number }> {
  return deploymentsOfItem(db, await getItem(db, scope, number), page);
}

/** The same, for an item already read. */
export async function deploymentsOfItem(
  db: Db,
  item: ItemRow,
  page: { offset: number; limit: number },
): Promise<{ deployments: Deployment[]; total: number }> {
  const deployments = await listDeployments(db, item.id, page.offset, page.limit);
  const total =
    page.offset === 0 && deployments.length < page.limit
      ? deployments.length
      : ((await countDeployments(db, [item.id])).get(item.id) ?? 0);
  return { deployments, total };
}

/**
 * Creates an item at the bottom of its status with the next number of the product; the creator
 * and the assignee follow it. Number and position are taken inside the caller's transaction, as
 * is the `item.created` event for webhooks (whose links start with `urls`).
 */
export async function createItem(trx: Trx, scope: ProductScope, input: CreateItemInput, urls: Urls): Promise<ItemRow> {
  const productId = scope.product.id;
  if (input.createdBy) await knownUser(trx, 'created_by', input.createdBy);
  const assignedTo = input.assignedTo ? await assignee(trx, productId, input.assignedTo) : null;
  const parent = input.parent != null ? await parentStory(trx, productId, input.parent) : null;

  const now = nowTimestamp();
  const number = await allocateItemNumber(trx, productId);
  const status = statusCode(input.status);
  const empty = { started_at: null, closed_at: null, accepted_at: null, close_reason: null };
  const progress = input.status === 'backlog' ? empty : progressOnEntering(input.status, empty, now, input.closeReason);
  const story = input.type === 'story';
  const item = await insertItem(trx, {
    product_id: productId,
    number,
    type: input.type,
    status,
    title: story ? storyTitle(input.who!, input.what!, input.why!) : input.title!,
    who: story ? input.who! : null,
    what: story ? input.what! : null,
    why: story ? input.why! : null,
    description: input.description,
    description_html: input.descriptionHtml ?? null,
    score: input.score,
    archived: 0,
    created_by_id: scope.user.id,
    assigned_to_id: assignedTo,
    parent_id: parent?.id ?? null,
    sort: await bottomSort(trx, productId, status),
    ...progress,
    created_at: now,
    last_modified: now,
    last_activity: now,
  });
  await insertTags(trx, item.id, input.tags);
  await addFollowers(trx, item.id, assignedTo ? [scope.user.id, assignedTo] : [scope.user.id], now);
  const made = await fieldChanges(trx, undefined, item, { before: [], after: input.tags });
  await recordActivity(trx, { action: 'created', item, actor: scope.user, at: now, meta: { changes: made } });
  await announceItem(trx, scope, 'item.created', item, urls);
  return item;
}

/**
 * What a caller saw of an item before asking to change it: the version (If-Match, or the version
 * a form was opened at) and, from a form, the values its fields showed then.
 */
export interface Seen {
  /** The entity tags the caller holds (see entityTag); `*` is any version. */
  etags: IfMatch;
  /** A form's fields as it showed them, read as the update's own parameters are. */
  fields?: UpdateItemInput;
}

/**
 * An update as made: the item as it now is, and the parameters not applied because somebody else
 * changed them since.
 */
export interface Edited {
  row: ItemRow;
  /** Parameter names (`title`, `assigned_to`, ...): the caller's value is not stored; the item keeps the other's. */
  conflicts: string[];
  /** What was read of the item's relations with it and is still true after the update (for its answer). */
  known?: KnownRelations;
}

/** The update's fields and the parameters that set them, which conflicts are named by. */
const EDITABLE = {
  title: 'title',
  who: 'who',
  what: 'what',
  why: 'why',
  description: 'description',
  score: 'score',
  status: 'status',
  closeReason: 'close_reason',
  assignedTo: 'assigned_to',
  tags: 'tags',
  parent: 'parent',
} as const satisfies Record<Exclude<keyof UpdateItemInput, 'descriptionHtml'>, string>;
type Editable = keyof typeof EDITABLE;

/** A field's value in one comparable form; undefined when the field is not given. */
function comparable(field: Editable, value: UpdateItemInput[Editable]): string | undefined {
  if (value === undefined) return undefined;
  if (field === 'assignedTo')
    return value === null ? 'null' : 'invalid' in (value as object) ? 'invalid' : String((value as { id: number }).id);
  return JSON.stringify(value);
}

/** The item's fields now, in the form `comparable` gives the caller's. */
async function storedValues(trx: Trx, item: ItemRow, wanted: UpdateItemInput): Promise<Record<Editable, string>> {
  const parent =
    wanted.parent !== undefined && item.parent_id !== null
      ? (await findItemsByIds(trx, [item.parent_id]))[0]
      : undefined;
  return {
    title: JSON.stringify(item.title),
    who: JSON.stringify(item.who ?? ''),
    what: JSON.stringify(item.what ?? ''),
    why: JSON.stringify(item.why ?? ''),
    description: JSON.stringify(item.description),
    score: JSON.stringify(item.score),
    status: JSON.stringify(statusName(item.status)),
    closeReason: JSON.stringify(item.close_reason),
    assignedTo: item.assigned_to_id === null ? 'null' : String(item.assigned_to_id),
    tags: JSON.stringify(wanted.tags === undefined ? [] : await findTags(trx, item.id)),
    parent: JSON.stringify(parent?.number ?? null),
  };
}

/** Whether the caller holds the item's current version, or takes any (`*`). */
const holdsCurrent = (item: ItemRow, etags: IfMatch): boolean => etags === '*' || etags.includes(entityTag(item));

/** 412 unless the caller holds the item's current version, or takes any. */
function requireVersion(item: ItemRow, etags: IfMatch): void {
  if (holdsCurrent(item, etags)) return;
  throw new PreconditionFailedError(
    `Item #${item.number} changed since the version given in If-Match; its ETag is now "${entityTag(item)}": ` +
      'fetch it again and apply your change to it.',
  );
}

/**
 * The one rule of concurrent edits, for the API and the pages alike: which of an update's fields
 * to apply, given what the caller saw. Nothing seen: all of them, as clients without If-Match have
 * always had. The current version seen (or any): all of them. An older version: a 412, unless the
 * caller shows the values it saw (a form); then each field it changed is applied if nobody else
 * changed it since, and is a conflict if somebody did (left as they made it: nothing of theirs is
 * overwritten unseen); a field it left alone is not written, so another's change to it stays.
 */
async function unseenChanges(
  trx: Trx,
  item: ItemRow,
  input: UpdateItemInput,
  seen: Seen | undefined,
): Promise<{ input: UpdateItemInput; conflicts: string[] }> {
  if (seen === undefined) return { input, conflicts: [] };
  if (seen.fields === undefined) {
    requireVersion(item, seen.etags);
    return { input, conflicts: [] };
  }
  if (holdsCurrent(item, seen.etags)) return { input, conflicts: [] };
  const stored = await storedValues(trx, item, input);
  const applied: Record<string, unknown> = { assignedTo: undefined };
  const conflicts: string[] = [];
  for (const field of Object.keys(EDITABLE) as Editable[]) {
    const mine = comparable(field, input[field]);
    if (mine === undefined) continue;
    const was = comparable(field, seen.fields[field]);
    // Left as it was shown: whatever is stored now stays.
    if (mine === was) continue;
    if (was !== undefined && stored[field] === was) applied[field] = input[field];
    // Changed by somebody else too, unless to the very same value.
    else if (stored[field] !== mine) conflicts.push(EDITABLE[field]);
  }
  // The description's HTML, rendered before the transaction, goes with it when it is applied.
  if (applied.description !== undefined) applied.descriptionHtml = input.descriptionHtml;
  return { input: applied as unknown as UpdateItemInput, conflicts };
}

/**
 * Applies the given fields (docs/INTERFACE.md §7.4), as far as what the caller `seen` allows (see
 * unseenChanges: a 412, or conflicts, when somebody else changed the item since). Only real changes
 * move last_modified and the version; a status change moves the item to the bottom of its new
 * status and updates progress (§5). A real change is an `item.status_changed` event for webhooks
 * when the status moved, else `item.updated`.
 */
export async function updateItem(
  trx: Trx,
  scope: ProductScope,
  number: number,
  given: UpdateItemInput,
  urls: Urls,
  seen?: Seen,
): Promise<Edited> {
  // Product first: changes of a product's items apply one at a time, and read the item as the
  // previous change left it.
  const { row: item, known } = await lockedItem(trx, scope, number);
  const { input, conflicts } = await unseenChanges(trx, item, given, seen);
  const now = nowTimestamp();
  const changes: ItemUpdate = {
    ...textChanges(item, input),
    ...(await relationChanges(trx, scope, item, input, now)),
    ...(await statusChanges(trx, scope, item, input, now)),
  };
  let tagsChanged = false;
  const tagsBefore = input.tags === undefined ? [] : await findTags(trx, item.id);
  if (input.tags !== undefined) {
    tagsChanged = tagsBefore.join('\u0000') !== input.tags.join('\u0000');
    if (tagsChanged) await replaceTags(trx, item.id, input.tags);
  }

  if (Object.keys(changes).length === 0 && !tagsChanged) return { row: item, conflicts, known };
  const totals = tagsChanged || changes.status !== undefined || 'assigned_to_id' in changes || 'parent_id' in changes;
  await markItemsChanged(trx, scope.product.id, { totals, items: [item.id] });
  const updated = await updateItemRow(trx, item.id, { ...changes, last_modified: now, last_activity: now });
  const moved = changes.status !== undefined;
  await announceChange(trx, scope, { before: item, after: updated, at: now }, urls, {
    action: moved ? 'status_changed' : 'updated',
    event: moved ? 'item.status_changed' : 'item.updated',
    tags: tagsChanged ? { before: tagsBefore, after: input.tags! } : undefined,
  });
  // An update never changes an item's deployments; its tags, when they changed, are read again.
  return { row: updated, conflicts, known: known && { ...known, tags: tagsChanged ? undefined : known.tags } };
}

/**
 * Tells of a change of an item, in its transaction, from one reading of what changed: in the
 * activity log (who, when, each changed field before and after) and to the product's webhooks.
 */
async function announceChange(
  trx: Trx,
  scope: ProductScope,
  change: { before: ItemRow; after: ItemRow; at: string },
  urls: Urls,
  kind: { action: ActivityAction; event: EventType; tags?: { before: string[]; after: string[] } },
): Promise<void> {
  const changes = await fieldChanges(trx, change.before, change.after, kind.tags);
  const { after: item, at } = change;
  await recordActivity(trx, { action: kind.action, item, actor: scope.user, at, meta: { changes } });
  await announceItem(trx, scope, kind.event, item, urls, async () => previousOf(changes));
}

/** Title (or a story's who, what and why, and the title built from them), description, score. */
function textChanges(item: ItemRow, input: UpdateItemInput): ItemUpdate {
  const changes: ItemUpdate = {};
  if (item.type === 'story') {
    for (const part of ['who', 'what', 'why'] as const) {
      const value = input[part];
      if (value === undefined) continue;
      if (value.trim() === '') throw new ValidationError({ [part]: 'must not be empty' });
      if (value !== item[part]) changes[part] = value;
    }
    if (changes.who !== undefined || changes.what !== undefined || changes.why !== undefined) {
      changes.title = storyTitle(changes.who ?? item.who!, changes.what ?? item.what!, changes.why ?? item.why!);
    }
  } else if (input.title !== undefined) {
    if (input.title.trim() === '') throw new ValidationError({ title: 'must not be empty' });
    if (input.title !== item.title) changes.title = input.title;
  }
  if (input.description !== undefined && input.description !== item.description) {
    changes.description = input.description;
    changes.description_html = input.descriptionHtml ?? null;
  }
  if (input.score !== undefined && input.score !== item.score) changes.score = input.score;
  return changes;
}

/** Parent and assignee; a new assignee starts following the item. */
async function relationChanges(
  trx: Trx,
  scope: ProductScope,
  item: ItemRow,
  input: UpdateItemInput,
  now: string,
): Promise<ItemUpdate> {
  const changes: ItemUpdate = {};
  const story = item.type === 'story';
  // Clients posting a story back whole send `parent=` (none): only a real parent is refused.
  if (input.parent !== undefined && !(story && input.parent === null)) {
    if (story) throw new ValidationError({ parent: 'a story cannot have a parent' });
    const parentId = input.parent === null ? null : (await parentStory(trx, scope.product.id, input.parent)).id;
    if (parentId !== item.parent_id) changes.parent_id = parentId;
  }
  if (input.assignedTo !== undefined) {
    const assignedTo = input.assignedTo === null ? null : await assignee(trx, scope.product.id, input.assignedTo);
    // Only a new assignee starts following: the one already assigned, posted back with a whole
    // item, may have stopped following on purpose.
    if (assignedTo !== item.assigned_to_id) {
      changes.assigned_to_id = assignedTo;
      if (assignedTo) await addFollower(trx, item.id, assignedTo, now);
    }
  }
  return changes;
}

/** A new status (at the bottom of it, with progress as §5 says), or a new close reason. */
async function statusChanges(
  trx: Trx,
  scope: ProductScope,
  item: ItemRow,
  input: UpdateItemInput,
  now: string,
): Promise<ItemUpdate> {
  const current = statusName(item.status);
  if (input.status !== undefined && input.status !== current) {
    const code = statusCode(input.status);
    const sort = await bottomSort(trx, scope.product.id, code);
    return { status: code, sort, ...progressOnEntering(input.status, item, now, input.closeReason) };
  }
  if (input.closeReason !== undefined && isClosed(current) && input.closeReason !== item.close_reason)
    return { close_reason: input.closeReason };
  return {};
}

/** DELETE on an item archives it (an `item.updated` event); it can still be fetched and deployed. */
export async function archiveItem(trx: Trx, scope: ProductScope, number: number, urls: Urls): Promise<ItemRow> {
  const { row: item } = await lockedItem(trx, scope, number);
  if (item.archived === 1) return item;
  await markItemsChanged(trx, scope.product.id, { totals: true });
  const now = nowTimestamp();
  const archived = await updateItemRow(trx, item.id, { archived: 1, last_modified: now, last_activity: now });
  await announceChange(trx, scope, { before: item, after: archived, at: now }, urls, {
    action: 'archived',
    event: 'item.updated',
  });
  return archived;
}

/**
 * Moves an item within its status (docs/INTERFACE.md §6): below `before`, above `after`, or with both
 * directly below the upper of the two. Only the item's sort changes unless the gap is used up,
 * when the items around it are spread out first, in the same transaction (spreadAround). With
 * `ifMatch`, a 412 unless the caller holds the item's current version.
 */
export async function resortItem(
  trx: Trx,
  scope: ProductScope,
  number: number,
  input: ResortInput,
  ifMatch?: IfMatch,
): Promise<ItemRow> {
  const productId = scope.product.id;
  await lockProduct(trx, productId);
  const item = await getItem(trx, scope, number);
  if (ifMatch !== undefined) requireVersion(item, ifMatch);
  const refs: ItemRow[] = [];
  for (const [param, ref] of [
    ['before', input.before],
    ['after', input.after],
  ] as const) {
    if (ref === undefined) continue;
    const other = await findItemByNumber(trx, productId, ref);
    if (!other) throw namesNothing(param, 'no item of this product');
    if (other.id === item.id) throw new ValidationError({ [param]: 'must name another item than the one being moved' });
    if (other.status !== item.status) throw new ValidationError({ [param]: 'must name an item of the same status' });
    refs.push(other);
  }

  // The new sort, or the sort just above a gap that is used up.
  const place = async (spread: boolean): Promise<{ sort: number } | { usedUpBelow: number }> => {
    // After a spread the references may have moved: read them again.
    const fresh = spread ? await Promise.all(refs.map((r) => findItemByNumber(trx, productId, r.number))) : refs;
    let upper: number | undefined;
    let lower: number | undefined;
    if (input.before !== undefined) {
      upper = Math.min(...fresh.map((r) => Number(r!.sort)));
      lower = await neighbourSort(trx, productId, item.status, upper, 'below', item.id);
    } else {
      lower = Number(fresh[0]!.sort);
      upper = await neighbourSort(trx, productId, item.status, lower, 'above', item.id);
    }
    if (upper === undefined) return { sort: lower! - SORT_STEP };
    if (lower === undefined) return { sort: upper + SORT_STEP };
    return lower - upper >= 2 ? { sort: Math.floor((upper + lower) / 2) } : { usedUpBelow: upper };
  };

  let placed = await place(false);
  if ('usedUpBelow' in placed) {
    await spreadAround(trx, productId, item.status, placed.usedUpBelow);
    placed = await place(true);
  }
  if (!('sort' in placed)) throw new Error('a spread leaves room below every item it takes in');
  const { sort } = placed;
  if (sort === Number(item.sort)) return item;
  await markItemsChanged(trx, productId, { totals: false, order: true });
  const now = nowTimestamp();
  return updateItemRow(trx, item.id, { sort, last_modified: now, last_activity: now });
}

/** The caller follows (or stops following) an item; following counts as activity. */
export async function setFollowing(trx: Trx, scope: ProductScope, number: number, follow: boolean): Promise<ItemRow> {
  // Product first, as every change of its items: the item read here is the one the write moves.
  const { row: item } = await lockedItem(trx, scope, number);
  if (!follow) {
    await removeFollower(trx, item.id, scope.user.id);
    return item;
  }
  const now = nowTimestamp();
  await addFollower(trx, item.id, scope.user.id, now);
  await touchActivity(trx, [item.id], now);
  // last_activity shows in lists and orders them (order_by=active, stale).
  await markItemsChanged(trx, scope.product.id, { totals: false, items: [item.id] });
  // As touchActivity left it, without reading it again.
  // biome-ignore lint/complexity/useMathMinMax: timestamps are strings here, which Math.max would turn into NaN.
  return { ...item, version: item.version + 1, last_activity: now > item.last_activity ? now : item.last_activity };
}

/** Users start following an item (those who follow already are left as they were). */
export async function addItemFollowers(trx: Trx, itemId: number, userIds: number[], at: string): Promise<void> {
  if (userIds.length > 0) await addFollowers(trx, itemId, userIds, at);
}

/**
 * Moves what an item's `counts` show (see the repository's changeCounts), in the change's
 * transaction, after the product's lock: the item is a new version, with activity at `at`.
 */
export async function changeItemCounts(
  trx: Trx,
  itemId: number,
  delta: Partial<Record<CountColumn, number>>,
  at?: string,
): Promise<void> {
  await repository.changeCounts(trx, itemId, delta, at);
}

/** The user ids of an item's followers, earliest first, at most `limit`. */
export async function followerIdsOf(db: Db, itemId: number, limit: number): Promise<number[]> {
  return listFollowerIds(db, itemId, limit);
}

/** Stops a user following an item (an unsubscribe link); nothing else changes. */
export async function unfollow(trx: Trx, itemId: number, userId: number): Promise<void> {
  await removeFollower(trx, itemId, userId);
}

/** How many live sub-items each of the given items has, in one query (items without any are left out). */
/** The live sub-items of the given stories, each story's by priority (for a board's cards). */
export async function subItemsOf(db: Db, storyIds: number[]): Promise<ItemRow[]> {
  return listChildren(db, storyIds);
}

/** A person's live sub-items of one status, by priority, at most `limit` of them. */
export async function assignedSubItems(
  db: Db,
  scope: ProductScope,
  o: { status: Status; assignedTo: number; limit: number },
): Promise<ItemRow[]> {
  return listAssignedChildren(db, {
    productId: scope.product.id,
    status: statusCode(o.status),
    assignedTo: o.assignedTo,
    limit: o.limit,
  });
}

export async function subItemCounts(db: Db, itemIds: number[]): Promise<Map<number, number>> {
  return itemIds.length === 0 ? new Map() : countLiveChildren(db, itemIds);
}

/** The first `limit` followers of an item (user ids, earliest first), and whether `userId` follows it. */
export async function followersOf(
  db: Db,
  item: ItemRow,
  userId: number,
  limit: number,
): Promise<{ userIds: number[]; following: boolean }> {
  const userIds = await listFollowerIds(db, item.id, limit);
  return {
    userIds,
    following: userIds.includes(userId) || (userIds.length >= limit && (await isFollower(db, item.id, userId))),
  };
}

/** A move of a card on the board: past a neighbour, to the top, to a status, or dropped at a place in a column. */
export type Move =
  | { to: 'up'; above: number }
  | { to: 'down'; below: number }
  | { to: 'top' }
  | { to: 'status'; status: string }
  /** Dropped into the column of `status`, between the cards `above` and `below` (either may be absent). */
  | { to: 'place'; status: string; above?: number; below?: number };

/**
 * Moves an item as a board asks, in the caller's transaction, through the operations the API
 * uses: a status change through updateItem (to the bottom of the new status), a place through
 * resortItem. A drop into another column changes the status first, then the place.
 */
export async function moveItem(
  trx: Trx,
  scope: ProductScope,
  number: number,
  move: Move,
  counts: ListCounts,
  urls: Urls,
): Promise<ItemRow> {
  switch (move.to) {
    case 'up':
      return resortItem(trx, scope, number, { after: move.above });
    case 'down':
      return resortItem(trx, scope, number, { before: move.below });
    case 'status':
      return (await updateItem(trx, scope, number, parseUpdateItem({ status: move.status }), urls)).row;
    case 'place': {
      const item = await getItem(trx, scope, number);
      if (statusName(item.status) !== move.status)
        await updateItem(trx, scope, number, parseUpdateItem({ status: move.status }), urls);
      if (move.above !== undefined) return resortItem(trx, scope, number, { before: move.above });
      if (move.below !== undefined) return resortItem(trx, scope, number, { after: move.below });
      return getItem(trx, scope, number);
    }
    case 'top': {
      // Above the first top-level item of its status, unless that is the item itself.
      const item = await getItem(trx, scope, number);
      const top = listQuery({ statuses: [statusName(item.status)], limit: 1 });
      const first = (await listItems(trx, scope, top, counts)).rows[0];
      return first && first.id !== item.id ? resortItem(trx, scope, number, { after: first.number }) : item;
    }
  }
}

/**
 * The input with its description rendered as HTML, for createItem or updateItem to keep beside
 * it. Called before the write's transaction opens: a render may take up to the renderer's
 * deadline, and must hold no lock meanwhile.
 */
export async function renderDescription<T extends { description?: string; descriptionHtml?: string }>(
  markdown: MarkdownRenderer,
  input: T,
): Promise<T> {
  return input.description === undefined
    ? input
    : { ...input, descriptionHtml: (await markdown.render(input.description)) ?? undefined };
}

/**
 * The item's description as its page shows it: the HTML kept when it was written (escaped text
 * for an item from before).
 */
export async function descriptionHtmlOf(db: Db, item: ItemRow): Promise<string> {
  return item.description === '' ? '' : shownHtml(item.description, await findDescriptionHtml(db, item.id));
}

/**
 * Renders up to `batch` descriptions written before they were rendered on write, oldest first, and
 * keeps their HTML; returns how many it rendered (0: none is left, or none could be rendered now).
 * Rendered before the short transaction that keeps them; a description changed meanwhile is left
 * as its writer kept it.
 */
export async function fillDescriptionHtml(db: Db, markdown: MarkdownRenderer, batch: number): Promise<number> {
  const rows = await findUnrenderedDescriptions(db, batch);
  const rendered: { id: number; description: string; html: string }[] = [];
  for (const row of rows) {
    const html = await markdown.render(row.description);
    if (html !== null) rendered.push({ ...row, html });
  }
  if (rendered.length === 0) return 0;
  await db.transaction().execute(async (trx) => {
    for (const r of rendered) await setDescriptionHtml(trx, r.id, r.description, r.html);
  });
  return rendered.length;
}

/** The product's items of these numbers, by number; numbers that name none are left out. */
export async function findItemsByNumbers(db: Db, productId: number, numbers: number[]): Promise<ItemRow[]> {
  return repository.findItemsByNumbers(db, productId, numbers);
}

/** The items of these ids that exist, in no particular order (a mail's items, a deploy's page). */
export async function findItemsByIds(db: Db, ids: number[]): Promise<ItemRow[]> {
  return repository.findItemsByIds(db, ids);
}

/**
 * The heads (an item without its description, with the bytes of its text; see ItemHead) of the
 * product's items of these numbers, by number: what a deploy reads of the items it names.
 */
export async function findItemHeadsByNumbers(db: Db, productId: number, numbers: number[]): Promise<ItemHead[]> {
  return repository.findItemHeadsByNumbers(db, productId, numbers);
}

/** The heads of the items of these ids, in no particular order. */
export async function findItemHeadsByIds(db: Db, ids: number[]): Promise<ItemHead[]> {
  return repository.findItemHeadsByIds(db, ids);
}

/**
 * Something happened to the items (a deploy changed their `deployed_to`, someone follows one), in
 * the transaction of that change: each is a new version, and `last_activity` moves to `at` unless
 * it is later already.
 */
export async function touchActivity(trx: Trx, itemIds: number[], at: string): Promise<void> {
  await repository.touchActivity(trx, itemIds, at);
}

/**
 * The items' latest deploy to each of the environments, by item id and then environment: what a
 * page of items shows per environment, in one read of the (item, environment) key per pair.
 */
export async function deploymentsIn(
  db: Db,
  itemIds: number[],
  environments: string[],
): Promise<Map<number, Map<string, Deployment>>> {
  return repository.deploymentsIn(db, itemIds, environments);
}

/**
 * What is known of one item's deployments (a first page of them, latest first, and how many
 * there are), for presentItems, which then reads them no more.
 */
export function knownDeploymentsOf(itemId: number, deployments: Deployment[], total: number): KnownRelations {
  return repository.knownDeploymentsOf(itemId, deployments, total);
}
