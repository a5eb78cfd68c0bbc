import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { WebhookRow } from '../db/schema.js';
import { findUsersByIds, presentUser, UserSchema } from '../users/index.js';
import { eventList } from './model.js';
import type { LoggedDelivery } from './repository.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const WebhookSchema = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  format: Type.String(),
  enabled: Type.Boolean(),
  disabled_at: Nullable(Type.String()),
  disabled_reason: Nullable(Type.String()),
  consecutive_failures: Type.Integer(),
  failing_since: Nullable(Type.String()),
  created_at: Type.String(),
  created_by: UserSchema,
});
export type WebhookJson = Static<typeof WebhookSchema>;

/** A new webhook's answer: the webhook and, this once, its secret. */
export const CreatedWebhookSchema = Type.Object({ ...WebhookSchema.properties, secret: Type.String() });

export const DeliverySchema = Type.Object({
  delivery_id: Type.String(),
  event_id: Type.String(),
  event: Type.String(),
  webhook_id: Type.Integer(),
  replay: Type.Integer(),
  status: Type.String(),
  response_code: Nullable(Type.Integer()),
  duration_ms: Nullable(Type.Integer()),
  attempts: Type.Integer(),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Type.String()),
  created_at: Type.String(),
  delivered_at: Nullable(Type.String()),
});
export type DeliveryJson = Static<typeof DeliverySchema>;

/** Webhooks as JSON (never their secrets), their creators as the caller sees them, in one query. */
export async function presentWebhooks(db: Db, rows: WebhookRow[], viewerId: number): Promise<WebhookJson[]> {
  const users = new Map((await findUsersByIds(db, [...new Set(rows.map((r) => r.created_by_id))])).map((u) => [u.id, u]));
  return rows.map((row) => ({
    id: row.id,
    url: row.url,
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
