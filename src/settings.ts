import crypto from 'node:crypto';
import type { Db } from './db/connection.js';

/**
 * A value the service makes for itself on first use and keeps in the database, so that every
 * instance on the same database agrees on it (the first writer wins).
 */
export async function sharedSecret(db: Db, name: string): Promise<string> {
  // Read first: a database that takes no writes (a full disk, a standby) still lets the app start.
  const existing = await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('settings')
    .values({ name, value: crypto.randomBytes(32).toString('hex') })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}
