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

/**
 * What an item's fields were before a change, for those that differ after it, in the item JSON's
 * terms: `status` by name, `assigned_to` as a person (or null), `parent` as `{number}` (or null),
 * `archived` as a boolean, `tags` (given when they changed) as the list.
 */
export async function previousValues(
  db: Db,
  before: ItemRow,
  after: ItemRow,
  tagsBefore?: string[],
): Promise<Record<string, unknown>> {
  const previous: Record<string, unknown> = {};
  for (const field of TEXT_FIELDS) if (before[field] !== after[field]) previous[field] = before[field];
  if (before.status !== after.status) previous.status = statusName(before.status);
  if (before.assigned_to_id !== after.assigned_to_id) {
    const user = before.assigned_to_id === null ? undefined : await findUserById(db, before.assigned_to_id);
    previous.assigned_to = user ? presentUser(user, NO_VIEWER) : null;
  }
  if (before.parent_id !== after.parent_id) {
    const [parent] = before.parent_id === null ? [] : await findItemsByIds(db, [before.parent_id]);
    previous.parent = parent ? { number: parent.number } : null;
  }
  if (before.archived !== after.archived) previous.archived = before.archived === 1;
  if (tagsBefore) previous.tags = tagsBefore;
  return previous;
}
