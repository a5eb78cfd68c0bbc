import assert from 'node:assert/strict';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseOptions } from '../src/db/connection.js';
import { GroupCommitSqliteDialect } from '../src/db/dialect.js';
import { MIGRATIONS } from '../src/db/migrate.js';
import { tempDir } from './helpers.js';
import { databaseOptionsFor } from './storage.js';

export interface OlderDatabase {
  dataDir: string;
  /** How the current code opens the same database (which then takes the migrations left out). */
  options: DatabaseOptions;
  /** The database as it was, untyped: its tables are those of the older schema. */
  old: Kysely<any>;
  /** Inserts a row and answers its id. */
  id(table: string, values: Record<string, unknown>): Promise<number>;
}

/**
 * A database (SQLite file, or a PostgreSQL schema in the suite's PostgreSQL run) that took every
 * migration but `skipped`, as one written by an earlier version has it: for tests of what the
 * skipped migrations do to rows written before them. Destroy `old` before opening `options`.
 */
export async function olderDatabase(skipped: readonly string[]): Promise<OlderDatabase> {
  const dataDir = tempDir();
  const options = await databaseOptionsFor(dataDir);
  const others = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => !skipped.includes(name)));
  const old = new Kysely<any>({
    dialect: options.databaseUrl
      ? new PostgresDialect({ pool: new pg.Pool({ connectionString: options.databaseUrl, max: 1 }) })
      : new GroupCommitSqliteDialect({ writer: new SQLite(path.join(dataDir, 'shiplog.db')) }),
  });
  const migrationTableSchema = options.databaseUrl
    ? (await sql<{ s: string }>`select current_schema() as s`.execute(old)).rows[0].s
    : undefined;
  assert.equal(
    (
      await new Migrator({
        db: old,
        provider: { getMigrations: async () => others },
        migrationTableSchema,
      }).migrateToLatest()
    ).error,
    undefined,
  );
  const id = async (table: string, values: Record<string, unknown>) =>
    (await old.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()).id as number;
  return { dataDir, options, old, id };
}
