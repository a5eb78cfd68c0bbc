import type { Kysely } from 'kysely';
import { dialectOf, idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// Files attached to items, kept in the database itself so that every instance serving the product
// sees the same files (no shared disk to agree on), and backups and copies carry them along. The
// bytes come last: SQLite keeps a row's large value in overflow pages that a read of the columns
// before it never touches, and PostgreSQL keeps it out of line (TOAST), so lists and the
// product's total read the small columns only.
export async function up(db: Kysely<any>): Promise<void> {
  const bytes = dialectOf(db) === 'sqlite' ? 'blob' : 'bytea';
  await idColumn(db, db.schema.createTable('attachments'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('created_by_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('bytes', bytes, (c) => c.notNull())
    .execute();
  // An item's files, oldest first.
  await db.schema.createIndex('attachments_item').on('attachments').columns(['item_id', 'id']).execute();
  // The product's total, summed from the index alone.
  await db.schema.createIndex('attachments_product_size').on('attachments').columns(['product_id', 'size']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('attachments').execute();
}
