import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// The search index of items (src/search/): per item, its title (a story's is built from who, what
// and why), tags, description, and the latest comments. Triggers keep it in the transaction of
// every write that changes that text, whichever code path writes, so a search right after a change
// finds it. The text is cut into words at anything that is not a letter or a digit, the same way
// on both databases and in the query parser (search/query.ts).
//
// SQLite: a contentless FTS5 table that can delete its rows (BM25 ranking, no copy of the text),
// without a prefix index (prefix queries still work, by a range of the terms), with automatic
// merging off (the writers only flush; search/merge.ts merges in the background) and a crisis merge
// at 64 segments a level; and an FTS5 trigram index of titles only, over the items table, for the
// typo-tolerant fallback.
// PostgreSQL: a tsvector per item (weights: title A, tags B, description C, comments D) under a GIN
// index, and a pg_trgm GIN index of titles when the extension can be had.

/** How many of an item's latest comments are searched, and at most how many characters of them. */
const COMMENTS_SEARCHED = 200;
const COMMENT_CHARS = 200_000;

export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') await upPostgres(db);
  else await upSqlite(db);
}

/** SQLite's statements that write an item's row of `item_search` from what it is now. */
export const sqliteIndex = (id: string) => `
    DELETE FROM item_search WHERE rowid = ${id};
    INSERT INTO item_search (rowid, title, tags, body, comments)
      SELECT i.id, i.title,
        coalesce((SELECT group_concat(tag, ' ') FROM item_tags WHERE item_id = i.id), ''),
        i.description,
        coalesce(substr((SELECT group_concat(body, ' ') FROM
          (SELECT body FROM comments WHERE item_id = i.id ORDER BY id DESC LIMIT ${COMMENTS_SEARCHED})),
          1, ${COMMENT_CHARS}), '')
      FROM items i WHERE i.id = ${id};`;

async function upSqlite(db: Kysely<any>): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db);
  await run(`CREATE VIRTUAL TABLE item_search USING fts5(title, tags, body, comments,
    content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2')`);
  await run(`INSERT INTO item_search (item_search, rank) VALUES ('automerge', 0)`);
  await run(`INSERT INTO item_search (item_search, rank) VALUES ('crisismerge', 64)`);
  // The fallback asks for single three-letter pieces only: no positions (detail=none) and no sizes
  // (columnsize=0) are kept, which halves what a title edit writes to it.
  await run(`CREATE VIRTUAL TABLE item_search_titles USING fts5(title, content='items', content_rowid='id',
    tokenize='trigram remove_diacritics 1', detail=none, columnsize=0)`);
  await run(`INSERT INTO item_search_titles (item_search_titles, rank) VALUES ('automerge', 0)`);
  await run(`INSERT INTO item_search_titles (item_search_titles, rank) VALUES ('crisismerge', 64)`);

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
  for (const [name, event, id] of [
    ['tag_insert', 'INSERT ON item_tags', 'new.item_id'],
    ['tag_delete', 'DELETE ON item_tags', 'old.item_id'],
    ['comment_insert', 'INSERT ON comments', 'new.item_id'],
    ['comment_delete', 'DELETE ON comments', 'old.item_id'],
    ['comment_update', 'UPDATE OF body ON comments', 'new.item_id'],
  ])
    await run(`CREATE TRIGGER item_search_${name} AFTER ${event} BEGIN ${sqliteIndex(id)} END`);

  await run(`INSERT INTO item_search (rowid, title, tags, body, comments)
    SELECT i.id, i.title,
      coalesce((SELECT group_concat(tag, ' ') FROM item_tags WHERE item_id = i.id), ''),
      i.description,
      coalesce(substr((SELECT group_concat(body, ' ') FROM
        (SELECT body FROM comments WHERE item_id = i.id ORDER BY id DESC LIMIT ${COMMENTS_SEARCHED})),
        1, ${COMMENT_CHARS}), '')
    FROM items i`);
  await run(`INSERT INTO item_search_titles (item_search_titles) VALUES ('rebuild')`);
}

/** PostgreSQL's words of a text: lower case, cut at spaces and punctuation (see search/query.ts). */
const pgWords = (text: string) => `to_tsvector('simple', regexp_replace(${text}, '[[:space:][:punct:]]+', ' ', 'g'))`;

async function upPostgres(db: Kysely<any>): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db);
  await run(`CREATE TABLE item_search (
    item_id integer PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    document tsvector NOT NULL)`);
  await run(`CREATE INDEX item_search_document ON item_search USING gin (document)`);
  await run(`CREATE FUNCTION item_search_index(target integer) RETURNS void LANGUAGE sql AS $$
    INSERT INTO item_search (item_id, document)
    SELECT i.id,
      setweight(${pgWords('i.title')}, 'A') ||
      setweight(${pgWords("coalesce((SELECT string_agg(tag, ' ') FROM item_tags WHERE item_id = i.id), '')")}, 'B') ||
      setweight(${pgWords('i.description')}, 'C') ||
      setweight(${pgWords(`left(coalesce((SELECT string_agg(body, ' ') FROM
        (SELECT body FROM comments WHERE item_id = i.id ORDER BY id DESC LIMIT ${COMMENTS_SEARCHED}) c), ''),
        ${COMMENT_CHARS})`)}, 'D')
    FROM items i WHERE i.id = target
    ON CONFLICT (item_id) DO UPDATE SET document = excluded.document
  $$`);
  await run(`CREATE FUNCTION item_search_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN PERFORM item_search_index(old.item_id); RETURN old; END IF;
      PERFORM item_search_index(new.item_id); RETURN new;
    END $$`);
  await run(`CREATE FUNCTION item_search_item() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM item_search_index(new.id); RETURN new; END $$`);
  await run(`CREATE FUNCTION item_search_tags() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM item_search_index(t.item_id) FROM (SELECT DISTINCT item_id FROM changed) t; RETURN NULL; END $$`);
  await run(`CREATE TRIGGER item_search_insert AFTER INSERT ON items FOR EACH ROW EXECUTE FUNCTION item_search_item()`);
  await run(`CREATE TRIGGER item_search_text AFTER UPDATE OF title, description ON items FOR EACH ROW
    WHEN (old.title IS DISTINCT FROM new.title OR old.description IS DISTINCT FROM new.description)
    EXECUTE FUNCTION item_search_item()`);
  await run(`CREATE TRIGGER item_search_tag_insert AFTER INSERT ON item_tags REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION item_search_tags()`);
  await run(`CREATE TRIGGER item_search_tag_delete AFTER DELETE ON item_tags REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION item_search_tags()`);
  await run(`CREATE TRIGGER item_search_comment AFTER INSERT OR DELETE OR UPDATE OF body ON comments
    FOR EACH ROW EXECUTE FUNCTION item_search_row()`);
  await run(`SELECT item_search_index(id) FROM items`);
  await titleTrigrams(db);
}

/**
 * A pg_trgm index of titles makes the fallback's `ILIKE` of a title's three-letter pieces an index
 * scan. The extension is made once per database, in `public`, when the server has it and the
 * role may; without it the fallback still answers, by reading titles.
 */
async function titleTrigrams(db: Kysely<any>): Promise<void> {
  const available = await sql<{ schema: string | null; can: boolean }>`
    select (select extnamespace::regnamespace::text from pg_extension where extname = 'pg_trgm') as schema,
      exists (select 1 from pg_available_extensions where name = 'pg_trgm')
        and has_database_privilege(current_database(), 'CREATE')
        and exists (select 1 from pg_namespace where nspname = 'public') as can`.execute(db);
  let schema = available.rows[0].schema;
  if (!schema && available.rows[0].can) {
    // Another database user may make it at the same moment: a failure here leaves the fallback unindexed.
    await sql.raw('SAVEPOINT pg_trgm').execute(db);
    try {
      await sql.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public').execute(db);
      await sql.raw('RELEASE SAVEPOINT pg_trgm').execute(db);
      schema = 'public';
    } catch {
      await sql.raw('ROLLBACK TO SAVEPOINT pg_trgm').execute(db);
    }
  }
  if (schema)
    await sql.raw(`CREATE INDEX items_title_trigrams ON items USING gin (title ${schema}.gin_trgm_ops)`).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db);
  if (dialectOf(db) === 'postgres') {
    for (const t of ['item_search_insert ON items', 'item_search_text ON items', 'item_search_tag_insert ON item_tags'])
      await run(`DROP TRIGGER IF EXISTS ${t}`);
    await run('DROP TRIGGER IF EXISTS item_search_tag_delete ON item_tags');
    await run('DROP TRIGGER IF EXISTS item_search_comment ON comments');
    await run('DROP INDEX IF EXISTS items_title_trigrams');
    await run('DROP TABLE item_search');
    for (const f of ['item_search_row()', 'item_search_item()', 'item_search_tags()', 'item_search_index(integer)'])
      await run(`DROP FUNCTION ${f}`);
    return;
  }
  for (const t of ['insert', 'text', 'title', 'delete', 'tag_insert', 'tag_delete'])
    await run(`DROP TRIGGER item_search_${t}`);
  for (const t of ['comment_insert', 'comment_delete', 'comment_update']) await run(`DROP TRIGGER item_search_${t}`);
  await run('DROP TABLE item_search');
  await run('DROP TABLE item_search_titles');
}
