import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
export async function up(db: Kysely<any>): Promise<void> {
  // An item's latest deploys first, straight from the index: `deployed_to` shows only the
  // latest few environments, however many the item went to.
  await db.schema
    .createIndex('item_deployments_latest')
    .on('item_deployments')
    .columns(['item_id', 'deploy_id'])
    .execute();
  // A page of a product's deploys of every environment, oldest or newest first, without sorting them all.
  await db.schema.createIndex('deploys_product').on('deploys').columns(['product_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deploys_product').execute();
  await db.schema.dropIndex('item_deployments_latest').execute();
}
