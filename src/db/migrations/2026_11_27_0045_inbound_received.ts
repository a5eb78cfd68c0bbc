import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// The Message-IDs of the mail an item took, for a while: a relay that did not hear the answer to a
// message it handed over (a connection lost after the data was taken) hands it over again, and the
// second copy must add nothing. Written in the transaction that adds what the message brought.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('inbound_messages')
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('inbound_messages_pkey', ['item_id', 'message_id'])
    .execute();
  await db.schema.createIndex('inbound_messages_received').on('inbound_messages').column('received_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('inbound_messages').execute();
}
