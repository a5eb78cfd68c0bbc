import path from 'node:path';
import SQLite from 'better-sqlite3';
import {
  Kysely,
  PostgresDialect,
  type KyselyConfig,
  type LogEvent,
  type Transaction,
  type TransactionBuilder,
} from 'kysely';
import type pg from 'pg';
import { BackgroundCheckpointer } from './checkpointer.js';
import { GroupCommitSqliteDialect } from './dialect.js';
import { migrateToLatest } from './migrate.js';
import { SearchIndexFlush } from './search-index.js';
import { serverStatementName } from './statements.js';
import type { Database } from './schema.js';
import { LruCache } from '../lru.js';
import { makePrivate, privateDirectory, privateFile } from '../private-files.js';

export type Db = Kysely<Database>;
/**
 * A database handle inside a transaction. Functions that write take this, so a call from outside
 * one does not compile: every change runs in the one transaction its request opened.
 */
export type Trx = Transaction<Database>;

export interface DatabaseOptions {
  /** Directory holding `shiplog.db` (SQLite); ignored with `filename` or `databaseUrl`. */
  dataDir: string;
  /** SQLite: `:memory:` for tests, or an explicit file. */
  filename?: string;
  /** `postgres://...`: PostgreSQL instead of the embedded SQLite. */
  databaseUrl?: string;
  /** PostgreSQL: the pool's connections (for everything but transactions, with transactionPoolMax). */
  poolMax?: number;
  /** PostgreSQL: connections kept for transactions, in a pool of their own (see SplitKysely); none by default. */
  transactionPoolMax?: number;
  /** false: the schema is left as it is, for another handle of a process whose first one migrated it. */
  migrate?: boolean;
  /** SQLite: the page cache, in MiB (SQLite's own default is 2). */
  cacheMb?: number;
  /** PostgreSQL: longest a statement may run before it is cancelled. */
  statementTimeoutMs?: number;
  /** PostgreSQL: longest to wait for a connection. */
  connectTimeoutMs?: number;
  /** SQLite: WAL frames past which the background thread has the WAL started anew (64 MiB of pages). */
  walRestartFrames?: number;
  /** SQLite: told when background WAL checkpoints start failing (each next one tries again)... */
  onCheckpointError?: (message: string) => void;
  /** ...and when they work again. */
  onCheckpointRecovered?: () => void;
}

/**
 * Kysely prepares every query anew; SQLite statements are reusable, so keep the recent ones.
 * The cache is bounded because a few queries (IN lists) vary in shape.
 */
function withStatementCache(sqlite: SQLite.Database, size = 500): SQLite.Database {
  const cache = new LruCache<string, SQLite.Statement>(size);
  const prepare = (source: string): SQLite.Statement => {
    let stmt = cache.get(source);
    if (!stmt) {
      stmt = sqlite.prepare(source);
      cache.set(source, stmt);
    }
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

/** Told how long each statement took to run, in seconds (failed ones too). */
export type QueryObserver = (seconds: number) => void;

const queryObservers = new WeakMap<Db, Set<QueryObserver>>();

/**
 * Kysely's query log times each statement where it meets the connection (the time it ran, not
 * the wait for a connection or the building of its SQL), for SQLite and PostgreSQL alike; it is
 * set when the handle is made, so each handle gets one that tells the observers added since.
 */
function withQueryLog(make: (log: (event: LogEvent) => void) => Db): Db {
  const observers = new Set<QueryObserver>();
  const db = make((event) => {
    for (const observe of observers) observe(event.queryDurationMillis / 1000);
  });
  queryObservers.set(db, observers);
  return db;
}

/** Has `observer` told the duration of every statement run through `db`; returns how to stop. */
export function observeQueries(db: Db, observer: QueryObserver): () => void {
  const observers = queryObservers.get(db);
  if (!observers) throw new Error('observeQueries needs a handle made by openDatabase.');
  observers.add(observer);
  return () => observers.delete(observer);
}

/** The embedded database's file under a data directory. */
export const sqliteFile = (dataDir: string): string => path.join(dataDir, 'shiplog.db');

function openSqlite(options: DatabaseOptions): Db {
  let filename = options.filename;
  if (!filename) {
    privateDirectory(options.dataDir);
    filename = sqliteFile(options.dataDir);
  }
  if (filename !== ':memory:') {
    // Before SQLite creates it: a new -wal and -shm take the database file's mode. Files of an
    // earlier version, made under the umask, are made private here.
    privateFile(filename);
    makePrivate(`${filename}-wal`, `${filename}-shm`);
  }
  const sqlite = new SQLite(filename);
  // First, so that even switching a new file to WAL waits for another process instead of failing.
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const wal = filename !== ':memory:' && sqlite.pragma('journal_mode', { simple: true }) === 'wal';
  // Plain reads get a connection of their own (a second one to `:memory:` would be another database).
  const reader = wal ? new SQLite(filename, { fileMustExist: true }) : undefined;
  if (reader) {
    reader.pragma('busy_timeout = 5000');
    // It only reads: a write sent to it by mistake fails instead of bypassing the writer's turns.
    reader.pragma('query_only = ON');
  }
  // SQLite's 2 MiB default holds the indexes' upper levels of a small database only: every page
  // beyond it is read from the operating system again on each request. Most reads are the
  // reader's; the writer's transactions mostly touch the pages they write.
  if (options.cacheMb !== undefined) {
    (reader ?? sqlite).pragma(`cache_size = ${-options.cacheMb * 1024}`);
    if (reader) sqlite.pragma(`cache_size = ${-Math.max(2, Math.round(options.cacheMb / 4)) * 1024}`);
  }
  const checkpointer = wal
    ? new BackgroundCheckpointer(
        sqlite,
        filename,
        undefined,
        options.onCheckpointError,
        options.onCheckpointRecovered,
        options.walRestartFrames,
      )
    : undefined;
  const searchIndex = new SearchIndexFlush(sqlite);
  return withQueryLog(
    (log) =>
      new Kysely<Database>({
        dialect: new GroupCommitSqliteDialect({
          writer: withStatementCache(sqlite),
          reader: reader && withStatementCache(reader),
          // With WAL, waits for another process's write lock on timers (5 s, as busy_timeout).
          busyTimeoutMs: wal ? 5000 : undefined,
          beforeBatch: checkpointer && (() => checkpointer.restartIfPastLimit()),
          beforeCommit: () => searchIndex.flush(),
          beforeDestroy: async () => checkpointer?.stop(),
        }),
        log,
      }),
  );
}

/**
 * The pool as Kysely sees it, with two repairs for a database that stops answering: an error on a
 * connection in use never becomes an uncaught exception, and a connection whose query timed out or
 * broke is discarded on release instead of going back to the pool with a query still stuck on it.
 * Statements of prepared queries run under their names (see serverStatementName); one whose
 * prepared plan no longer fits the tables (a column's type changed under it) fails once, as
 * unavailable, and its connection, which holds that plan, is discarded.
 */
function resilientPool(pool: pg.Pool) {
  // An idle connection dropped by the server (restart, network) is replaced on next use.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return {
    async connect() {
      const client = await pool.connect();
      let broken = false;
      return {
        query(...args: Parameters<pg.PoolClient['query']>) {
          // Kysely passes (text, values); a statement the server prepares goes by its name.
          const name = typeof args[0] === 'string' ? serverStatementName(args[0]) : undefined;
          const call = name ? [{ name, text: args[0], values: args[1] }] : args;
          const result = (client.query as (...a: unknown[]) => unknown)(...call);
          if (result instanceof Promise) {
            return result.catch((err: unknown) => {
              if (isDatabaseUnavailable(err)) broken = true;
              throw err;
            });
          }
          return result;
        },
        release() {
          client.release(broken);
        },
      };
    },
    end: () => pool.end(),
  };
}

/**
 * A handle whose transactions take their connection from a pool of their own (PostgreSQL).
 *
 * Under saturating reads every pooled connection is taken and dozens of reads queue for the next
 * one; a change queued behind them waited for a connection tens of milliseconds (hundreds at the
 * tail), and held the product's lock meanwhile with nothing to show for it. Every change runs in a
 * transaction (and background jobs claim in theirs), so transactions get connections nobody reads
 * on: a change waits at most for the other transactions, never for the reads.
 */
class SplitKysely extends Kysely<Database> {
  readonly #changes: Kysely<Database>;
  constructor(reads: KyselyConfig, changes: Kysely<Database>) {
    super(reads);
    this.#changes = changes;
  }
  override transaction(): TransactionBuilder<Database> {
    return this.#changes.transaction();
  }
  override async destroy(): Promise<void> {
    await Promise.all([super.destroy(), this.#changes.destroy()]);
  }
  /** The handle of the connections kept for transactions. */
  get changes(): Db {
    return this.#changes;
  }
}

/**
 * Where what a change reads right after its commit goes (its answer): the connections kept for
 * transactions where there are (SplitKysely), so that it does not queue behind the reads either.
 */
export const changesHandleOf = (db: Db): Db => (db instanceof SplitKysely ? db.changes : db);

async function openPostgres(options: DatabaseOptions & { databaseUrl: string }): Promise<Db> {
  // Loaded only here: the embedded default starts without it.
  const { default: pg } = await import('pg');
  // bigint columns (positions, counts) come back as strings by default; every value stays far
  // below 2^53, so numbers are exact.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
  const poolOf = (max: number) =>
    resilientPool(
      new pg.Pool({
        connectionString: options.databaseUrl,
        max,
        connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
        statement_timeout: options.statementTimeoutMs ?? 5000,
        // The server cancels slow statements; this also gives up on a network that stopped answering.
        query_timeout: (options.statementTimeoutMs ?? 5000) + 1000,
        // A transaction left open by a stuck client must not hold its locks for ever.
        idle_in_transaction_session_timeout: 60_000,
      }),
    );
  const changes = options.transactionPoolMax ?? 0;
  return withQueryLog((log) => {
    const config = (max: number): KyselyConfig => ({
      dialect: new PostgresDialect({ pool: poolOf(max) as never }),
      log,
    });
    const reads = config(options.poolMax ?? 10);
    return changes > 0 ? new SplitKysely(reads, new Kysely<Database>(config(changes))) : new Kysely<Database>(reads);
  });
}

/**
 * The one place that picks the database: PostgreSQL when a URL is given, otherwise SQLite in WAL
 * mode with foreign keys. The schema is migrated before the handle is returned (unless `migrate`
 * is false).
 */
export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  const db = options.databaseUrl
    ? await openPostgres({ ...options, databaseUrl: options.databaseUrl })
    : openSqlite(options);
  if (options.migrate === false) return db;
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH']);

/**
 * Whether an error means the database is out of reach or overloaded for now (a 503 and a retry,
 * not a bug): refused or lost connections, connect and statement timeouts, a server shutting down.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  if (e.code && UNAVAILABLE_CODES.has(e.code)) return true;
  // SQLite's lock held elsewhere: SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, ...).
  if (e.code?.startsWith('SQLITE_BUSY')) return true;
  // PostgreSQL: query_canceled (statement_timeout), shutdown and connection classes, too many connections.
  if (e.code && (/^57(014|P0[1-3])$/.test(e.code) || /^08/.test(e.code) || e.code === '53300')) return true;
  // PostgreSQL: "cached plan must not change result type", a prepared statement outlived by the schema.
  if (e.code === '0A000' && /cached plan/i.test(e.message ?? '')) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Query read timeout/i.test(
    e.message ?? '',
  );
}
