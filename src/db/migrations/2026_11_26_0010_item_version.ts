import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// An item's version moves, in the change's own transaction, with every change to what the item
// itself shows (its fields, status, order, tags, assignee, parent, archiving, deploys, activity):
// what its ETag names, and what If-Match and the edit form compare, so that no edit overwrites
// one it has not seen. A counter, not a time: two changes within one clock tick still differ.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('items')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('items').dropColumn('version').execute();
}
