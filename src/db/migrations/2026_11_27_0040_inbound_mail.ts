import type { Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// Mail that comes in (replies, files) and is refused gets one explanation back per sender address
// and hour. Which addresses were answered when is kept here rather than in a process, so that
// several instances (and `shiplog mail receive`, a process per message) agree; a row older than
// the hour is of no use and is deleted when the address, or another, is next refused. What an
// explanation says is kept beside it, for the outbox to render when it sends (outbox.refusal_id).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('inbound_senders')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('explained_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('inbound_senders_explained').on('inbound_senders').column('explained_at').execute();

  await idColumn(db, db.schema.createTable('inbound_refusals'))
    .addColumn('address', 'text', (c) => c.notNull())
    // Why it was refused (inbound/model.ts RefusalReason), and a detail of it (a file's limit).
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    // The Shiplog address it was sent to, its subject and Message-ID, as the sender wrote them.
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('in_reply_to', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema.alterTable('outbox').addColumn('refusal_id', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox').dropColumn('refusal_id').execute();
  await db.schema.dropTable('inbound_refusals').execute();
  await db.schema.dropTable('inbound_senders').execute();
}
