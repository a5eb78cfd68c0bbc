import { inChunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import { prepared } from '../db/prepared.js';
import { storableId, type UserRow } from '../db/schema.js';

const userByEmail = prepared((db, email: string) => db.selectFrom('users').selectAll().where('email', '=', email));
const userByKeyHash = prepared((db, hash: string) =>
  db.selectFrom('users').selectAll().where('api_key_hash', '=', hash),
);
const usersByIds = prepared((db, ids: number[]) => db.selectFrom('users').selectAll().where('id', 'in', ids));

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return (await userByEmail(db, email.toLowerCase()))[0];
}

export async function findUserByKeyHash(db: Db, hash: string): Promise<UserRow | undefined> {
  return (await userByKeyHash(db, hash))[0];
}

/** How a request names its caller: by email (Basic, the key checked against the row), or by the key's hash (Bearer). */
export type UserLookup = { email: string } | { keyHash: string };

export async function findUserBy(db: Db, lookup: UserLookup): Promise<UserRow | undefined> {
  return 'email' in lookup ? findUserByEmail(db, lookup.email) : findUserByKeyHash(db, lookup.keyHash);
}

export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  if (!storableId(id)) return undefined;
  return (await usersByIds(db, [id]))[0];
}

export async function findUsersByIds(db: Db, ids: number[]): Promise<UserRow[]> {
  return inChunks([...new Set(ids)], (chunk) => usersByIds(db, chunk));
}

/** Inserts a user unless the email or key is taken (then undefined), even against a concurrent insert. */
export async function insertUserIfAbsent(
  db: Db,
  user: { email: string; first_name: string; last_name: string; api_key_hash: string; created_at: string },
): Promise<UserRow | undefined> {
  return db
    .insertInto('users')
    .values({ ...user, email: user.email.toLowerCase() })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
}

const lastLogin = prepared((db, id: number, at: string) =>
  db.updateTable('users').set({ last_login: at }).where('id', '=', id),
);

export async function setLastLogin(db: Db, id: number, at: string): Promise<void> {
  await lastLogin(db, id, at);
}

export async function countUsers(db: Db): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function setKeyHash(db: Db, id: number, hash: string): Promise<void> {
  await db.updateTable('users').set({ api_key_hash: hash }).where('id', '=', id).execute();
}
