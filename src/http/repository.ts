import type { Db } from '../db/connection.js';

/** One key's requests in its current window: how many, and when it ends (ms since the epoch). */
export interface Window {
  count: number;
  endsAt: number;
}

/**
 * Adds `amount` requests of `key` to the shared windows (PostgreSQL), in one statement: a window
 * that has ended starts again at `amount` with a new end, one that runs counts up. The row is
 * locked for the moment of the update, so concurrent claims of one key from any instance each get
 * counts of their own.
 */
export async function countInWindow(db: Db, key: string, now: number, windowMs: number, amount = 1): Promise<Window> {
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key, count: amount, ends_at: now + windowMs })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet((eb) => ({
        count: eb
          .case()
          .when('rate_limit_windows.ends_at', '<=', now)
          .then(amount)
          .else(eb('rate_limit_windows.count', '+', amount))
          .end(),
        ends_at: eb
          .case()
          .when('rate_limit_windows.ends_at', '<=', now)
          .then(eb.ref('excluded.ends_at'))
          .else(eb.ref('rate_limit_windows.ends_at'))
          .end(),
      })),
    )
    .returning(['count', 'ends_at'])
    .executeTakeFirstOrThrow();
  return { count: row.count, endsAt: Number(row.ends_at) };
}

/** Deletes the windows that ended before `before`; returns how many. */
export async function deleteEndedWindows(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('rate_limit_windows').where('ends_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
