import type { Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// The activity log: one row per change of an item (who, what, when, and a bounded JSON `meta` of
// what changed), written in the change's transaction. Pages of a product's log and of an item's
// are read newest first from their own index, a page's rows only. What is counted is kept as
// counters beside it, one row per item and one per product (item_id 0), moved by the same
// statements that add activities, so that a page's total is one read of a key whatever the
// length of the log. The log starts empty: changes made before are not reconstructed.
export async function up(db: Kysely<any>): Promise<void> {
  await idColumn(db, db.schema.createTable('activities'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    // Item numbers never change: the log shows them without reading the items.
    .addColumn('item_number', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('meta', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('activities_product').on('activities').columns(['product_id', 'id']).execute();
  await db.schema.createIndex('activities_item').on('activities').columns(['item_id', 'id']).execute();

  await db.schema
    .createTable('activity_counts')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('item_id', 'integer', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('activity_counts_key', ['product_id', 'item_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('activity_counts').execute();
  await db.schema.dropTable('activities').execute();
}
