import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// A page of deploys embeds a summary of each deploy's items, kept on the deploy when it is written,
// so that a page is read from the deploys alone instead of rendering hundreds of items. The
// summaries are JSON kept as bytes (a BLOB, bytea), which is what the answer is made of: read as
// text, they would be decoded into strings only to be encoded again. The count comes first, so that
// reading it does not read the summaries. Deploys from before have neither (null): the first page
// that shows one keeps them then (see the deploys' service), from the items as they are then.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deploys').addColumn('item_count', 'integer').execute();
  const bytes = dialectOf(db) === 'sqlite' ? 'blob' : 'bytea';
  await db.schema.alterTable('deploys').addColumn('item_summaries', bytes).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deploys').dropColumn('item_summaries').execute();
  await db.schema.alterTable('deploys').dropColumn('item_count').execute();
}
