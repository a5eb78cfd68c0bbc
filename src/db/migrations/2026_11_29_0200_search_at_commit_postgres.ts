import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// PostgreSQL only: an item's search document is written once per transaction instead of once per
// change, as SQLite's is (2026_11_29_0100_search_at_commit). Creating an item wrote its document
// twice, once for the item and again for its tags, each a GIN insertion and the second a dead row,
// and all of it while the create held its product's row. The triggers of items and of their tags
// now note the item in `search_pending`; a trigger deferred to the commit writes each noted
// item's document once. Comments keep their own trigger: one comment is one change.

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const run = (text: string) => sql.raw(text).execute(db);
  await run(`CREATE TABLE search_pending (item_id integer PRIMARY KEY)`);
  await run(`CREATE OR REPLACE FUNCTION item_search_item() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO search_pending (item_id) VALUES (new.id) ON CONFLICT DO NOTHING; RETURN new; END $$`);
  await run(`CREATE OR REPLACE FUNCTION item_search_tags() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_pending (item_id) SELECT DISTINCT item_id FROM changed ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`);
  // A row noted once fires once (ON CONFLICT DO NOTHING inserts nothing the second time).
  await run(`CREATE FUNCTION search_pending_index() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM item_search_index(new.item_id);
      DELETE FROM search_pending WHERE item_id = new.item_id;
      RETURN NULL;
    END $$`);
  await run(`CREATE CONSTRAINT TRIGGER search_pending_index AFTER INSERT ON search_pending
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION search_pending_index()`);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  const run = (text: string) => sql.raw(text).execute(db);
  await run(`DROP TRIGGER search_pending_index ON search_pending`);
  await run(`DROP FUNCTION search_pending_index()`);
  await run(`CREATE OR REPLACE FUNCTION item_search_item() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM item_search_index(new.id); RETURN new; END $$`);
  await run(`CREATE OR REPLACE FUNCTION item_search_tags() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM item_search_index(t.item_id) FROM (SELECT DISTINCT item_id FROM changed) t; RETURN NULL; END $$`);
  await run(`DROP TABLE search_pending`);
}
