import type { Db } from '../db/connection.js';
import type { UserRow } from '../db/schema.js';
import { LruCache } from '../lru.js';
import { findUsersByIds } from './repository.js';

/** What item and deploy JSON embed of a user. */
export type UserProfile = Pick<UserRow, 'id' | 'email' | 'first_name' | 'last_name' | 'created_at' | 'last_login'>;

/**
 * How long a remembered profile is used. Nothing changes a user's name, email or creation time
 * once the user exists, so only last_login can go stale, and that moves at most once a minute
 * anyway (see noteLogin); this process forgets a user the moment it records their login.
 */
export const PROFILE_TTL_MS = 30_000;
const CAPACITY = 10_000;

// One memory per database handle: tests open many databases in one process, and ids repeat.
const memories = new WeakMap<Db, LruCache<number, UserProfile>>();

function memoryOf(db: Db): LruCache<number, UserProfile> | undefined {
  // Inside a transaction rows may be uncommitted or locked: always read.
  if (db.isTransaction) return undefined;
  let memory = memories.get(db);
  if (!memory) {
    memory = new LruCache(CAPACITY, PROFILE_TTL_MS);
    memories.set(db, memory);
  }
  return memory;
}

/** Profiles of the given users (those that exist), read once and remembered for a while. */
export async function findProfiles(db: Db, ids: number[], now = Date.now()): Promise<Map<number, UserProfile>> {
  const memory = memoryOf(db);
  const found = new Map<number, UserProfile>();
  const missing: number[] = [];
  for (const id of new Set(ids)) {
    const known = memory?.get(id, now);
    if (known) found.set(id, known);
    else missing.push(id);
  }
  if (missing.length === 0) return found;
  for (const row of await findUsersByIds(db, missing)) {
    const profile: UserProfile = {
      id: row.id,
      email: row.email,
      first_name: row.first_name,
      last_name: row.last_name,
      created_at: row.created_at,
      last_login: row.last_login,
    };
    found.set(row.id, profile);
    memory?.set(row.id, profile, now);
  }
  return found;
}

/** Drops a remembered profile, after a change to the user's row. */
export function forgetProfile(db: Db, id: number): void {
  memories.get(db)?.delete(id);
}
