import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// An item's deploys, in the order they were recorded, straight from the link table: the item's
// entries in deploy order, each joined to its deploy. With the item alone in the index, a planner
// ordering by deploy walked every deploy of the product instead, probing each for the item.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('deploy_items_item_deploy')
    .on('deploy_items')
    .columns(['item_id', 'deploy_id'])
    .execute();
  await db.schema.dropIndex('deploy_items_item').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('deploy_items_item').on('deploy_items').column('item_id').execute();
  await db.schema.dropIndex('deploy_items_item_deploy').execute();
}
