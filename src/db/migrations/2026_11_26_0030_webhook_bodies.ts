import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// An event keeps the bytes every delivery sends, built once when it is written: `body` (the
// `shiplog` format) and `slack_body` (the `slack` format; empty for events written before, which
// the worker still renders from `body`). Until now deliveries parsed the stored resource and
// wrote the body again on every attempt; the delivery's id now travels in a header only, so one
// body serves every delivery. Events written before get their body here, from the payload,
// without parsing it: the payload is a JSON object, the new keys go in front of its own.
//
// Old events and deliveries are deleted by age, so both are looked up by when they were made.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_events')
    .addColumn('body', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('webhook_events')
    .addColumn('slack_body', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await sql`update webhook_events
    set body = '{"id":"' || uid || '","timestamp":"' || created_at || '","type":"' || type || '"'
    || case when payload = '{}' then '}' else ',' || substr(payload, 2) end`.execute(db);
  await db.schema.alterTable('webhook_events').dropColumn('payload').execute();
  await db.schema.createIndex('webhook_events_created').on('webhook_events').columns(['created_at']).execute();
  await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').columns(['created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_created').execute();
  await db.schema.dropIndex('webhook_events_created').execute();
  await db.schema
    .alterTable('webhook_events')
    .addColumn('payload', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  await db.schema.alterTable('webhook_events').dropColumn('slack_body').execute();
  await db.schema.alterTable('webhook_events').dropColumn('body').execute();
}
