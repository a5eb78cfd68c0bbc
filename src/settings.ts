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

/**
 * Replaces a shared secret with a new random one. Instances read their secrets when they start,
 * so each uses the new value from its next start.
 */
export async function replaceSharedSecret(db: Db, name: string): Promise<void> {
  const value = crypto.randomBytes(32).toString('hex');
  await db
    .insertInto('settings')
    .values({ name, value })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value }))
    .execute();
}

/** Where a started server is reached (its PUBLIC_URL, given or derived), for the commands run beside it. */
const PUBLIC_URL = 'public_url';

/**
 * Records the server's address, so that a command that is not told it (a sign-in link printed in a
 * shell without the server's PORT) prints links that lead to this server. A database that takes
 * no writes keeps the last one recorded: the server starts anyway.
 */
export async function recordPublicUrl(db: Db, url: string): Promise<void> {
  await db
    .insertInto('settings')
    .values({ name: PUBLIC_URL, value: url })
    .onConflict((oc) => oc.column('name').doUpdateSet({ value: url }))
    .execute();
}

/** The address the last server started on this database recorded, if any. */
export async function recordedPublicUrl(db: Db): Promise<string | undefined> {
  const row = await db.selectFrom('settings').select('value').where('name', '=', PUBLIC_URL).executeTakeFirst();
  return row?.value;
}
