import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// What every item's JSON and page read per item, from an index alone: its tags in order, and its
// first followers by when they began. Keyed by (item, tag) and (item, user), the tables' own keys
// sent each look-up on to the row for the rest (and then to a sort): a page read more for each
// item, at random places of a big database.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('item_tags_in_order').on('item_tags').columns(['item_id', 'position', 'tag']).execute();
  await db.schema
    .createIndex('followers_in_order')
    .on('followers')
    .columns(['item_id', 'created_at', 'user_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('followers_in_order').execute();
  await db.schema.dropIndex('item_tags_in_order').execute();
}
