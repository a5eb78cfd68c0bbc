import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { makePrivate, privateDirectory, privateFile } from '../private-files.js';
import { MIGRATION_NAMES, MIGRATIONS } from './migrate.js';

/** A backup or restore refused or failed; the message says why and what to do. */
export class BackupError extends Error {}

/** What a copy of the embedded database holds, as backup and restore report it. */
export interface CopySummary {
  file: string;
  bytes: number;
  pages: number;
  pageSize: number;
  products: number;
  items: number;
  deploys: number;
  /** Outbox messages not delivered yet: pending, or claimed by a worker when the copy was taken. */
  pendingMail: number;
  /** Migrations the copy has, of those this version knows; a server applies the rest when it starts. */
  migrations: number;
  knownMigrations: number;
  /**
   * What the copy's schema holds that this version's migrations do not create (a trigger, a view,
   * a table or index of another name or definition), each described; restore refuses a copy with any.
   */
  foreign: string[];
}

/** How long restore waits for the live database to be free before it calls it in use. */
const LOCK_WAIT_MS = 1000;

/** Tables every Shiplog database has had since its first migration. */
const SHIPLOG_TABLES = ['kysely_migration', 'users', 'products', 'items', 'deploys', 'outbox'];

/** A name beside `file`, in its directory, so the final rename stays on one file system. */
const temporaryName = (file: string): string => `${file}.${crypto.randomBytes(4).toString('hex')}.tmp`;

/** Removes a database file and whatever SQLite keeps beside it (or only the `suffixes` named). */
function removeDatabaseFiles(file: string, suffixes = ['', '-wal', '-shm', '-journal']): void {
  for (const suffix of suffixes) fs.rmSync(`${file}${suffix}`, { force: true });
}

/** fsync of a file or a directory (a rename is durable only once its directory is synced). */
function sync(file: string): void {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function isSameFile(a: string, b: string): boolean {
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    const [x, y] = [fs.statSync(a), fs.statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/** One entry of `sqlite_master`. */
interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** Tables SQLite itself adds when asked to (ANALYZE, PRAGMA optimize): statistics, no code. */
const STATISTICS = new Set(['sqlite_stat1', 'sqlite_stat2', 'sqlite_stat3', 'sqlite_stat4']);

const sameSql = (a: string | null, b: string | null): boolean =>
  (a ?? '').replace(/\s+/g, ' ').trim() === (b ?? '').replace(/\s+/g, ' ').trim();

/**
 * The schema this version's migrations make of an empty database when they stop at `applied` (the
 * copy's own migrations, so an older copy is compared with what an older version made), as
 * `sqlite_master` lists it.
 */
async function schemaOf(applied: readonly string[]): Promise<SchemaObject[]> {
  const sqlite = new SQLite(':memory:');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    const migrations = Object.fromEntries(applied.map((name) => [name, MIGRATIONS[name]]));
    const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateToLatest();
    if (error) throw error;
    return sqlite.prepare('select type, name, tbl_name, sql from sqlite_master').all() as SchemaObject[];
  } finally {
    await db.destroy();
  }
}

/**
 * What `db` holds in `sqlite_master` that `expected` does not: an object of another name, or of
 * the same name but another type, table or definition. A trigger or a view added to a backup
 * would run, or be read, as if it were Shiplog's.
 */
function foreignObjects(db: SQLite.Database, expected: SchemaObject[]): string[] {
  const known = new Map(expected.map((o) => [o.name, o]));
  const found = db
    .prepare('select type, name, tbl_name, sql from sqlite_master order by type, name')
    .all() as SchemaObject[];
  const foreign: string[] = [];
  for (const o of found) {
    if (o.type === 'table' && STATISTICS.has(o.name)) continue;
    const mine = known.get(o.name);
    const on = o.tbl_name !== o.name ? ` on ${o.tbl_name}` : '';
    if (!mine || mine.type !== o.type) foreign.push(`${o.type} ${o.name}${on}`);
    else if (mine.tbl_name !== o.tbl_name || !sameSql(mine.sql, o.sql))
      foreign.push(`${o.type} ${o.name}${on} (defined otherwise than this version defines it)`);
  }
  return foreign;
}

/**
 * Checks a private copy (nobody else has it open) and makes it one self-contained file: a whole
 * SQLite database (`PRAGMA integrity_check` and `foreign_key_check` clean), with Shiplog's tables
 * and a migration state this version knows (the migrations applied are the first ones of this
 * version's list: never one it does not know), switched from WAL to a rollback journal so that
 * no -wal file belongs with it. What its schema holds beyond what those migrations create is
 * listed (`foreign`), and with `refuseForeign` refused. `shownAs` names the copy in messages.
 * Throws BackupError.
 */
async function inspectCopy(file: string, shownAs: string, refuseForeign: boolean): Promise<CopySummary> {
  let db: SQLite.Database | undefined;
  try {
    db = new SQLite(file, { fileMustExist: true });
    const problems = db.prepare('pragma integrity_check').pluck().all() as string[];
    if (problems.length !== 1 || problems[0] !== 'ok') {
      throw new BackupError(
        `${shownAs} is damaged; PRAGMA integrity_check reports:\n  ${problems.slice(0, 10).join('\n  ')}`,
      );
    }
    const applied = appliedMigrations(db, shownAs);
    const foreign = foreignObjects(db, await schemaOf(applied));
    if (foreign.length && refuseForeign) {
      throw new BackupError(
        `${shownAs} holds what this version of Shiplog does not create: ${foreign.join(', ')}. ` +
          'It may have been tampered with; nothing was restored. Restore a backup made with "shiplog backup", ' +
          'or remove these from a copy of it if you know them to be harmless.',
      );
    }
    const orphans = db.prepare('pragma foreign_key_check').all();
    if (orphans.length)
      throw new BackupError(
        `${shownAs} is damaged: PRAGMA foreign_key_check finds ${orphans.length} row(s) ` +
          'pointing at rows that do not exist.',
      );
    db.pragma('journal_mode = DELETE');
    const summary = summaryOf(db, file, applied, foreign);
    db.close();
    return { ...summary, bytes: fs.statSync(file).size };
  } catch (err) {
    if (err instanceof BackupError) throw err;
    const damage =
      (err as { code?: string }).code === 'SQLITE_CORRUPT' ? 'is damaged' : 'is not a usable SQLite database';
    throw new BackupError(`${shownAs} ${damage}: ${(err as Error).message}.`);
  } finally {
    if (db?.open) db.close();
  }
}

/**
 * The migrations applied to a Shiplog database, which must be the first ones of this version's
 * list, in order. Throws BackupError for a database without Shiplog's tables or migrations, or with
 * a migration this version does not know.
 */
function appliedMigrations(db: SQLite.Database, shownAs: string): string[] {
  const tables = new Set(db.prepare("select name from sqlite_master where type = 'table'").pluck().all() as string[]);
  const missing = SHIPLOG_TABLES.filter((t) => !tables.has(t));
  const applied = missing.length
    ? []
    : (db.prepare('select name from kysely_migration order by name').pluck().all() as string[]);
  if (missing.length || applied.length === 0) {
    const lacks = missing.length ? `the tables ${missing.join(', ')}` : 'any migration';
    throw new BackupError(`${shownAs} is not a Shiplog database (it lacks ${lacks}).`);
  }
  const unknown = applied.filter((name) => !MIGRATION_NAMES.includes(name));
  if (unknown.length) {
    throw new BackupError(
      `${shownAs} comes from a newer version of Shiplog ` +
        `(migrations this version does not know: ${unknown.join(', ')}); restore it with that version.`,
    );
  }
  if (applied.some((name, i) => name !== MIGRATION_NAMES[i])) {
    throw new BackupError(
      `${shownAs} has migrations applied out of order (${applied.join(', ')}); Shiplog never leaves a database so.`,
    );
  }
  return applied;
}

/** What a checked copy holds, as the backup and restore commands report it; its bytes are counted once it is closed. */
function summaryOf(db: SQLite.Database, file: string, applied: string[], foreign: string[]): CopySummary {
  const count = (sql: string): number => db.prepare(sql).pluck().get() as number;
  return {
    file,
    bytes: 0,
    pages: db.pragma('page_count', { simple: true }) as number,
    pageSize: db.pragma('page_size', { simple: true }) as number,
    products: count('select count(*) from products'),
    items: count('select count(*) from items'),
    deploys: count('select count(*) from deploys'),
    pendingMail: count("select count(*) from outbox where status in ('pending', 'sending')"),
    migrations: applied.length,
    knownMigrations: MIGRATION_NAMES.length,
    foreign,
  };
}

/**
 * Puts a checked copy at `target`, or nothing: `fill` writes the copy under a temporary name beside
 * `target`; it is checked (inspectCopy, naming it `shownAs`), synced, and renamed over `target`
 * once `beforeRename` has passed (with `refuseForeign`, only a copy whose schema is all this
 * version's). On any failure the temporary copy is removed.
 */
async function installCopy(
  target: string,
  shownAs: string,
  fill: (tmp: string) => Promise<void> | void,
  beforeRename: () => void = () => undefined,
  refuseForeign = false,
): Promise<CopySummary> {
  const tmp = temporaryName(target);
  try {
    await fill(tmp);
    // A copy holds what the database holds (signing keys, webhook secrets): the owner's alone.
    makePrivate(tmp);
    const summary = await inspectCopy(tmp, shownAs, refuseForeign);
    sync(tmp);
    beforeRename();
    fs.renameSync(tmp, target);
    sync(path.dirname(target));
    return { ...summary, file: target };
  } catch (err) {
    removeDatabaseFiles(tmp);
    throw err;
  }
}

/**
 * Copies the live database at `live` to `file` with SQLite's online backup, while servers keep
 * reading and writing it: the copy is the database as one transaction saw it, written to a
 * temporary name beside `file`, checked (inspectCopy), synced and only then renamed to `file`.
 * Refuses an existing `file` unless `force`. Throws BackupError.
 */
export async function backupDatabase(live: string, file: string, force: boolean): Promise<CopySummary> {
  const target = path.resolve(file);
  if (!fs.existsSync(live)) throw new BackupError(`There is no database at ${live} to back up (is DATA_DIR right?).`);
  if (isSameFile(target, live)) throw new BackupError(`${target} is the database itself; back it up to another file.`);
  if (fs.existsSync(target)) {
    if (fs.statSync(target).isDirectory()) throw new BackupError(`${target} is a directory; name the backup file.`);
    if (!force) throw new BackupError(`${target} exists; add --force to replace it.`);
  }
  if (!fs.existsSync(path.dirname(target)))
    throw new BackupError(`The directory ${path.dirname(target)} does not exist.`);
  return installCopy(target, `The copy of ${live}`, async (tmp) => {
    // Made first, private: SQLite would create the copy under the umask.
    privateFile(tmp);
    const source = new SQLite(live, { fileMustExist: true, timeout: 5000 });
    try {
      // One read transaction around the whole copy: every step of the backup reads the snapshot it
      // took. In WAL mode a reader never blocks the server's writers, and without it the backup
      // would start over each time another process commits, possibly for ever under load.
      source.exec('begin');
      source.prepare('select count(*) from sqlite_master').get();
      await source.backup(tmp);
      source.exec('commit');
    } finally {
      source.close();
    }
  });
}

/**
 * Makes sure nothing has the live database open, and clears the old database's -wal and -shm
 * so that they cannot be mistaken for the restored database's. Throws BackupError when it is in use.
 *
 * Why the check is sound: Shiplog opens its database only in WAL mode, and in WAL mode every open
 * connection holds a SHARED lock on the database file from its first read until it closes, idle
 * or not (a running server's connection and its checkpointer thread's, another shiplog command's).
 * A connection in EXCLUSIVE locking mode takes an EXCLUSIVE lock on the file at its first
 * transaction, which is granted only when no other connection holds any lock: so the BEGIN
 * EXCLUSIVE below succeeds exactly when nothing else has the database open. (A plain BEGIN
 * EXCLUSIVE would not do: in WAL mode it takes only the write lock, which an idle server does not
 * hold.) A process that died without closing has released its locks with its file descriptors:
 * its -wal and -shm stay behind, and it rightly counts as stopped.
 *
 * While the lock is held, leaving WAL mode makes SQLite fold the old WAL into the old file and
 * delete it; a stale -wal left beside the restored file would otherwise be replayed onto it. The
 * -shm is then removed: a connection opens it only after taking its lock on the database file.
 * The lock ends before the rename, so a server started during those milliseconds could still open
 * the old file: restore is for a stopped installation, and this check catches one left running.
 */
function claimLiveDatabase(live: string): void {
  if (!fs.existsSync(live)) {
    removeDatabaseFiles(live, ['-wal', '-shm', '-journal']);
    return;
  }
  const db = new SQLite(live, { fileMustExist: true, timeout: LOCK_WAIT_MS });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    try {
      db.exec('begin exclusive');
      db.exec('commit');
      db.pragma('journal_mode = DELETE');
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
        throw new BackupError(
          `${live} is in use: a server (or another shiplog command) has it open. ` +
            'Stop every server on this DATA_DIR, then restore again.',
        );
      }
      // A file SQLite cannot read as a database cannot be open in a server either: it is replaced,
      // and a log beside it belongs to no database that will be there.
      if (code === 'SQLITE_NOTADB') {
        removeDatabaseFiles(live, ['-wal', '-shm']);
        return;
      }
      throw new BackupError(
        `Could not make sure that ${live} is not in use: ${(err as Error).message}. ` +
          'Move it away yourself, then restore again.',
      );
    }
    removeDatabaseFiles(live, ['-shm']);
  } finally {
    db.close();
  }
}

/**
 * Replaces the live database at `live` with the Shiplog database in `file`: copies it beside
 * `live` under a temporary name, checks the copy (inspectCopy), syncs it, makes sure no process
 * has the live database open (claimLiveDatabase) and renames the copy over it. The live database
 * is left as it was unless the copy passed every check and nothing has it open. Throws BackupError.
 */
export async function restoreDatabase(file: string, live: string): Promise<CopySummary> {
  const source = path.resolve(file);
  if (!fs.existsSync(source) || !fs.statSync(source).isFile())
    throw new BackupError(`There is no file ${source} to restore.`);
  if (isSameFile(source, live)) throw new BackupError(`${source} is the live database itself.`);
  if (fs.existsSync(`${source}-wal`) && fs.statSync(`${source}-wal`).size > 0) {
    throw new BackupError(
      `${source}-wal exists: the file is open in a server or was not closed, ` +
        'and its latest changes are in that log, not in the file. Restore a copy made with "shiplog backup".',
    );
  }
  privateDirectory(path.dirname(live));
  return installCopy(
    live,
    source,
    (tmp) => fs.copyFileSync(source, tmp),
    () => claimLiveDatabase(live),
    true,
  );
}
