import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely } from 'kysely';
import { ImmediateSqliteDialect } from './dialect.js';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DatabaseOptions {
  /** Directory holding `shiplog.db`; ignored when `filename` is given. */
  dataDir: string;
  /** `:memory:` for tests, or an explicit file. */
  filename?: string;
}

/**
 * Kysely prepares every query anew; SQLite statements are reusable, so keep the recent ones.
 * The cache is bounded because a few queries (IN lists) vary in shape.
 */
function withStatementCache(sqlite: SQLite.Database, size = 500): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = (source: string): SQLite.Statement => {
    let stmt = cache.get(source);
    if (stmt) {
      cache.delete(source);
    } else {
      stmt = sqlite.prepare(source);
      if (cache.size >= size) cache.delete(cache.keys().next().value as string);
    }
    cache.set(source, stmt);
    return stmt;
  };
  return new Proxy(sqlite, {
    get(target, prop) {
      if (prop === 'prepare') return prepare;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The one place that opens the database: SQLite in WAL mode with foreign keys, migrated. */
export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  let filename = options.filename;
  if (!filename) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    filename = path.join(options.dataDir, 'shiplog.db');
  }
  const sqlite = new SQLite(filename);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }) });
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}
