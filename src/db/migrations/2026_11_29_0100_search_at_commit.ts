import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';
import { sqliteIndex } from './2026_11_28_0100_search.js';

// Frozen once released: later changes go into new migrations.
//
// SQLite only: the search index is written once per commit instead of once per change (see
// db/search-index.ts). The triggers that indexed an item themselves now note it in
// `search_pending`, with the title its trigram entry holds (none for an item not indexed yet); the
// writer indexes what is noted before each COMMIT. PostgreSQL keeps its triggers.

const MARKERS: [name: string, event: string, note: string][] = [
  ['insert', 'INSERT ON items', 'VALUES (new.id, NULL)'],
  ['delete', 'DELETE ON items', 'VALUES (old.id, old.title)'],
  // An item removed in the same change leaves no row here; its own trigger notes it.
  ['tag_insert', 'INSERT ON item_tags', 'SELECT id, title FROM items WHERE id = new.item_id'],
  ['tag_delete', 'DELETE ON item_tags', 'SELECT id, title FROM items WHERE id = old.item_id'],
  ['comment_insert', 'INSERT ON comments', 'SELECT id, title FROM items WHERE id = new.item_id'],
  ['comment_delete', 'DELETE ON comments', 'SELECT id, title FROM items WHERE id = old.item_id'],
  ['comment_update', 'UPDATE OF body ON comments', 'SELECT id, title FROM items WHERE id = new.item_id'],
];

const INDEXING = [
  'insert',
  'text',
  'title',
  'delete',
  'tag_insert',
  'tag_delete',
  'comment_insert',
  'comment_delete',
  'comment_update',
];

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') return;
  const run = (text: string) => sql.raw(text).execute(db);
  for (const name of INDEXING) await run(`DROP TRIGGER item_search_${name}`);
  await run(`CREATE TABLE search_pending (item_id INTEGER PRIMARY KEY, old_title TEXT)`);
  for (const [name, event, note] of MARKERS)
    await run(`CREATE TRIGGER item_search_${name} AFTER ${event} BEGIN
      INSERT OR IGNORE INTO search_pending (item_id, old_title) ${note};
    END`);
  await run(`CREATE TRIGGER item_search_text AFTER UPDATE OF title, description ON items
    WHEN old.description IS NOT new.description OR old.title IS NOT new.title BEGIN
    INSERT OR IGNORE INTO search_pending (item_id, old_title) VALUES (new.id, old.title);
  END`);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') return;
  const run = (text: string) => sql.raw(text).execute(db);
  for (const [name] of MARKERS) await run(`DROP TRIGGER item_search_${name}`);
  await run(`DROP TRIGGER item_search_text`);
  await run(`DROP TABLE search_pending`);
  await run(`CREATE TRIGGER item_search_insert AFTER INSERT ON items BEGIN
    ${sqliteIndex('new.id')}
    INSERT INTO item_search_titles (rowid, title) VALUES (new.id, new.title);
  END`);
  await run(`CREATE TRIGGER item_search_text AFTER UPDATE OF title, description ON items
    WHEN old.description IS NOT new.description OR old.title IS NOT new.title BEGIN
    ${sqliteIndex('new.id')}
  END`);
  await run(`CREATE TRIGGER item_search_title AFTER UPDATE OF title ON items
    WHEN old.title IS NOT new.title BEGIN
    INSERT INTO item_search_titles (item_search_titles, rowid, title) VALUES ('delete', old.id, old.title);
    INSERT INTO item_search_titles (rowid, title) VALUES (new.id, new.title);
  END`);
  await run(`CREATE TRIGGER item_search_delete AFTER DELETE ON items BEGIN
    DELETE FROM item_search WHERE rowid = old.id;
    INSERT INTO item_search_titles (item_search_titles, rowid, title) VALUES ('delete', old.id, old.title);
  END`);
  for (const [name, event] of MARKERS.slice(2)) {
    const id = event.startsWith('DELETE') ? 'old.item_id' : 'new.item_id';
    await run(`CREATE TRIGGER item_search_${name} AFTER ${event} BEGIN ${sqliteIndex(id)} END`);
  }
}
