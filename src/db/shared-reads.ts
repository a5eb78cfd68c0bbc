import type { Db } from './connection.js';
import { dialectOf } from './dialect.js';

/** Per handle, the reads waiting for a connection, by what they ask. */
const waiting = new WeakMap<Db, Map<string, Promise<unknown>>>();

/**
 * `read(db)`, shared with the requests that ask the same `question` of the same handle while it
 * waits for a connection (PostgreSQL; on SQLite, and in a transaction, it simply runs).
 *
 * On PostgreSQL every statement is a round trip: a write to a socket (here, at a saturated read
 * mix, about a seventh of the process's time went to writing statements) and the backend's work
 * on a core the service shares. Under saturating reads every connection of the pool is taken and
 * dozens of reads queue for the next one, many of them asking the very same thing (the caller and
 * the product of each request). A read that has not started yet can answer all of them: its
 * statement is sent after each of them arrived, so it sees every change committed before any of
 * them was asked (a read right after a write, on any instance, sees it). Once its connection is
 * taken the read is closed to newcomers, who wait for the next one.
 *
 * Everyone who joined gets the same result: callers must not change what it holds.
 */
export function sharedUntilStarted<T>(db: Db, question: string, read: (db: Db) => Promise<T>): Promise<T> {
  if (db.isTransaction || dialectOf(db) !== 'postgres') return read(db);
  let reads = waiting.get(db);
  if (!reads) {
    reads = new Map();
    waiting.set(db, reads);
  }
  const queued = reads.get(question);
  if (queued) return queued as Promise<T>;
  const close = () => {
    if (reads.get(question) === shared) reads.delete(question);
  };
  const shared: Promise<T> = db
    .connection()
    .execute((connection) => {
      close();
      return read(connection);
    })
    .finally(close);
  reads.set(question, shared);
  return shared;
}
