import {
  SqliteAdapter,
  SqliteDialect,
  type CreateTableBuilder,
  type DialectAdapter,
  type Driver,
  type QueryExecutorProvider,
} from 'kysely';
import { GroupCommitSqliteDriver, type SqliteConnections } from './sqlite-driver.js';

export type DialectName = 'sqlite' | 'postgres';

export function dialectOf(db: QueryExecutorProvider): DialectName {
  return db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres';
}

/** Adds the auto-incremented integer primary key `id` in the form each dialect wants. */
export function idColumn<T extends string>(
  db: QueryExecutorProvider,
  table: CreateTableBuilder<T, never>,
): CreateTableBuilder<T, 'id'> {
  return dialectOf(db) === 'sqlite'
    ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    : table.addColumn('id', 'serial', (c) => c.primaryKey());
}

/**
 * SQLite does roll back DDL, so migrations can run in one transaction: with BEGIN IMMEDIATE that
 * transaction is also the lock that keeps two processes starting at once from migrating twice.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * The embedded database's dialect: Kysely's SQLite, with transactions on the group-commit driver
 * (which takes SQLite's write lock at BEGIN, BEGIN IMMEDIATE, so a transaction that reads and then
 * writes never fails half-way with SQLITE_BUSY when another process writes at the same time: it
 * waits for the lock instead) and plain reads on a connection of their own.
 */
export class GroupCommitSqliteDialect extends SqliteDialect {
  readonly #connections: SqliteConnections;
  constructor(connections: SqliteConnections) {
    super({ database: connections.writer });
    this.#connections = connections;
  }
  override createDriver(): Driver {
    return new GroupCommitSqliteDriver(this.#connections);
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}
