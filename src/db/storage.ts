import fs from 'node:fs/promises';
import { sql } from 'kysely';
import { databaseFull, databaseReadOnly, databaseUnreachable, type ServiceUnavailableError } from '../errors.js';
import { isDatabaseUnavailable, sqliteFile, type Db } from './connection.js';

/** Why the storage under the database refuses a write: no room left, or no writing at all. */
export type StorageProblem = 'full' | 'read-only';

/**
 * Whether an error says the storage refused a write rather than that the request or the code was
 * wrong. SQLite: SQLITE_FULL (no space), SQLITE_IOERR_* (a write the file system refused or
 * failed: a read-only remount, a failing disk) and SQLITE_READONLY_* (a file opened read-only).
 * PostgreSQL: disk_full (53100) and read_only_sql_transaction (25006: a standby, or
 * `default_transaction_read_only`). In each case the transaction was rolled back whole.
 */
export function storageProblem(err: unknown): StorageProblem | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (code === 'SQLITE_FULL' || code === '53100') return 'full';
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_READONLY') || code === '25006') return 'read-only';
  return undefined;
}

/**
 * The 503 a database failure is answered with: out of reach, out of space, or not writable. Any
 * other error is not the database's state but a bug (undefined: a logged 500).
 */
export function databaseFailure(err: unknown): ServiceUnavailableError | undefined {
  const problem = storageProblem(err);
  if (problem === 'full') return databaseFull();
  if (problem === 'read-only') return databaseReadOnly();
  return isDatabaseUnavailable(err) ? databaseUnreachable() : undefined;
}

/**
 * Runs a write that a read merely carries along (a user's `last_login`, a session's
 * `last_seen_at`): when the storage refuses it, the read goes on without it. Resolves with
 * whether it was written.
 */
export async function unlessStorageRefuses(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (storageProblem(err) === undefined) throw err;
    return false;
  }
}

/** Below this much free space under the embedded database, /health calls it out of space. */
export const LOW_SPACE_BYTES = 1024 * 1024;

export interface StorageState {
  problem?: StorageProblem;
  /** SQLite: the space left to the database's file system. */
  freeBytes?: number;
}

/**
 * What /health can learn of the storage without writing. SQLite: the space left on the data
 * directory's file system, and whether the database files can be written (a read-only remount, a
 * file made immutable). PostgreSQL: whether it takes writes at all (a standby, or
 * `default_transaction_read_only`); its disk is not ours to see, a full one shows in the 503s of
 * writes only.
 */
export async function checkStorage(db: Db, options: { dataDir: string; databaseUrl?: string }): Promise<StorageState> {
  if (options.databaseUrl) {
    const { rows } = await sql<{
      read_only: string;
    }>`select current_setting('transaction_read_only') as read_only`.execute(db);
    return rows[0]?.read_only === 'on' ? { problem: 'read-only' } : {};
  }
  const { bavail, bsize } = await fs.statfs(options.dataDir);
  const freeBytes = bavail * bsize;
  for (const file of [sqliteFile(options.dataDir), `${sqliteFile(options.dataDir)}-wal`]) {
    try {
      await fs.access(file, fs.constants.W_OK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return { problem: 'read-only', freeBytes };
    }
  }
  return freeBytes < LOW_SPACE_BYTES ? { problem: 'full', freeBytes } : { freeBytes };
}
