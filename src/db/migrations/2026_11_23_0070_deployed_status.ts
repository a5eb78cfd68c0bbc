import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// Each entry of what is deployed where carries its item's status, kept equal to the item's in the
// transaction that changes it, so that a `deployed_to` list reads the entries of an environment in
// the statuses it asks for alone: few, where an environment holds many items but few of them in
// those statuses (production holds the done items; lists ask for the open ones).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('item_deployments')
    .addColumn('status', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update item_deployments
    set status = (select status from items where items.id = item_deployments.item_id)`.execute(db);
  if (dialectOf(db) === 'postgres')
    await sql`alter table item_deployments alter column status drop default`.execute(db);
  await db.schema
    .createIndex('item_deployments_current_status')
    .on('item_deployments')
    .columns(['product_id', 'environment', 'status', 'item_id'])
    .where(sql.ref('reverted_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('item_deployments_current_status').execute();
  await db.schema.alterTable('item_deployments').dropColumn('status').execute();
}
