import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// A list's tag filter ignores the case of ASCII letters (items/repository.ts `foldedTag`): the
// tags of an item are found by that folded form. Each dialect's expression is the one the filter
// writes, so the index serves it (on PostgreSQL, lower() under the "C" collation folds A-Z only, as
// SQLite's lower() does).
export async function up(db: Kysely<any>): Promise<void> {
  const folded = dialectOf(db) === 'postgres' ? sql`lower(tag collate "C")` : sql`lower(tag)`;
  await sql`create index item_tags_folded on item_tags (${folded}, item_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('item_tags_folded').execute();
}
