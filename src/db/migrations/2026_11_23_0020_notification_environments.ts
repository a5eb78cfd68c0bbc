import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// Which deploy environments email a person, per product: one row per environment they chose.
// No rows for a (product, user) is the default, every environment, so nobody needs a row.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('notification_environments')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('notification_environments_pk', ['product_id', 'user_id', 'environment'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('notification_environments').execute();
}
