import type SQLite from 'better-sqlite3';

/** How many of an item's latest comments are searched, and at most how many characters of them. */
const COMMENTS_SEARCHED = 200;
const COMMENT_CHARS = 200_000;

/**
 * SQLite's statement that writes the search documents of the items `ids` (a SELECT of item ids)
 * selects, from what they are now (title, tags, description and the latest comments), into `table`.
 */
export const sqliteSearchDocuments = (ids: string, table = 'item_search'): string => `
  INSERT INTO ${table} (rowid, title, tags, body, comments)
    SELECT i.id, i.title,
      coalesce((SELECT group_concat(tag, ' ') FROM item_tags WHERE item_id = i.id), ''),
      i.description,
      coalesce(substr((SELECT group_concat(body, ' ') FROM
        (SELECT body FROM comments WHERE item_id = i.id ORDER BY id DESC LIMIT ${COMMENTS_SEARCHED})),
        1, ${COMMENT_CHARS}), '')
    FROM items i WHERE i.id IN (${ids})`;

/**
 * The statements of one flush, in order. `search_pending` holds each item whose indexed text changed
 * since the last flush, once, with the title its trigram entry was made of (none for an item not
 * indexed yet): the first change of the batch recorded it, later ones are ignored.
 */
const FLUSH = [
  // The trigram index of titles (external content) is told the old title of an entry to remove it.
  `INSERT INTO item_search_titles (item_search_titles, rowid, title)
     SELECT 'delete', p.item_id, p.old_title FROM search_pending p LEFT JOIN items i ON i.id = p.item_id
     WHERE p.old_title IS NOT NULL AND (i.id IS NULL OR i.title IS NOT p.old_title)`,
  `DELETE FROM item_search WHERE rowid IN (SELECT item_id FROM search_pending)`,
  sqliteSearchDocuments('SELECT item_id FROM search_pending'),
  `INSERT INTO item_search_titles (rowid, title)
     SELECT i.id, i.title FROM search_pending p JOIN items i ON i.id = p.item_id
     WHERE p.old_title IS NULL OR i.title IS NOT p.old_title`,
  `DELETE FROM search_pending`,
];

/**
 * Writes the search index of SQLite (`item_search`, `item_search_titles`) for the items whose
 * text changed, once per commit rather than once per change.
 *
 * Triggers on items, tags and comments only note the item in `search_pending`, in the change's own
 * savepoint; the writer runs this once, after the last transaction of a group commit and before its
 * COMMIT, so the index is written in the same SQLite transaction as every change it reflects (a
 * search after the commit finds them all, a change rolled back took its note with it). FTS5 writes
 * what it holds in memory as a new segment at every savepoint and commit: indexed by the triggers
 * themselves, each change of a batch wrote one segment to each index, its structure records and a
 * tombstone page; now a batch writes one.
 *
 * Before the migration that makes `search_pending`, there is nothing to flush.
 */
export class SearchIndexFlush {
  readonly #writer: SQLite.Database;
  #statements: { pending: SQLite.Statement; flush: SQLite.Statement[] } | undefined;

  constructor(writer: SQLite.Database) {
    this.#writer = writer;
  }

  /**
   * Indexes every noted item. Inside the writer's open transaction, it becomes part of it; outside
   * one (after a lone statement), it runs in a transaction of its own.
   */
  flush(): void {
    const statements = this.#prepared();
    if (!statements || !this.#anyNoted(statements.pending)) return;
    const own = !this.#writer.inTransaction;
    if (own) this.#writer.prepare('begin immediate').run();
    try {
      for (const stmt of statements.flush) stmt.run();
      if (own) this.#writer.prepare('commit').run();
    } catch (err) {
      if (own && this.#writer.inTransaction) this.#writer.prepare('rollback').run();
      throw err;
    }
  }

  /** Whether an item is noted; false, and prepared again next time, once the table is gone (a migration down). */
  #anyNoted(pending: SQLite.Statement): boolean {
    try {
      return pending.get() !== undefined;
    } catch (err) {
      if (!/no such table: search_pending/.test((err as Error).message)) throw err;
      this.#statements = undefined;
      return false;
    }
  }

  #prepared(): { pending: SQLite.Statement; flush: SQLite.Statement[] } | undefined {
    if (this.#statements) return this.#statements;
    const made = this.#writer
      .prepare(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'search_pending'`)
      .get();
    if (made === undefined) return undefined;
    this.#statements = {
      pending: this.#writer.prepare('SELECT 1 FROM search_pending LIMIT 1'),
      flush: FLUSH.map((text) => this.#writer.prepare(text)),
    };
    return this.#statements;
  }
}
