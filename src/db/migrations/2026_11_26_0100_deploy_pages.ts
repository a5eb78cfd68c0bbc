import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// A page of deploys embeds a summary of each deploy's items, kept on the deploy when it is written,
// so that a page is read from the deploys alone instead of rendering hundreds of items. Deploys
// from before have none (null): the first page that shows one keeps it then (see the deploys'
// service), from the items as they are at that moment.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deploys').addColumn('item_summaries', 'text').execute();
  await db.schema.alterTable('deploys').addColumn('item_count', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deploys').dropColumn('item_count').execute();
  await db.schema.alterTable('deploys').dropColumn('item_summaries').execute();
}
