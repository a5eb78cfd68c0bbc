import {
  CompiledQuery,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type CreateTableBuilder,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type SqliteDialectConfig,
} from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

export function dialectOf(db: Kysely<any>): DialectName {
  return db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres';
}

/** Adds the auto-incremented integer primary key `id` in the form each dialect wants. */
export function idColumn<T extends string>(db: Kysely<any>, table: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'id'> {
  return dialectOf(db) === 'sqlite'
    ? table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    : table.addColumn('id', 'serial', (c) => c.primaryKey());
}

/**
 * Write transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE), so a transaction that
 * reads and then writes can never fail half-way with SQLITE_BUSY when another process (the
 * command line) writes at the same time; it waits for busy_timeout instead.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  constructor(
    private readonly config: SqliteDialectConfig,
    private readonly beforeDestroy?: () => Promise<void>,
  ) {
    super(config);
  }
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
  /**
   * SQLite ends a transaction by itself after some errors (SQLITE_FULL, SQLITE_IOERR_*): a
   * ROLLBACK then fails with "no transaction is active", and that error would take the place of
   * the one that says what happened. (The dialect has one connection, so the handle's state is
   * the transaction's.)
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const { database } = this.config;
    if (typeof database !== 'function' && (database as { inTransaction?: boolean }).inTransaction === false) return;
    await super.rollbackTransaction(connection);
  }
  override async destroy(): Promise<void> {
    await this.beforeDestroy?.();
    await super.destroy();
  }
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

export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #beforeDestroy: (() => Promise<void>) | undefined;
  /** `beforeDestroy` runs when the Kysely instance is destroyed, before the database closes. */
  constructor(config: SqliteDialectConfig, beforeDestroy?: () => Promise<void>) {
    super(config);
    this.#config = config;
    this.#beforeDestroy = beforeDestroy;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config, this.#beforeDestroy);
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}
