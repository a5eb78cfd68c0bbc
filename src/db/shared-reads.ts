import type { Db } from './connection.js';
import { dialectOf } from './dialect.js';

/** A read waiting for its connection, and the requests that joined it since. */
interface Queued {
  read: Promise<unknown>;
  joined: { resolve: (value: unknown) => void; reject: (err: unknown) => void }[];
}

/** Per handle, the reads waiting for a connection, by what they ask. */
const waiting = new WeakMap<Db, Map<string, Queued>>();

/** Per handle, how the requests that joined a read go on (see resumeSharedReadsThrough). */
const resumers = new WeakMap<Db, (resume: () => void) => void>();

/** Requests that joined a read go on this many per turn of the event loop when no line is given. */
const JOINED_PER_TURN = 4;

/**
 * The requests that joined a shared read of `db` go on through `line`, which runs each when its
 * turn comes (http/read-turns.ts: the reads' own share of each turn of the event loop); with none,
 * they go on a few per turn besides it.
 */
export function resumeSharedReadsThrough(db: Db, line: ((resume: () => void) => void) | undefined): void {
  if (line) resumers.set(db, line);
  else resumers.delete(db);
}

/**
 * `read(db)`, shared with the requests that ask the same `question` of the same handle while it
 * waits for a connection (PostgreSQL; on SQLite, and in a transaction, it simply runs).
 *
 * On PostgreSQL every statement is a round trip: a write to a socket (at the saturated read mix a
 * seventh of the process's time went to writing statements) and the backend's work on a core the
 * service shares. Under saturating reads every connection of the pool is taken and dozens of
 * reads queue for the next one, many of them asking the very same thing (the caller and the
 * product of each request). A read that has not started yet can answer all of them: its statement
 * is sent after each of them was asked, so it sees every change committed before any of them was
 * (a read right after a write, on any instance, sees it). Once its connection is taken the read
 * is closed to newcomers, who start or join the next one.
 *
 * Those who joined go on a few per turn of the event loop, in the reads' own share of each turn
 * when the handle has a line (resumeSharedReadsThrough), not all in the turn the answer came:
 * dozens of requests going on at once made that turn as long as all their work, and a change
 * waiting for its next step waited for all of it.
 *
 * Everyone gets the same result: callers must not change what it holds.
 */
export function sharedUntilStarted<T>(db: Db, question: string, read: (db: Db) => Promise<T>): Promise<T> {
  if (db.isTransaction || dialectOf(db) !== 'postgres') return read(db);
  let reads = waiting.get(db);
  if (!reads) {
    reads = new Map();
    waiting.set(db, reads);
  }
  const queued = reads.get(question);
  if (queued) return new Promise<T>((resolve, reject) => queued.joined.push({ resolve: resolve as never, reject }));
  const close = () => {
    if (reads.get(question) === shared) reads.delete(question);
  };
  const shared: Queued = {
    read: db.connection().execute((connection) => {
      close();
      return read(connection);
    }),
    joined: [],
  };
  reads.set(question, shared);
  const settle = (tell: (joiner: Queued['joined'][number]) => void) => {
    close();
    const line = resumers.get(db);
    if (line) {
      for (const joiner of shared.joined.splice(0)) line(() => tell(joiner));
      return;
    }
    const next = () => {
      for (const joiner of shared.joined.splice(0, JOINED_PER_TURN)) tell(joiner);
      if (shared.joined.length) setImmediate(next);
    };
    setImmediate(next);
  };
  shared.read.then(
    (value) => settle((j) => j.resolve(value)),
    (err) => settle((j) => j.reject(err)),
  );
  return shared.read as Promise<T>;
}
