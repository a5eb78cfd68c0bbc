import crypto from 'node:crypto';
import type { Db, Trx } from '../db/connection.js';
import type { ProductRow, UserRow, WebhookRow } from '../db/schema.js';
import { NotFoundError, productNotFound, UnprocessableError, ValidationError, webhookNotFound } from '../errors.js';
import { findProduct, lockProduct } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { formatTimestamp, nowTimestamp } from '../time.js';
import { fullName, presentUser } from '../users/index.js';
import type { WebhookChange, WebhookInput } from './input.js';
import { eventList, MAX_WEBHOOKS, NO_VIEWER, RETRY_WINDOW_MS, unmasked, type EventType } from './model.js';
import {
  countDeliveries,
  countWebhooks,
  deleteOldDeliveries,
  deleteOldEvents,
  deleteWebhookRow,
  deliveriesPage,
  enabledWebhooks,
  failPending,
  findDeliveryByUid,
  findWebhook,
  findWebhooksByIds,
  insertDeliveries,
  insertEvent,
  insertWebhook,
  listWebhookRows,
  nextReplay,
  updateWebhookRow,
  type LoggedDelivery,
} from './repository.js';
import { eventBodies, type EventParts } from './payload.js';
import { checkTarget, ForbiddenTargetError } from './targets.js';

/** A new delivery of an event to a webhook: due now, retried for a day. */
function newDelivery(webhookId: number, eventId: number, replay: number, now: Date) {
  return {
    uid: crypto.randomUUID(),
    webhook_id: webhookId,
    event_id: eventId,
    replay,
    status: 'pending',
    attempts: 0,
    next_attempt_at: formatTimestamp(now),
    retry_until: formatTimestamp(new Date(now.getTime() + RETRY_WINDOW_MS)),
    created_at: formatTimestamp(now),
  };
}

/** Something a change did, for the product's webhooks. */
export interface NewEvent {
  product: ProductRow;
  actor: UserRow;
  type: EventType;
  /**
   * The event's own part: a summary of the resource (`item`, `deploy` with its first items) and,
   * for updates, `changes`. Called only when some webhook wants the event.
   */
  render: () => Promise<EventParts>;
}

/**
 * Writes an event, and one delivery to each enabled webhook of the product that wants it, in
 * the caller's transaction: rolled back with the change, it never happened; committed, a worker
 * sends it. Its bodies are built here, once, bounded (see eventBodies); every delivery, retry and
 * replay sends them as they are. A product without such webhooks costs the one indexed query
 * that finds none.
 */
export async function queueEvent(trx: Trx, event: NewEvent): Promise<void> {
  const wanting = (await enabledWebhooks(trx, event.product.id)).filter((w) =>
    eventList(w.events).includes(event.type),
  );
  if (wanting.length === 0) return;
  const now = new Date();
  const uid = crypto.randomUUID();
  const head = {
    id: uid,
    timestamp: formatTimestamp(now),
    type: event.type,
    product: { id: event.product.id, name: event.product.name },
    actor: presentUser(event.actor, NO_VIEWER),
  };
  const { body, slack } = eventBodies(head, await event.render());
  const eventId = await insertEvent(trx, {
    uid,
    product_id: event.product.id,
    type: event.type,
    body,
    slack_body: slack,
    created_at: head.timestamp,
  });
  await insertDeliveries(
    trx,
    wanting.map((w) => newDelivery(w.id, eventId, 0, now)),
  );
}

/**
 * Deletes the deliveries that are over and the events no delivery needs any more, made before
 * `before`: `batch` rows per statement, each its own short transaction, with a turn for other
 * work between them, so that a large backlog never holds the database. Stops early when `stop`
 * says so. Returns what it deleted and in how many statements.
 */
export async function deleteExpired(
  db: Db,
  before: Date,
  batch: number,
  stop: () => boolean = () => false,
): Promise<{ deliveries: number; events: number; statements: number }> {
  const at = formatTimestamp(before);
  const done = { deliveries: 0, events: 0, statements: 0 };
  for (const [kind, remove] of [
    ['deliveries', deleteOldDeliveries],
    ['events', deleteOldEvents],
  ] as const) {
    while (!stop()) {
      const n = await remove(db, at, batch);
      done[kind] += n;
      done.statements += 1;
      if (n < batch) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return done;
}

/**
 * Refuses (400 naming `url`) a target that is not, or whose name does not resolve only to, global
 * unicast addresses (see targets.ts), unless the operator allows them. Called before the change's transaction opens:
 * resolving a name may take a while.
 */
export async function vetTarget(url: URL | undefined, allowPrivate: boolean): Promise<void> {
  if (!url) return;
  try {
    await checkTarget(url, allowPrivate);
  } catch (err) {
    if (!(err instanceof ForbiddenTargetError)) throw err;
    throw new ValidationError({ url: `must lead to a public address (${err.message})` });
  }
}

export async function getWebhook(db: Db, scope: ProductScope, id: number): Promise<WebhookRow> {
  const webhook = await findWebhook(db, scope.product.id, id);
  if (!webhook) throw webhookNotFound();
  return webhook;
}

export async function listWebhooks(db: Db, scope: ProductScope): Promise<WebhookRow[]> {
  return listWebhookRows(db, scope.product.id);
}

/**
 * Adds a webhook (checked with vetTarget first). Its secret is the one given, or a new one; the
 * caller shows it this once. 422 when the product has MAX_WEBHOOKS already.
 */
export async function createWebhook(
  trx: Trx,
  scope: ProductScope,
  input: WebhookInput,
): Promise<{ webhook: WebhookRow; secret: string }> {
  // Two admins adding at once count one after the other.
  await lockProduct(trx, scope.product.id);
  if ((await countWebhooks(trx, scope.product.id)) >= MAX_WEBHOOKS) {
    throw new UnprocessableError(`A product can have at most ${MAX_WEBHOOKS} webhooks; delete one first.`);
  }
  const secret = input.secret ?? `whsec_${crypto.randomBytes(24).toString('base64url')}`;
  const webhook = await insertWebhook(trx, {
    product_id: scope.product.id,
    url: input.url.href,
    events: input.events.join(','),
    format: input.format,
    secret,
    created_by_id: scope.user.id,
    created_at: nowTimestamp(),
    disabled_at: null,
    disabled_reason: null,
    failing_since: null,
  });
  return { webhook, secret };
}

/**
 * Changes a webhook's target, events or format; `enabled` true re-enables it (its failures
 * forgotten), false disables it, naming who did. A URL given with its credentials masked, as
 * shown, keeps the stored ones. Deliveries waiting when it is disabled are given up.
 */
export async function updateWebhook(
  trx: Trx,
  scope: ProductScope,
  id: number,
  change: WebhookChange,
): Promise<WebhookRow> {
  const webhook = await getWebhook(trx, scope, id);
  const now = nowTimestamp();
  const fields = {
    ...(change.url ? { url: unmasked(change.url, webhook.url).href } : {}),
    ...(change.events ? { events: change.events.join(',') } : {}),
    ...(change.format ? { format: change.format } : {}),
  };
  if (change.enabled === true)
    Object.assign(fields, { disabled_at: null, disabled_reason: null, consecutive_failures: 0, failing_since: null });
  const disabling = change.enabled === false && webhook.disabled_at === null;
  if (disabling) Object.assign(fields, { disabled_at: now, disabled_reason: `Disabled by ${fullName(scope.user)}.` });
  if (Object.keys(fields).length === 0) return webhook;
  const updated = await updateWebhookRow(trx, webhook.id, fields);
  if (disabling) await failPending(trx, webhook.id, updated.disabled_reason!);
  return updated;
}

/** Deletes a webhook, its delivery log and the events only it got; answers with it as it was. */
export async function deleteWebhook(trx: Trx, scope: ProductScope, id: number): Promise<WebhookRow> {
  const webhook = await getWebhook(trx, scope, id);
  await deleteWebhookRow(trx, webhook.id);
  return webhook;
}

/** One page of a webhook's deliveries, newest first, and how many it has. */
export async function deliveriesOf(
  db: Db,
  scope: ProductScope,
  id: number,
  page: { offset: number; limit: number },
): Promise<{ rows: LoggedDelivery[]; total: number }> {
  const webhook = await getWebhook(db, scope, id);
  const rows = await deliveriesPage(db, [webhook.id], page.offset, page.limit);
  const total = page.offset === 0 && rows.length < page.limit ? rows.length : await countDeliveries(db, webhook.id);
  return { rows, total };
}

/** The latest deliveries of a product's webhooks (or of one), newest first: the operator's log. */
export async function deliveryLog(
  db: Db,
  productId: number,
  webhookId: number | undefined,
  limit: number,
): Promise<LoggedDelivery[]> {
  if (!(await findProduct(db, productId))) throw productNotFound();
  const webhooks = await listWebhookRows(db, productId);
  const ids =
    webhookId === undefined ? webhooks.map((w) => w.id) : webhooks.filter((w) => w.id === webhookId).map((w) => w.id);
  if (webhookId !== undefined && ids.length === 0) throw webhookNotFound();
  return deliveriesPage(db, ids, 0, limit);
}

/**
 * Sends an event to a webhook again: a new delivery (its own id, due now, retried for a day) of
 * the same event, with the same event id. 404 for an unknown delivery (or one of another webhook
 * than `of`'s); 422 when the webhook is disabled (enable it first).
 */
export async function replayDelivery(
  trx: Trx,
  deliveryUid: string,
  of?: { webhookId: number },
): Promise<{ uid: string; webhook: WebhookRow; eventUid: string }> {
  const original = await findDeliveryByUid(trx, deliveryUid.trim());
  // A page replays only deliveries of the webhook it shows (of a product its caller administers).
  if (!original || (of && original.webhook_id !== of.webhookId))
    throw new NotFoundError(`No webhook delivery ${deliveryUid}.`);
  const [webhook] = await findWebhooksByIds(trx, [original.webhook_id]);
  if (webhook.disabled_at !== null) {
    throw new UnprocessableError(
      `Webhook ${webhook.id} is disabled (${webhook.disabled_reason ?? 'no reason given'}); enable it first.`,
    );
  }
  const delivery = newDelivery(
    webhook.id,
    original.event_id,
    await nextReplay(trx, webhook.id, original.event_id),
    new Date(),
  );
  await insertDeliveries(trx, [delivery]);
  return { uid: delivery.uid, webhook, eventUid: original.event_uid };
}
