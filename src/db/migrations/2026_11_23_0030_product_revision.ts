import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// A product's revision moves with every change to what its items show (fields, tags, order,
// status, parent, archiving) and to its members: what a cached rendering of its items (the
// board) is keyed by, read from the database on each request, so every instance sees a change
// as soon as it commits. items_version moves only with changes that alter list totals.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('products')
    .addColumn('revision', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('products').dropColumn('revision').execute();
}
