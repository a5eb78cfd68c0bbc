import { sql, type Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// The conversation around an item: comments, favorites, blocks between items, and annotations
// (notes left by tools). An item carries the counts it shows (`counts` in its JSON) as columns,
// moved in the transaction of each change, so that a page of items reads them with the rows and
// the favorites order is an index walk. Comment and block mail name what they are about in the
// outbox. A member may turn comment mail off per product (comment_mail_off: a row means off).
const COUNTS = ['comments_count', 'favorites_count', 'blockers_count', 'blocking_count'] as const;

export async function up(db: Kysely<any>): Promise<void> {
  for (const column of COUNTS)
    await db.schema
      .alterTable('items')
      .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  // order_by=favorites: most favorites first, then by priority; live top-level items only, as the
  // other list indexes.
  await db.schema
    .createIndex('items_listed_favorites')
    .on('items')
    .columns(['product_id', 'favorites_count desc', 'status', 'sort'])
    .where(sql.ref('archived'), '=', 0)
    .where(sql.ref('parent_id'), 'is', null)
    .execute();

  await idColumn(db, db.schema.createTable('comments'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('body', 'text', (c) => c.notNull())
    // How it came: `api`, `page` or `mail`.
    .addColumn('via', 'text', (c) => c.notNull().defaultTo('api'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_modified', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('comments_item').on('comments').columns(['item_id', 'id']).execute();

  await idColumn(db, db.schema.createTable('favorites'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('favorites_item_user', ['item_id', 'user_id'])
    .execute();

  // `item_id` blocks `blocked_id` (both of one product) until the block is removed, or marked
  // unblocked by the blocked item's assignee.
  await idColumn(db, db.schema.createTable('blocks'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('blocked_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('unblocked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('blocks_pair', ['item_id', 'blocked_id'])
    .execute();
  await db.schema.createIndex('blocks_blocked').on('blocks').columns(['blocked_id', 'id']).execute();

  await idColumn(db, db.schema.createTable('annotations'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('annotations_item').on('annotations').columns(['item_id', 'id']).execute();

  await db.schema
    .createTable('comment_mail_off')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addPrimaryKeyConstraint('comment_mail_off_pkey', ['product_id', 'user_id'])
    .execute();

  // What a `comment` or `block` message is about (see mail/notifications.ts).
  await db.schema.alterTable('outbox').addColumn('comment_id', 'integer').execute();
  await db.schema.alterTable('outbox').addColumn('block_id', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox').dropColumn('block_id').execute();
  await db.schema.alterTable('outbox').dropColumn('comment_id').execute();
  for (const table of ['comment_mail_off', 'annotations', 'blocks', 'favorites', 'comments'])
    await db.schema.dropTable(table).execute();
  await db.schema.dropIndex('items_listed_favorites').execute();
  for (const column of COUNTS) await db.schema.alterTable('items').dropColumn(column).execute();
}
