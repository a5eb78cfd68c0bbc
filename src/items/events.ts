import type { Db, Trx } from '../db/connection.js';
import type { ItemRow } from '../db/schema.js';
import type { ProductScope, Urls } from '../scope.js';
import { findUserById, presentUser } from '../users/index.js';
import { NO_VIEWER, queueEvent, type EventType, type ItemSummary } from '../webhooks/index.js';
import { statusName } from './model.js';
import { findItemsByIds } from './repository.js';
import { itemShortUrl } from './urls.js';

/** An item as webhook events show it: which one, what it is, where it stands, and its link. */
export function itemSummary(
  row: Pick<ItemRow, 'product_id' | 'number' | 'title' | 'type' | 'status'>,
  urls: Urls,
): ItemSummary {
  return {
    number: row.number,
    title: row.title,
    type: row.type,
    status: statusName(row.status),
    short_url: itemShortUrl(urls.publicUrl, row),
  };
}

/**
 * Tells the product's webhooks about a change of an item, in the change's transaction: the item's
 * summary after the change and, for updates, the previous values of what changed (cut to a
 * bounded length by the event). Rendered only when a webhook wants the event.
 */
export async function announceItem(
  trx: Trx,
  scope: ProductScope,
  type: EventType,
  row: ItemRow,
  urls: Urls,
  previous?: () => Promise<Record<string, unknown>>,
): Promise<void> {
  await queueEvent(trx, {
    product: scope.product,
    actor: scope.user,
    type,
    render: async () => ({ item: itemSummary(row, urls), ...(previous ? { changes: await previous() } : {}) }),
  });
}

const TEXT_FIELDS = ['title', 'who', 'what', 'why', 'description', 'score', 'close_reason'] as const;

/** One field's value before and after a change, in the item JSON's terms (see fieldChanges). */
export interface FieldChange {
  before: unknown;
  after: unknown;
}

/**
 * The fields that differ between an item before a change and after it, each with both values in
 * the item JSON's terms: `status` by name, `assigned_to` as a person (or null), `parent` as
 * `{number}` (or null), `archived` as a boolean, `tags` (given when they changed) as the list, the
 * others as stored. For a new item (`before` undefined) the fields it was made with, before null:
 * its type and every field given a value. The one reading of what a change did, for the activity
 * log and for webhook events (previousOf).
 */
export async function fieldChanges(
  db: Db,
  before: ItemRow | undefined,
  after: ItemRow,
  tags?: { before: string[]; after: string[] },
): Promise<Record<string, FieldChange>> {
  const changes: Record<string, FieldChange> = {};
  const put = (field: string, was: unknown, now: unknown) => {
    changes[field] = { before: was, after: now };
  };
  if (!before) put('type', null, after.type);
  for (const field of TEXT_FIELDS) {
    const was = before ? before[field] : null;
    if (was !== after[field] && (before || (after[field] !== null && after[field] !== '')))
      put(field, was, after[field]);
  }
  if (before?.status !== after.status)
    put('status', before ? statusName(before.status) : null, statusName(after.status));
  const assigned = [before?.assigned_to_id ?? null, after.assigned_to_id];
  if (assigned[0] !== assigned[1]) {
    const [was, now] = await Promise.all(
      assigned.map(async (id) => {
        const user = id === null ? undefined : await findUserById(db, id);
        return user ? presentUser(user, NO_VIEWER) : null;
      }),
    );
    put('assigned_to', was, now);
  }
  const parents = [before?.parent_id ?? null, after.parent_id];
  if (parents[0] !== parents[1]) {
    const found = await findItemsByIds(
      db,
      parents.filter((id) => id !== null),
    );
    const [was, now] = parents
      .map((id) => found.find((p) => p.id === id))
      .map((p) => (p ? { number: p.number } : null));
    put('parent', was, now);
  }
  if (before && before.archived !== after.archived) put('archived', before.archived === 1, after.archived === 1);
  if (tags && (before || tags.after.length > 0)) put('tags', before ? tags.before : null, tags.after);
  return changes;
}

/** What an item's fields were before a change, for those that differ after it: what webhook events call `changes`. */
export function previousOf(changes: Record<string, FieldChange>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(changes).map(([field, change]) => [field, change.before]));
}
