import { sql, type Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// Open work (backlog and in-progress, the lists people read all day and the default list) ordered
// by when items were created, changed or active: indexes of just those top-level items, so that a
// page deep in them walks the open items before it, not every item of the product (a seventh of
// them at a million). Lists ask for these two statuses as constants (items/repository.ts), which
// is what lets a query use an index with a WHERE clause.
//
// A product's order_version moves with every change to which items its lists hold or in what
// order they stand by priority or by creation (not with changes of text): the pages of those
// orders are kept by it (items/counts.ts ListPages, kept-answers.ts). item_changes lists, per
// product revision, the items whose JSON a change of text alone changed, so that an answer of
// those orders is kept until one of its own items changes, on every instance.
const OPEN = sql<boolean>`archived = 0 and parent_id is null and status in (1, 2)`;

export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, column] of [
    ['items_open_created', 'created_at'],
    ['items_open_modified', 'last_modified'],
    ['items_open_activity', 'last_activity'],
  ] as const) {
    await db.schema.createIndex(name).on('items').columns(['product_id', column, 'number']).where(OPEN).execute();
  }
  await db.schema
    .alterTable('products')
    .addColumn('order_version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('item_changes')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('item_id', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_changes_pkey', ['product_id', 'revision', 'item_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('item_changes').execute();
  await db.schema.alterTable('products').dropColumn('order_version').execute();
  for (const name of ['items_open_created', 'items_open_modified', 'items_open_activity'])
    await db.schema.dropIndex(name).execute();
}
