import { sql, type Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
export async function up(db: Kysely<any>): Promise<void> {
  await idColumn(db, db.schema.createTable('users'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('api_key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_login', 'text')
    .execute();

  await idColumn(db, db.schema.createTable('products'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_number', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('items_version', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('memberships')
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('memberships_pk', ['product_id', 'user_id'])
    .execute();
  await db.schema.createIndex('memberships_user').on('memberships').columns(['user_id']).execute();

  await idColumn(db, db.schema.createTable('items'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('who', 'text')
    .addColumn('what', 'text')
    .addColumn('why', 'text')
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('score', 'text', (c) => c.notNull())
    .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('assigned_to_id', 'integer', (c) => c.references('users.id'))
    .addColumn('parent_id', 'integer', (c) => c.references('items.id'))
    .addColumn('sort', 'bigint', (c) => c.notNull())
    .addColumn('close_reason', 'text')
    .addColumn('started_at', 'text')
    .addColumn('closed_at', 'text')
    .addColumn('accepted_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_modified', 'text', (c) => c.notNull())
    .addColumn('last_activity', 'text', (c) => c.notNull())
    .addUniqueConstraint('items_product_number', ['product_id', 'number'])
    .execute();
  // One position per status: the database itself refuses two items at one place.
  await db.schema
    .createIndex('items_position')
    .on('items')
    .columns(['product_id', 'status', 'sort'])
    .unique()
    .execute();
  await db.schema.createIndex('items_parent').on('items').columns(['parent_id', 'status', 'sort']).execute();
  // Lists show live top-level items: partial indexes hold just those, in each order lists ask for,
  // with the status alongside so the default status filter needs no row look-up.
  const listed = (name: string, columns: string[]) =>
    db.schema
      .createIndex(name)
      .on('items')
      .columns(columns)
      .where(sql.ref('archived'), '=', 0)
      .where(sql.ref('parent_id'), 'is', null)
      .execute();
  await listed('items_listed_priority', ['product_id', 'status', 'sort']);
  await listed('items_listed_created', ['product_id', 'created_at', 'number', 'status']);
  await listed('items_listed_modified', ['product_id', 'last_modified', 'number', 'status']);
  await listed('items_listed_activity', ['product_id', 'last_activity', 'number', 'status']);
  // `archived` leads after the product so that filtered lists pick these over the position index.
  await listed('items_listed_assigned', ['product_id', 'archived', 'assigned_to_id', 'status', 'sort']);
  await listed('items_listed_creator', ['product_id', 'archived', 'created_by_id', 'status', 'sort']);
  await db.schema.createIndex('items_assigned').on('items').columns(['assigned_to_id']).execute();
  await db.schema.createIndex('items_created_by').on('items').columns(['created_by_id']).execute();

  await db.schema
    .createTable('item_tags')
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_tags_pk', ['item_id', 'tag'])
    .execute();
  await db.schema.createIndex('item_tags_tag').on('item_tags').columns(['tag', 'item_id']).execute();

  await db.schema
    .createTable('followers')
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('followers_pk', ['item_id', 'user_id'])
    .execute();
  await db.schema.createIndex('followers_user').on('followers').columns(['user_id']).execute();

  await idColumn(db, db.schema.createTable('deploys'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('notes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    .addColumn('request_hash', 'text')
    .addUniqueConstraint('deploys_idempotency', ['product_id', 'user_id', 'idempotency_key'])
    .execute();
  await db.schema
    .createIndex('deploys_product_env')
    .on('deploys')
    .columns(['product_id', 'environment', 'id'])
    .execute();

  await db.schema
    .createTable('deploy_items')
    .addColumn('deploy_id', 'integer', (c) => c.notNull().references('deploys.id').onDelete('cascade'))
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('deploy_items_pk', ['deploy_id', 'item_id'])
    .execute();
  await db.schema.createIndex('deploy_items_item').on('deploy_items').columns(['item_id']).execute();

  await db.schema
    .createTable('item_deployments')
    .addColumn('item_id', 'integer', (c) => c.notNull().references('items.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('deploy_id', 'integer', (c) => c.notNull().references('deploys.id').onDelete('cascade'))
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('deployed_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_deployments_pk', ['item_id', 'environment'])
    .execute();

  await idColumn(db, db.schema.createTable('outbox'))
    .addColumn('deploy_id', 'integer', (c) => c.references('deploys.id').onDelete('set null'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body_text', 'text', (c) => c.notNull())
    .addColumn('body_html', 'text', (c) => c.notNull())
    .addColumn('item_ids', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('retry_until', 'text', (c) => c.notNull())
    .addColumn('lease_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text')
    .addColumn('unsubscribed_at', 'text')
    .execute();
  await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();

  // Values the service makes for itself once and shares between instances (signing keys).
  await db.schema
    .createTable('settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'settings',
    'outbox',
    'item_deployments',
    'deploy_items',
    'deploys',
    'followers',
    'item_tags',
    'items',
    'memberships',
    'products',
    'users',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
