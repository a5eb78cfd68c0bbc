import { setTimeout as sleep } from 'node:timers/promises';
import type SQLite from 'better-sqlite3';
import { SelectQueryNode, type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';

/** The connections of one SQLite database, as `openSqlite` set them up. */
export interface SqliteConnections {
  /** Runs every transaction, and every statement outside one that is not a plain SELECT. */
  writer: SQLite.Database;
  /**
   * Runs plain SELECTs outside transactions, which then never wait for a transaction to end and
   * never see one's uncommitted changes (WAL: each statement reads the last commit). Absent for
   * `:memory:`, where a second connection would open another database: reads then take turns with
   * the transactions on the writer.
   */
  reader?: SQLite.Database;
  /** Runs when the Kysely instance is destroyed, after the last commit, before the connections close. */
  beforeDestroy?: () => Promise<void>;
  /** Most transactions one commit holds. */
  maxBatch?: number;
  /** Longest a batch stays open to transactions that join it, in milliseconds. */
  maxBatchMs?: number;
  /**
   * Longest to wait for SQLite's write lock while another connection (another process) holds it,
   * on timers rather than in SQLite's busy handler, which would stop the event loop. For WAL
   * databases only, where the lock is taken at BEGIN IMMEDIATE and a commit never waits for
   * readers; without it, the writer keeps its connection's own busy_timeout.
   */
  busyTimeoutMs?: number;
  /** Runs on the writer before each batch begins, outside any transaction. */
  beforeBatch?: () => void;
  /** Told after each commit (or failed one) how many transactions its batch held. */
  onCommit?: (transactions: number) => void;
  /**
   * Runs on the writer after the last transaction of a batch, inside it, before its COMMIT (what
   * it writes is committed with the batch, and a failure fails the batch); and after each lone
   * statement, outside any transaction.
   */
  beforeCommit?: () => void;
}

/** The answer Kysely expects of a statement: rows of a reader, changes and rowid of a writer. */
function run(db: SQLite.Database, { sql, parameters }: CompiledQuery): QueryResult<unknown> {
  const stmt = db.prepare(sql);
  if (stmt.reader) return { rows: stmt.all(parameters) };
  const { changes, lastInsertRowid } = stmt.run(parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/**
 * A SELECT built with Kysely, or raw SQL that is a SELECT (or WITH) changing nothing: a read the
 * reader answers. Anything else (a PRAGMA, whose answer is the connection's own) goes to the writer.
 */
function isPlainRead(reader: SQLite.Database, query: CompiledQuery): boolean {
  if (SelectQueryNode.is(query.query)) return true;
  return /^\s*(select|with)\b/i.test(query.sql) && reader.prepare(query.sql).readonly;
}

/** Transactions that share one SQLite transaction, and so one commit. */
class Batch {
  readonly openedAt = performance.now();
  /** How many transactions began in it: each one's savepoint is named after its place. */
  began = 0;
  /** Transactions that ended well, waiting for the commit that makes them durable. */
  readonly waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  /** Set when SQLite ended the whole transaction after an error: nothing of it can be committed. */
  lost: unknown;
}

interface Waiter {
  /** A transaction, which may join the batch the writer has open; otherwise a lone statement. */
  joins: boolean;
  grant: () => void;
  refuse: (err: Error) => void;
}

const closedError = () => new Error('The database is closed.');

/**
 * Kysely's driver for the embedded database, with group commit.
 *
 * SQLite has one writer, and a commit costs far more than the statements of a typical change:
 * it appends every page the change touched to the WAL (an item's row and its dozen index pages).
 * Transactions take turns on the writer in the order they asked (FIFO), each inside a savepoint
 * of its own, so a failing one rolls back alone; the SQLite transaction around them, a batch,
 * stays open while more transactions are waiting for the writer, and when none are, until the
 * event loop has taken the requests that had already arrived (`setImmediate`), whose transactions
 * join it. Then one COMMIT makes the whole batch durable (at most `maxBatch` transactions, open
 * at most `maxBatchMs`), and only then does each transaction's commit return: nothing is answered
 * before it is on disk, exactly as with one commit each. A commit that fails (a full disk) fails
 * every transaction of its batch; so does an error after which SQLite ended the whole transaction
 * by itself (SQLITE_FULL, SQLITE_IOERR_*). A lone statement outside a transaction runs after the
 * open batch is committed, on its own. Under light load a batch holds one transaction.
 */
export class GroupCommitSqliteDriver implements Driver {
  readonly #writer: SQLite.Database;
  readonly #reader: SQLite.Database | undefined;
  readonly #beforeDestroy: (() => Promise<void>) | undefined;
  readonly #maxBatch: number;
  readonly #maxBatchMs: number;
  readonly #onCommit: ((transactions: number) => void) | undefined;
  readonly #busyTimeoutMs: number | undefined;
  readonly #beforeBatch: (() => void) | undefined;
  readonly #beforeCommit: (() => void) | undefined;
  /**
   * Whether a transaction or lone statement has the writer. While none has, a batch may still be
   * open, until the next turn of the event loop commits it (or a transaction joins it first).
   */
  #held = false;
  readonly #queue: Waiter[] = [];
  #batch: Batch | undefined;
  #commitScheduled = false;
  #closed = false;

  constructor(connections: SqliteConnections) {
    this.#writer = connections.writer;
    this.#reader = connections.reader;
    this.#beforeDestroy = connections.beforeDestroy;
    this.#maxBatch = connections.maxBatch ?? 32;
    this.#maxBatchMs = connections.maxBatchMs ?? 10;
    this.#onCommit = connections.onCommit;
    this.#busyTimeoutMs = connections.busyTimeoutMs;
    this.#beforeBatch = connections.beforeBatch;
    this.#beforeCommit = connections.beforeCommit;
    // Told SQLITE_BUSY at once: `whenUnlocked` waits without blocking the event loop, where the
    // connection holding the lock may be the one that has to go on to release it.
    if (this.#busyTimeoutMs !== undefined) this.#writer.pragma('busy_timeout = 0');
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new GroupCommitConnection(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as GroupCommitConnection).begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as GroupCommitConnection).commit();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as GroupCommitConnection).rollback();
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    // After the transactions already queued, and the commit of the last batch; whatever asks for
    // the writer later is refused.
    await this.take(false);
    this.#closed = true;
    for (const waiter of this.#queue.splice(0)) waiter.refuse(closedError());
    try {
      await this.#beforeDestroy?.();
    } finally {
      this.#reader?.close();
      this.#writer.close();
    }
  }

  /** Waits for the writer; a transaction (`joins`) may be let into the batch still open. */
  take(joins: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.#held) {
      this.#held = true;
      if (this.#batch && !(joins && this.#joinable(this.#batch))) this.#commit(this.#batch);
      return Promise.resolve();
    }
    return new Promise((grant, refuse) => this.#queue.push({ joins, grant, refuse }));
  }

  /**
   * Hands the writer to the next in line, committing the open batch first unless it joins it.
   * With nobody in line, a batch that may still grow stays open until the event loop has taken
   * the requests that already arrived (whose transactions join it), and is committed then.
   */
  pass(): void {
    const next = this.#queue.shift();
    const batch = this.#batch;
    if (batch && !(this.#joinable(batch) && (next === undefined || next.joins))) this.#commit(batch);
    if (next) {
      next.grant();
      return;
    }
    this.#held = false;
    if (this.#batch && !this.#commitScheduled) {
      this.#commitScheduled = true;
      setImmediate(() => {
        this.#commitScheduled = false;
        // A transaction that has the writer now commits the batch, or hands it on, when it ends.
        if (!this.#held && this.#batch) this.#commit(this.#batch);
      });
    }
  }

  #joinable(batch: Batch): boolean {
    return (
      batch.lost === undefined && batch.began < this.#maxBatch && performance.now() - batch.openedAt < this.#maxBatchMs
    );
  }

  /** Opens a batch if none is, and a savepoint in it for one transaction (the caller has the writer). */
  async enter(): Promise<{ batch: Batch; savepoint: string }> {
    if (!this.#batch) {
      this.settle();
      this.#beforeBatch?.();
      await this.whenUnlocked(() => this.#writer.prepare('begin immediate').run());
      this.#batch = new Batch();
    }
    const batch = this.#batch;
    const savepoint = `t${++batch.began}`;
    this.#writer.prepare(`savepoint ${savepoint}`).run();
    return { batch, savepoint };
  }

  /**
   * Runs `attempt`, a statement that needs SQLite's write lock first, again after growing pauses
   * while another connection holds the lock (SQLITE_BUSY), for up to `busyTimeoutMs`.
   */
  async whenUnlocked<T>(attempt: () => T): Promise<T> {
    const deadline = performance.now() + (this.#busyTimeoutMs ?? 0);
    for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
      try {
        return attempt();
      } catch (err) {
        // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY).
        if (!(err as { code?: string }).code?.startsWith('SQLITE_BUSY') || performance.now() >= deadline) throw err;
      }
      await sleep(pause);
    }
  }

  /**
   * Ends a transaction the writer was left in when both a batch's COMMIT and its ROLLBACK failed,
   * before anything else runs on it: a statement would otherwise join that transaction and never
   * be committed. Throws when SQLite still refuses (the caller fails instead).
   */
  settle(): void {
    if (this.#batch === undefined && this.#writer.inTransaction) this.#writer.prepare('rollback').run();
  }

  /** What a commit does first, after a statement that ran alone (and so committed by itself). */
  afterLoneStatement(): void {
    this.#beforeCommit?.();
  }

  get writer(): SQLite.Database {
    return this.#writer;
  }

  get reader(): SQLite.Database | undefined {
    return this.#reader;
  }

  #commit(batch: Batch): void {
    this.#batch = undefined;
    let error = batch.lost;
    if (error === undefined) {
      try {
        this.#beforeCommit?.();
        this.#writer.prepare('commit').run();
      } catch (err) {
        error = err;
      }
    }
    if (error !== undefined && this.#writer.inTransaction) {
      try {
        this.#writer.prepare('rollback').run();
      } catch {
        // Already ended: the error that ended it is the one to tell.
      }
    }
    this.#onCommit?.(batch.began);
    for (const waiter of batch.waiting) {
      if (error === undefined) waiter.resolve();
      else waiter.reject(error);
    }
  }
}

/** What Kysely holds for a query or a transaction: a transaction's savepoint while it runs. */
class GroupCommitConnection implements DatabaseConnection {
  #open: { batch: Batch; savepoint: string } | undefined;

  constructor(private readonly driver: GroupCommitSqliteDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { driver } = this;
    if (this.#open) return this.#inTransaction(query) as QueryResult<R>;
    if (driver.reader && isPlainRead(driver.reader, query)) return run(driver.reader, query) as QueryResult<R>;
    // Alone: after the open batch is committed, in a transaction of its own as before.
    await driver.take(false);
    try {
      driver.settle();
      const result = await driver.whenUnlocked(() => run(driver.writer, query));
      // The statement is committed whatever happens next: what the hook could not do now (a
      // search index note, say) stays noted for the next commit, which fails if it still cannot.
      await driver.whenUnlocked(() => driver.afterLoneStatement()).catch(() => undefined);
      return result as QueryResult<R>;
    } finally {
      driver.pass();
    }
  }

  /** A statement of this transaction, which has the writer. */
  #inTransaction(query: CompiledQuery): QueryResult<unknown> {
    const { batch } = this.#open!;
    // Never in autocommit after SQLite dropped the transaction: that would keep half a change.
    if (batch.lost !== undefined) throw batch.lost;
    try {
      return run(this.driver.writer, query);
    } catch (err) {
      if (!this.driver.writer.inTransaction) batch.lost ??= err;
      throw err;
    }
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming queries are not supported on SQLite here.');
  }

  async begin(): Promise<void> {
    await this.driver.take(true);
    try {
      this.#open = await this.driver.enter();
    } catch (err) {
      // BEGIN IMMEDIATE timed out behind another process, or SQLite refused the savepoint.
      this.driver.pass();
      throw err;
    }
  }

  /** Releases the savepoint, then waits for the commit of its batch. */
  async commit(): Promise<void> {
    const open = this.#open;
    if (!open) throw new Error('No transaction to commit.');
    this.#open = undefined;
    const { batch, savepoint } = open;
    const done = new Promise<void>((resolve, reject) => batch.waiting.push({ resolve, reject }));
    try {
      this.driver.writer.prepare(`release ${savepoint}`).run();
    } catch (err) {
      batch.waiting.pop();
      // Not released, so not to be committed with the others: undone, or the batch is lost.
      this.#undo(batch, savepoint, err);
      this.driver.pass();
      throw err;
    }
    this.driver.pass();
    await done;
  }

  /** Undoes this transaction alone, unless SQLite already ended the whole batch. */
  rollback(): void {
    const open = this.#open;
    // Its commit failed with its batch: nothing left to undo.
    if (!open) return;
    this.#open = undefined;
    this.#undo(
      open.batch,
      open.savepoint,
      new Error('SQLite ended the transaction after an error: none of its changes were kept.'),
    );
    this.driver.pass();
  }

  /** Rolls back to the savepoint and releases it; when that cannot be done, nothing of the batch may be committed. */
  #undo(batch: Batch, savepoint: string, cause: unknown): void {
    const { writer } = this.driver;
    if (!writer.inTransaction) {
      batch.lost ??= cause;
      return;
    }
    try {
      writer.prepare(`rollback to ${savepoint}`).run();
      writer.prepare(`release ${savepoint}`).run();
    } catch (err) {
      batch.lost ??= err;
    }
  }
}
