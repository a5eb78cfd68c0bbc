import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// A deploy keeps which of its items were blocked by items not in its environment when it was
// recorded, as a JSON array of {"number", "blocked_by"}: its receipt (a repeat's too) and its
// mail say so.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deploys')
    .addColumn('blocked_items', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deploys').dropColumn('blocked_items').execute();
}
