import { sql, type RawBuilder } from 'kysely';
import type { Db } from './connection.js';
import { dialectOf } from './dialect.js';

/**
 * The one rule of matching a tag asked for (items.json's `tags`, the board's, and search's
 * `tag:`): a tag matches ignoring the case of the ASCII letters A-Z, and nothing else (`UI` is
 * found by `ui`; `É` is not `é`), the same on both databases: SQLite's lower() folds A-Z only, and
 * PostgreSQL's does under the "C" collation. The index item_tags_folded holds this expression;
 * `column` is the stored tag (`item_tags.tag`, or an alias's).
 */
export function foldedTag(db: Db, column: string): RawBuilder<string> {
  return dialectOf(db) === 'postgres'
    ? sql<string>`lower(${sql.ref(column)} collate "C")`
    : sql<string>`lower(${sql.ref(column)})`;
}

/** A tag asked for, folded as foldedTag folds the stored ones. */
export const foldTag = (tag: string): string => tag.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
