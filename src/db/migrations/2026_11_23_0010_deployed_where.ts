import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// What is deployed where, exactly: rollbacks (a deploy that says an environment runs an earlier
// version again, and the deploys it undid), an item's latest deploy per environment that a
// rollback reverted, the receipt of a deploy that a retry with its Idempotency-Key answers again,
// and an index by which item lists filter on where items are deployed now.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('deploys')
    .addColumn('rollback', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Set on a deploy a later rollback undid: when, and by which rollback deploy.
  await db.schema.alterTable('deploys').addColumn('reverted_at', 'text').execute();
  await db.schema
    .alterTable('deploys')
    .addColumn('reverted_by', 'integer', (c) => c.references('deploys.id').onDelete('set null'))
    .execute();
  // The receipt: numbers of the request that named no item (a JSON array, in request order) and
  // how many people the deploy mailed.
  await db.schema
    .alterTable('deploys')
    .addColumn('unknown_numbers', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .alterTable('deploys')
    .addColumn('emailed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update deploys set emailed = (select count(*) from outbox where outbox.deploy_id = deploys.id)
            where exists (select 1 from outbox where outbox.deploy_id = deploys.id)`.execute(db);

  // On a rollback's items: the deploy whose version the item's entry went back to (null: the
  // entry was reverted, no earlier deploy to the environment had the item).
  await db.schema
    .alterTable('deploy_items')
    .addColumn('restored_deploy_id', 'integer', (c) => c.references('deploys.id').onDelete('set null'))
    .execute();

  // An entry a rollback reverted stays (the item was deployed there), marked with when and by
  // which rollback deploy. The product is copied from the item so that a list's filter reads the
  // product's own entries of an environment, not every product's.
  await db.schema.alterTable('item_deployments').addColumn('reverted_at', 'text').execute();
  await db.schema
    .alterTable('item_deployments')
    .addColumn('reverted_by', 'integer', (c) => c.references('deploys.id').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('item_deployments')
    .addColumn('product_id', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update item_deployments
    set product_id = (select product_id from items where items.id = item_deployments.item_id)`.execute(db);
  if (dialectOf(db) === 'postgres')
    await sql`alter table item_deployments alter column product_id drop default`.execute(db);
  // `deployed_to` / `not_deployed_to` of item lists: the items of a product deployed (and not
  // reverted) to an environment, walked from here, or probed item by item.
  await db.schema
    .createIndex('item_deployments_current')
    .on('item_deployments')
    .columns(['product_id', 'environment', 'item_id'])
    .where(sql.ref('reverted_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('item_deployments_current').execute();
  for (const column of ['product_id', 'reverted_by', 'reverted_at'])
    await db.schema.alterTable('item_deployments').dropColumn(column).execute();
  await db.schema.alterTable('deploy_items').dropColumn('restored_deploy_id').execute();
  for (const column of ['emailed', 'unknown_numbers', 'reverted_by', 'reverted_at', 'rollback'])
    await db.schema.alterTable('deploys').dropColumn(column).execute();
}
