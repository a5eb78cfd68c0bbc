import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { WebhookRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { findUsersByIds, presentUser, UserSchema } from '../users/index.js';
import { DELIVERY_STATUSES, EVENT_TYPES, eventList, FORMATS, maskedUrl } from './model.js';
import type { LoggedDelivery } from './repository.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, description?: string) =>
  Type.Union([t, Type.Null()], description ? { description } : {});

export const WebhookSchema = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String({
      description: 'Where the events are posted; a user name and password in it are shown as `***`.',
    }),
    events: Type.Array(Type.String({ enum: [...EVENT_TYPES] }), { description: 'The event types it gets.' }),
    format: Type.String({
      enum: [...FORMATS],
      description:
        '`shiplog`: the signed JSON event; ' +
        '`slack`: a message for incoming webhooks of Slack, Mattermost and Rocket.Chat.',
    }),
    enabled: Type.Boolean({ description: 'False once it was disabled, by an admin or after repeated failures.' }),
    disabled_at: Nullable(Type.String()),
    disabled_reason: Nullable(Type.String(), 'Who disabled it, or the failures that did, with the last error.'),
    consecutive_failures: Type.Integer({ description: 'Failed attempts since the last success.' }),
    failing_since: Nullable(Type.String(), 'When those failures began; null after a success.'),
    created_at: Type.String(),
    created_by: ref(UserSchema, { description: 'The admin who added it.' }),
  },
  { $id: 'Webhook', description: "A URL told about a product's changes; never its secret (docs/INTERFACE.md §10)." },
);
export type WebhookJson = Static<typeof WebhookSchema>;

/** A new webhook's answer: the webhook and, this once, its secret. */
export const CreatedWebhookSchema = Type.Object(
  { ...WebhookSchema.properties, secret: Type.String({ description: 'Signs every delivery; shown this once.' }) },
  { $id: 'CreatedWebhook', description: 'A new webhook, with its secret.' },
);

export const DeliverySchema = Type.Object(
  {
    delivery_id: Type.String({ description: 'The Shiplog-Delivery header of its requests; a replay has its own.' }),
    event_id: Type.String({ description: "The payload's `id`." }),
    event: Type.String({ enum: [...EVENT_TYPES], description: "The event's type." }),
    webhook_id: Type.Integer(),
    replay: Type.Integer({ description: '0 for the delivery the change queued, 1, 2, ... for replays.' }),
    status: Type.String({ enum: [...DELIVERY_STATUSES] }),
    response_code: Nullable(Type.Integer(), "The receiver's last status code; null when it never answered."),
    duration_ms: Nullable(Type.Integer(), 'How long the last attempt took.'),
    attempts: Type.Integer(),
    last_error: Nullable(Type.String()),
    next_attempt_at: Nullable(Type.String(), 'When a pending delivery is tried again; null otherwise.'),
    created_at: Type.String(),
    delivered_at: Nullable(Type.String()),
  },
  {
    $id: 'WebhookDelivery',
    description: 'One event sent to one webhook, as its delivery log shows it (docs/INTERFACE.md §10).',
  },
);
export type DeliveryJson = Static<typeof DeliverySchema>;

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const WEBHOOK_SCHEMAS = [WebhookSchema, CreatedWebhookSchema, DeliverySchema];

/** Webhooks as JSON (never their secrets), their creators as the caller sees them, in one query. */
export async function presentWebhooks(db: Db, rows: WebhookRow[], viewerId: number): Promise<WebhookJson[]> {
  const users = new Map(
    (await findUsersByIds(db, [...new Set(rows.map((r) => r.created_by_id))])).map((u) => [u.id, u]),
  );
  return rows.map((row) => ({
    id: row.id,
    url: maskedUrl(row.url),
    events: eventList(row.events),
    format: row.format,
    enabled: row.disabled_at === null,
    disabled_at: row.disabled_at,
    disabled_reason: row.disabled_reason,
    consecutive_failures: row.consecutive_failures,
    failing_since: row.failing_since,
    created_at: row.created_at,
    created_by: presentUser(users.get(row.created_by_id)!, viewerId),
  }));
}

/** A delivery as the log shows it; `next_attempt_at` only while it waits for one. */
export function presentDelivery(row: LoggedDelivery): DeliveryJson {
  return {
    delivery_id: row.uid,
    event_id: row.event_uid,
    event: row.event_type,
    webhook_id: row.webhook_id,
    replay: row.replay,
    status: row.status,
    response_code: row.response_code,
    duration_ms: row.duration_ms,
    attempts: row.attempts,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
    delivered_at: row.delivered_at,
  };
}
