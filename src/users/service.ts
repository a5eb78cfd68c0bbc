import type { Db, Trx } from '../db/connection.js';
import type { UserRow } from '../db/schema.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { textProblem } from '../http/params.js';
import { nowTimestamp } from '../time.js';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './keys.js';
import * as repository from './repository.js';
import { findUserByKeyHash, insertUserIfAbsent, setKeyHash, type UserLookup } from './repository.js';

export type { UserLookup } from './repository.js';

const EMAIL_PATTERN = /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/;

export function validEmail(email: string): boolean {
  return email.length <= 254 && EMAIL_PATTERN.test(email);
}

export interface NewUserInput {
  email: string;
  firstName: string;
  lastName: string;
  apiKey?: string;
}

/**
 * Creates a user and returns it with its API key, the only time the key is visible.
 * Throws ValidationError on a malformed email, name or key, ConflictError when the email or key
 * is taken.
 */
export async function createUser(trx: Trx, input: NewUserInput): Promise<{ user: UserRow; apiKey: string }> {
  const errors: Record<string, string> = {};
  const email = input.email.trim().toLowerCase();
  if (!validEmail(email)) errors.email = 'must be an email address';
  if (!input.firstName.trim() || input.firstName.length > 255) errors.first_name = 'must be 1 to 255 characters';
  if (!input.lastName.trim() || input.lastName.length > 255) errors.last_name = 'must be 1 to 255 characters';
  for (const [field, value] of [
    ['first_name', input.firstName],
    ['last_name', input.lastName],
  ] as const) {
    const problem = textProblem(value);
    if (problem !== undefined) errors[field] ??= problem;
  }
  if (input.apiKey !== undefined && !API_KEY_PATTERN.test(input.apiKey))
    errors.api_key = 'must be 32 letters and digits';
  if (Object.keys(errors).length) throw new ValidationError(errors);

  if (await findUserByEmail(trx, email)) throw new ConflictError(`A user with email ${email} already exists.`);
  const apiKey = input.apiKey ?? generateApiKey();
  const hash = hashApiKey(apiKey);
  if (await findUserByKeyHash(trx, hash)) throw new ConflictError('That API key is already in use.');
  const user = await insertUserIfAbsent(trx, {
    email,
    first_name: input.firstName.trim(),
    last_name: input.lastName.trim(),
    api_key_hash: hash,
    created_at: nowTimestamp(),
  });
  if (!user) throw new ConflictError(`A user with email ${email} already exists.`);
  return { user, apiKey };
}

/** Issues a new API key for a user (the old one stops working) and returns it. */
export async function rotateApiKey(trx: Trx, email: string): Promise<string> {
  const user = await findUserByEmail(trx, email.trim());
  if (!user) throw new NotFoundError(`No user with email ${email.trim().toLowerCase()}.`);
  const apiKey = generateApiKey();
  await setKeyHash(trx, user.id, hashApiKey(apiKey));
  return apiKey;
}

/** The user of an email address (compared in lower case), if any. */
export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return repository.findUserByEmail(db, email);
}

/** The user of an id, if any (undefined for an id no row can have). */
export async function findUserById(db: Db, id: number): Promise<UserRow | undefined> {
  return repository.findUserById(db, id);
}

/** The users of these ids that exist, in no particular order; a few queries however many are asked for. */
export async function findUsersByIds(db: Db, ids: number[]): Promise<UserRow[]> {
  return repository.findUsersByIds(db, ids);
}

/** The user that a request's credentials name (see authenticateWith), if any. */
export async function findUserBy(db: Db, lookup: UserLookup): Promise<UserRow | undefined> {
  return repository.findUserBy(db, lookup);
}

/** How many users there are: none yet, and the server shows how to make the first. */
export async function countUsers(db: Db): Promise<number> {
  return repository.countUsers(db);
}
