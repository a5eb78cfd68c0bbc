import type { Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// Webhooks of a product; the events of its changes (written in the change's transaction, with
// the resource as it was then); and one delivery per event and webhook, which a worker claims
// and sends after commit. A replay is another delivery of the same event (`replay` 1, 2, ...).
export async function up(db: Kysely<any>): Promise<void> {
  await idColumn(db, db.schema.createTable('webhooks'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_by_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('disabled_at', 'text')
    .addColumn('disabled_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failing_since', 'text')
    .execute();
  // Every change of a product asks which of its webhooks want the event.
  await db.schema.createIndex('webhooks_product').on('webhooks').columns(['product_id']).execute();

  await idColumn(db, db.schema.createTable('webhook_events'))
    .addColumn('uid', 'text', (c) => c.notNull().unique())
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await idColumn(db, db.schema.createTable('webhook_deliveries'))
    .addColumn('uid', 'text', (c) => c.notNull().unique())
    .addColumn('webhook_id', 'integer', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('event_id', 'integer', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
    .addColumn('replay', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('retry_until', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'text')
    .addColumn('response_code', 'integer')
    .addColumn('duration_ms', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .addUniqueConstraint('webhook_deliveries_once', ['webhook_id', 'event_id', 'replay'])
    .execute();
  // Claims walk the due deliveries; the log pages a webhook's deliveries newest first.
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_log')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').columns(['event_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhook_events').execute();
  await db.schema.dropTable('webhooks').execute();
}
