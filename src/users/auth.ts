import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/connection.js';
import { unlessStorageRefuses } from '../db/storage.js';
import type { UserRow } from '../db/schema.js';
import { InvalidUserError } from '../errors.js';
import { API_KEY_SECURITY, UNAVAILABLE, type ScopeDocumentation } from '../http/documentation.js';
import { formatTimestamp } from '../time.js';
import { apiKeyMatches, API_KEY_PATTERN, hashApiKey } from './keys.js';
import { forgetProfile } from './profiles.js';
import { findUserBy, setLastLogin, type UserLookup } from './repository.js';

// Compared against when the email is unknown, so both failures take the same time.
const DUMMY_HASH = hashApiKey('0'.repeat(32));

/** What an Authorization header presents: HTTP Basic (email, API key) or Bearer (API key). */
type Credentials = { email: string; key: string } | { keyHash: string };

/** The credentials of an Authorization header; InvalidUserError (403) when missing or malformed. */
function credentialsOf(header: string | undefined): Credentials {
  if (!header) throw new InvalidUserError(true);
  const [scheme, credentials = ''] = header.trim().split(/\s+/, 2);
  if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(credentials, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1 || decoded.includes('\u0000')) throw new InvalidUserError();
    return { email: decoded.slice(0, colon).trim(), key: decoded.slice(colon + 1) };
  }
  if (/^bearer$/i.test(scheme) && API_KEY_PATTERN.test(credentials)) return { keyHash: hashApiKey(credentials) };
  throw new InvalidUserError();
}

/**
 * Resolves the caller from an Authorization header, with what `find` reads along with the user
 * the credentials name, in the same query (the product of a request's path, say): `find` is
 * given how to look the user up, and returns that user (undefined when none) with the rest.
 * Throws InvalidUserError (403) for anything missing, malformed or wrong.
 */
export async function authenticateWith<T extends { user: UserRow | undefined }>(
  db: Db,
  header: string | undefined,
  find: (lookup: UserLookup) => Promise<T>,
): Promise<T & { user: UserRow }> {
  const credentials = credentialsOf(header);
  const found = await find('email' in credentials ? { email: credentials.email.toLowerCase() } : credentials);
  // Basic: the key is compared even when the email is unknown, so both failures take the same time.
  if ('key' in credentials && !apiKeyMatches(credentials.key, found.user?.api_key_hash ?? DUMMY_HASH))
    throw new InvalidUserError();
  const user = found.user;
  if (!user) throw new InvalidUserError();
  await noteLogin(db, user);
  return { ...found, user };
}

/** The caller of an Authorization header (see authenticateWith). */
export async function authenticate(db: Db, header: string | undefined): Promise<UserRow> {
  return (await authenticateWith(db, header, async (lookup) => ({ user: await findUserBy(db, lookup) }))).user;
}

/**
 * last_login moves at most once a minute, so reads do not turn into a write each; and a read goes
 * on when the storage takes no writes (a full disk), only the note waits.
 */
async function noteLogin(db: Db, user: UserRow): Promise<void> {
  const now = new Date();
  if (user.last_login && now.getTime() - Date.parse(user.last_login) < 60_000) return;
  const at = formatTimestamp(now);
  if (!(await unlessStorageRefuses(() => setLastLogin(db, user.id, at)))) return;
  forgetProfile(db, user.id);
  user.last_login = at;
}

/** What requireUser adds to each route it guards, for the API's description. */
export const requireUserDocumentation: ScopeDocumentation = {
  security: API_KEY_SECURITY,
  errors: { 403: 'Credentials missing, malformed or wrong ("Invalid or unknown user.").', ...UNAVAILABLE },
  headers: {
    403: {
      'WWW-Authenticate': {
        type: 'string',
        description: '`Basic realm="shiplog"`, when no Authorization header was sent.',
      },
    },
  },
};

/** onRequest hook: the caller, before anything else is looked at (docs/INTERFACE.md §2). */
export function requireUser(db: Db) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    request.user = await authenticate(db, request.headers.authorization);
  };
}
