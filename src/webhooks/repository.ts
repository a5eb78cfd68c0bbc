import type { Insertable, Updateable } from 'kysely';
import type { Db, Trx } from '../db/connection.js';
import { prepared } from '../db/prepared.js';
import { claimDue as claimLeased, settleClaim } from '../jobs/repository.js';
import {
  storableId,
  type WebhookDeliveriesTable,
  type WebhookDeliveryRow,
  type WebhookEventRow,
  type WebhookRow,
  type WebhooksTable,
} from '../db/schema.js';

export async function insertWebhook(trx: Trx, row: Insertable<WebhooksTable>): Promise<WebhookRow> {
  return trx.insertInto('webhooks').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findWebhook(db: Db, productId: number, id: number): Promise<WebhookRow | undefined> {
  if (!storableId(id)) return undefined;
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('product_id', '=', productId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function findWebhooksByIds(db: Db, ids: number[]): Promise<WebhookRow[]> {
  return ids.length ? db.selectFrom('webhooks').selectAll().where('id', 'in', ids).execute() : [];
}

export async function listWebhookRows(db: Db, productId: number): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().where('product_id', '=', productId).orderBy('id').execute();
}

/** The enabled webhooks of a product and their events: what every change of the product asks (by the product index). */
export async function enabledWebhooks(db: Db, productId: number): Promise<Pick<WebhookRow, 'id' | 'events'>[]> {
  return enabledOf(db, productId);
}

// Read by every change of an item: built and compiled once.
const enabledOf = prepared((db, productId: number) =>
  db
    .selectFrom('webhooks')
    .select(['id', 'events'])
    .where('product_id', '=', productId)
    .where('disabled_at', 'is', null),
);

export async function countWebhooks(db: Db, productId: number): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function updateWebhookRow(trx: Trx, id: number, changes: Updateable<WebhooksTable>): Promise<WebhookRow> {
  return trx.updateTable('webhooks').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * Deletes a webhook, its deliveries, and the events that only its deliveries needed (those that
 * other webhooks of the product got too stay with theirs).
 */
export async function deleteWebhookRow(trx: Trx, id: number): Promise<void> {
  await trx
    .deleteFrom('webhook_events')
    .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('event_id').where('webhook_id', '=', id))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_deliveries as other')
            .select('other.id')
            .whereRef('other.event_id', '=', 'webhook_events.id')
            .where('other.webhook_id', '<>', id),
        ),
      ),
    )
    .execute();
  await trx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
  await trx.deleteFrom('webhooks').where('id', '=', id).execute();
}

/**
 * Deletes up to `limit` deliveries made before `before` that are over (delivered or failed), the
 * oldest first (the created_at index); returns how many. One short statement, so that a large
 * backlog is deleted a little at a time.
 */
export async function deleteOldDeliveries(db: Db, before: string, limit: number): Promise<number> {
  const res = await db
    .deleteFrom('webhook_deliveries')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('created_at', '<', before)
        .where('status', 'in', ['delivered', 'failed'])
        .orderBy('created_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * Deletes up to `limit` events made before `before` that no delivery points at any more (a replay
 * keeps its event); returns how many.
 */
export async function deleteOldEvents(db: Db, before: string, limit: number): Promise<number> {
  const res = await db
    .deleteFrom('webhook_events')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_events as e')
        .select('e.id')
        .where('e.created_at', '<', before)
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'e.id'))),
        )
        .orderBy('e.created_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

export async function insertEvent(trx: Trx, row: Omit<WebhookEventRow, 'id'>): Promise<number> {
  const inserted = await trx.insertInto('webhook_events').values(row).returning('id').executeTakeFirstOrThrow();
  return inserted.id;
}

export async function findEventsByIds(db: Db, ids: number[]): Promise<WebhookEventRow[]> {
  return ids.length ? db.selectFrom('webhook_events').selectAll().where('id', 'in', ids).execute() : [];
}

export async function insertDeliveries(trx: Trx, rows: Insertable<WebhookDeliveriesTable>[]): Promise<void> {
  if (rows.length) await trx.insertInto('webhook_deliveries').values(rows).execute();
}

/** A delivery as the log shows it: with its event's id and type. */
export type LoggedDelivery = WebhookDeliveryRow & { event_uid: string; event_type: string };

function loggedDeliveries(db: Db) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .selectAll('d')
    .select(['e.uid as event_uid', 'e.type as event_type']);
}

/** One page of a webhook's deliveries, newest first (the (webhook_id, id) index). */
export async function deliveriesPage(
  db: Db,
  webhookIds: number[],
  offset: number,
  limit: number,
): Promise<LoggedDelivery[]> {
  if (webhookIds.length === 0) return [];
  return loggedDeliveries(db)
    .where('d.webhook_id', 'in', webhookIds)
    .orderBy('d.id', 'desc')
    .offset(offset)
    .limit(limit)
    .execute();
}

export async function countDeliveries(db: Db, webhookId: number): Promise<number> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('webhook_id', '=', webhookId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function findDeliveryByUid(db: Db, uid: string): Promise<LoggedDelivery | undefined> {
  return loggedDeliveries(db).where('d.uid', '=', uid).executeTakeFirst();
}

/** The next replay number of an event's deliveries to a webhook. */
export async function nextReplay(trx: Trx, webhookId: number, eventId: number): Promise<number> {
  const row = await trx
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.max('replay').as('last'))
    .where('webhook_id', '=', webhookId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
  return Number(row?.last ?? -1) + 1;
}

/** How many more deliveries this worker may have in flight to each webhook (absent: `perWebhook`). */
export interface Shares {
  perWebhook: number;
  inFlight: ReadonlyMap<number, number>;
}

/**
 * Takes up to `limit` due deliveries under a lease, as the mail outbox does (see
 * jobs/repository.ts claimDue). No webhook gets more than its share of the worker (`shares`):
 * webhooks at their share are left out of the look-up, so that a backlog of one cannot hide the
 * others' deliveries, and of the candidates each webhook's first ones are taken up to its share.
 */
export async function claimDue(
  db: Db,
  now: string,
  leaseUntil: string,
  limit: number,
  shares: Shares,
): Promise<WebhookDeliveryRow[]> {
  const full = [...shares.inFlight].filter(([, n]) => n >= shares.perWebhook).map(([id]) => id);
  const taken = new Map(shares.inFlight);
  const admit = (webhookId: number) => {
    const n = taken.get(webhookId) ?? 0;
    if (n >= shares.perWebhook) return false;
    taken.set(webhookId, n + 1);
    return true;
  };
  return claimLeased(db, 'webhook_deliveries', {
    now,
    leaseUntil,
    limit,
    only: full.length ? (eb) => eb('webhook_id', 'not in', full) : undefined,
    share: { column: 'webhook_id', admit },
  });
}

/** A claimed delivery: its outcome is recorded only while the claim is still this worker's. */
export type Claim = Pick<WebhookDeliveryRow, 'id' | 'attempts'>;

/** Writes a claimed delivery's outcome; false when the claim had lapsed (another worker took it over). */
export async function recordAttempt(
  trx: Trx,
  claim: Claim,
  changes: Updateable<WebhookDeliveriesTable>,
): Promise<boolean> {
  return settleClaim(trx, 'webhook_deliveries', claim, changes);
}

/** A failed attempt counts against its webhook, while enabled; returns the webhook as it is then. */
export async function countFailure(trx: Trx, webhookId: number, now: string): Promise<WebhookRow | undefined> {
  return trx
    .updateTable('webhooks')
    .set((eb) => ({
      consecutive_failures: eb('consecutive_failures', '+', 1),
      failing_since: eb.fn.coalesce('failing_since', eb.val(now)),
    }))
    .where('id', '=', webhookId)
    .where('disabled_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function clearFailures(trx: Trx, webhookId: number): Promise<void> {
  await trx
    .updateTable('webhooks')
    .set({ consecutive_failures: 0, failing_since: null })
    .where('id', '=', webhookId)
    .where((eb) => eb.or([eb('consecutive_failures', '>', 0), eb('failing_since', 'is not', null)]))
    .execute();
}

/** Stops a webhook getting events, saying why, and gives up its waiting deliveries. */
export async function disableWebhook(trx: Trx, webhookId: number, at: string, reason: string): Promise<void> {
  await trx
    .updateTable('webhooks')
    .set({ disabled_at: at, disabled_reason: reason })
    .where('id', '=', webhookId)
    .execute();
  await failPending(trx, webhookId, reason);
}

/**
 * Gives up the deliveries still waiting for a webhook (it was disabled): those tried before keep
 * their last error, the others say why they were never sent.
 */
export async function failPending(trx: Trx, webhookId: number, reason: string): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({ status: 'failed', last_error: eb.fn.coalesce('last_error', eb.val(reason)) }))
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .execute();
}
