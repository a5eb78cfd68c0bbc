import crypto from 'node:crypto';
import type { Db, Trx } from '../db/connection.js';
import { unlessStorageRefuses } from '../db/storage.js';
import type { ItemRow, UserRow } from '../db/schema.js';
import { itemNotFound, NotFoundError, TooManyRequestsError } from '../errors.js';
import { deployHistoryOf, type ItemDeploy } from '../deploys/index.js';
import { childrenOfItem } from '../items/index.js';
import { shownHtml } from '../markdown.js';
import { queueSignin } from '../mail/index.js';
import { formatTimestamp } from '../time.js';
import { clientKey } from '../http/rate-limit.js';
import { findUserByEmail, findUserById, rotateApiKey } from '../users/index.js';
import { LruCache } from '../lru.js';
import { listMembers } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { personName } from './views/parts.js';
import {
  countItemDeployments,
  countSigninRequests,
  findItemForPage,
  followersWithNames,
  follows,
  itemDeploymentsWithPeople,
  type AroundItem,
  type DeploymentWithPeople,
  lockSigninRequests,
  deleteSession,
  deleteSessionsOf,
  findSession,
  findUsableLink,
  insertSession,
  insertSigninLink,
  insertSigninRequest,
  pruneSessions,
  pruneSignin,
  pruneSigninClients,
  rememberSigninClient,
  signedInFromSince,
  touchSession,
  useLink,
} from './repository.js';

/** A sign-in link works this long, and once. */
export const LINK_VALID_MS = 15 * 60_000;
/**
 * Links asked for within the window: for one address from one client (IPv6 by /64), from one
 * client for any addresses, and for one address from anywhere. A stranger's requests use up only
 * their own count for an address, not its owner's. The ceiling per address bounds the mail one
 * inbox gets from strangers (30 an hour); it does not hold back a client from which the address's
 * person used a link within `trustedForMs`, which has only its own count per address, so that
 * strangers on six networks cannot lock the person out. Requests for addresses without an account
 * count the same way (no client was ever trusted for them), so the answers say nothing about
 * accounts. The trust lasts 30 days, the default lifetime of a page session: whoever signs in at least
 * that often keeps it where they sign in, and a network left (or given up) stops counting.
 */
export const LINK_LIMITS = {
  perAddressAndClient: 5,
  perClient: 20,
  perAddress: 30,
  windowMs: 3600_000,
  trustedForMs: 30 * 24 * 3600_000,
} as const;
/** last_seen_at (and the cookie's lifetime) moves at most this often, so pages are not a write each. */
const TOUCH_EVERY_MS = 60_000;

const sha256 = (s: string): string => crypto.createHash('sha256').update(s).digest('hex');
const randomToken = (): string => crypto.randomBytes(32).toString('base64url');

/**
 * The token of a link, made from its random salt with the service's sign-in key: the database
 * keeps the salt and the token's hash, so the outbox can put the token into the message when it
 * sends it, while the token itself is stored nowhere.
 */
export const linkToken = (signinKey: string, salt: string): string =>
  crypto.createHmac('sha256', signinKey).update(`signin ${salt}`).digest('base64url');

async function newLink(
  trx: Trx,
  signinKey: string,
  user: UserRow,
  messageId: string | null,
  now: Date,
): Promise<{ token: string; expiresAt: string }> {
  const salt = crypto.randomBytes(16).toString('hex');
  const token = linkToken(signinKey, salt);
  const expiresAt = formatTimestamp(new Date(now.getTime() + LINK_VALID_MS));
  await insertSigninLink(trx, {
    user_id: user.id,
    token_hash: sha256(token),
    token_salt: salt,
    message_id: messageId,
    created_at: formatTimestamp(now),
    expires_at: expiresAt,
  });
  return { token, expiresAt };
}

const trustedSince = (now: Date): string => formatTimestamp(new Date(now.getTime() - LINK_LIMITS.trustedForMs));

/**
 * Someone asks for a link for `email` from `clientIp`. Every request counts towards the limits,
 * known address or not, so that the answer (and when a 429 comes) says nothing about accounts;
 * only an address with an account gets a message. Returns whether one was queued.
 */
export async function requestSignInLink(
  trx: Trx,
  request: { email: string; clientIp: string },
  signinKey: string,
  mailDomain: string,
  now: Date,
): Promise<boolean> {
  await lockSigninRequests(trx);
  const client = clientKey(request.clientIp);
  const since = formatTimestamp(new Date(now.getTime() - LINK_LIMITS.windowMs));
  const counts = await countSigninRequests(trx, request.email, client, since);
  const refuse = (message: string, oldest: string | null) =>
    new TooManyRequestsError(
      message,
      Math.max(1, Math.ceil((Date.parse(oldest ?? '') + LINK_LIMITS.windowMs - now.getTime()) / 1000) || 60),
    );
  if (counts.byEmailAndClient.n >= LINK_LIMITS.perAddressAndClient) {
    throw refuse(
      'Too many sign-in links were asked for this address from your network; try again later.',
      counts.byEmailAndClient.oldest,
    );
  }
  if (counts.byClient.n >= LINK_LIMITS.perClient)
    throw refuse('Too many sign-in links were asked for from your network; try again later.', counts.byClient.oldest);
  const user = await findUserByEmail(trx, request.email);
  if (
    counts.byEmail.n >= LINK_LIMITS.perAddress &&
    !(user && (await signedInFromSince(trx, user.id, client, trustedSince(now))))
  ) {
    throw refuse('Too many sign-in links were asked for this address; try again later.', counts.byEmail.oldest);
  }
  await pruneSignin(trx, since, formatTimestamp(new Date(now.getTime() - 24 * 3600_000)));
  await insertSigninRequest(trx, request.email, client, formatTimestamp(now));
  if (!user) return false;
  const messageId = await queueSignin(trx, user, mailDomain, now, LINK_VALID_MS);
  await newLink(trx, signinKey, user, messageId, now);
  return true;
}

/** A link for an operator to hand over (`shiplog user login-link`): no mail, no rate limit. */
export async function operatorSignInLink(
  trx: Trx,
  signinKey: string,
  publicUrl: string,
  email: string,
  now = new Date(),
): Promise<string> {
  const user = await findUserByEmail(trx, email.trim());
  if (!user) throw new NotFoundError(`No user with email ${email.trim().toLowerCase()}.`);
  const { token } = await newLink(trx, signinKey, user, null, now);
  return signInUrl(publicUrl, token);
}

export const signInUrl = (publicUrl: string, token: string): string => `${publicUrl}/app/sign-in/${token}`;

/** Whether a link would sign in now (what its page shows; nothing is used up). */
export async function linkUsable(db: Db, token: string, now = new Date()): Promise<boolean> {
  return (await findUsableLink(db, sha256(token), formatTimestamp(now))) !== undefined;
}

/** How long a page session lasts: since its last request, and since it began, whatever its activity. */
export interface SessionPolicy {
  idleMs: number;
  lifetimeMs: number;
}

export interface ActiveSession {
  idHash: string;
  user: UserRow;
  csrfToken: string;
  /** When the browser signed in, which a renewed session keeps. */
  startedAt: string;
  /** Whether last_seen_at moved now (the cookie is then given its full lifetime again). */
  touched: boolean;
}

/** A session with the id its cookie holds (the database keeps only the id's hash). */
export type NewSession = ActiveSession & { id: string };

/** Until when a session can last at most: its start and the policy's lifetime. */
export const sessionEndsAt = (session: ActiveSession, policy: SessionPolicy): number =>
  Date.parse(session.startedAt) + policy.lifetimeMs;

async function startSession(trx: Trx, user: UserRow, startedAt: string, now: Date): Promise<NewSession> {
  const id = randomToken();
  const csrfToken = randomToken();
  await insertSession(trx, {
    id_hash: sha256(id),
    user_id: user.id,
    csrf_token: csrfToken,
    created_at: startedAt,
    last_seen_at: formatTimestamp(now),
  });
  return { id, idHash: sha256(id), user, csrfToken, startedAt, touched: true };
}

/**
 * Uses a link up and starts a session for its user; undefined when the link no longer works. The
 * client that used it is trusted for the user's later requests for links: only someone who can
 * read the person's mail gets there. (Not the client that asked: a stranger may have asked.)
 */
export async function signIn(
  trx: Trx,
  token: string,
  clientIp: string,
  policy: SessionPolicy,
  now = new Date(),
): Promise<NewSession | undefined> {
  const at = formatTimestamp(now);
  const userId = await useLink(trx, sha256(token), at);
  const user = userId === undefined ? undefined : await findUserById(trx, userId);
  if (!user) return undefined;
  await pruneSigninClients(trx, trustedSince(now));
  await rememberSigninClient(trx, user.id, clientKey(clientIp), at);
  await pruneSessions(
    trx,
    formatTimestamp(new Date(now.getTime() - policy.idleMs)),
    formatTimestamp(new Date(now.getTime() - policy.lifetimeMs)),
  );
  return startSession(trx, user, at, now);
}

/** What the database keeps of a session's id: its hash, so that the table says nothing a cookie could be made of. */
export const sessionIdHash = (id: string): string => sha256(id);

/**
 * The session whose id has the hash `idHash` (sessionIdHash), while it is active: used within the
 * idle time and begun within the lifetime. Its last_seen_at moves at most once a minute.
 */
export async function resumeSession(
  db: Db,
  idHash: string,
  policy: SessionPolicy,
  now = new Date(),
): Promise<ActiveSession | undefined> {
  const found = await findSession(
    db,
    idHash,
    formatTimestamp(new Date(now.getTime() - policy.idleMs)),
    formatTimestamp(new Date(now.getTime() - policy.lifetimeMs)),
  );
  if (!found) return undefined;
  // A page is still shown when the storage takes no writes; the session is then simply not moved on.
  const touched =
    now.getTime() - Date.parse(found.session.last_seen_at) >= TOUCH_EVERY_MS &&
    (await unlessStorageRefuses(() => touchSession(db, idHash, formatTimestamp(now))));
  return {
    idHash,
    user: found.user,
    csrfToken: found.session.csrf_token,
    startedAt: found.session.created_at,
    touched,
  };
}

export async function signOut(db: Db, session: ActiveSession): Promise<void> {
  await deleteSession(db, session.idHash);
}

/** Ends every page session of the session's person, this one included ("sign out everywhere"). */
export async function signOutEverywhere(db: Db, session: ActiveSession): Promise<void> {
  await deleteSessionsOf(db, session.user.id);
}

/**
 * Issues a new API key for `email` and ends every page session of the person: whoever may have
 * had the old key may have had a session too. For the operator's command line.
 */
export async function replaceApiKey(trx: Trx, email: string): Promise<string> {
  const apiKey = await rotateApiKey(trx, email);
  const user = await findUserByEmail(trx, email.trim());
  if (user) await deleteSessionsOf(trx, user.id);
  return apiKey;
}

/**
 * A new API key asked for from the settings page: every session of the person ends, and the
 * browser that asked goes on in a new one (a new id and form token) that keeps its sign-in time,
 * so that a new key never lengthens a session.
 */
export async function replaceApiKeyFromPage(
  trx: Trx,
  session: ActiveSession,
  now = new Date(),
): Promise<{ apiKey: string; session: NewSession }> {
  const apiKey = await replaceApiKey(trx, session.user.email);
  return { apiKey, session: await startSession(trx, session.user, session.startedAt, now) };
}

/** Whether a form's token is the session's, compared in constant time. */
export function formTokenMatches(session: ActiveSession, sent: string): boolean {
  const a = Buffer.from(sha256(sent));
  const b = Buffer.from(sha256(session.csrfToken));
  return sent.length > 0 && crypto.timingSafeEqual(a, b);
}

/**
 * Members' lists per database and product revision (every new member or change of role moves it;
 * names never change).
 */
const memberLists = new WeakMap<Db, LruCache<string, Member[]>>();

/** A member as the pages' choices of people name them. */
export interface Member {
  id: number;
  name: string;
}

/** A product's members by name, for the assignee choices: the same on every page of a revision, so read once for it. */
export function membersOf(db: Db, scope: ProductScope): Promise<Member[]> {
  let lists = memberLists.get(db);
  if (!lists) {
    lists = new LruCache(256);
    memberLists.set(db, lists);
  }
  return lists.getOrMake(`${scope.product.id}:${scope.product.revision}`, async () =>
    (await listMembers(db, scope.product.id)).map((m) => ({ id: m.id, name: personName(m) })),
  );
}

/** A page of an item's environments (latest first), with the people of each, and how many there are. */
export async function environmentsOf(
  db: Db,
  scope: ProductScope,
  item: ItemRow,
  page: { offset: number; limit: number },
): Promise<{ entries: DeploymentWithPeople[]; total: number }> {
  const entries = await itemDeploymentsWithPeople(db, scope.product.id, item.id, page);
  // A first page that is not full holds them all.
  const total =
    page.offset === 0 && entries.length < page.limit ? entries.length : await countItemDeployments(db, item.id);
  return { entries, total };
}

/** What an item's page shows besides the item's JSON (see itemPageOf). */
export interface ItemPageData {
  row: ItemRow;
  /** The description as HTML: kept when it was written, escaped text for an item from before. */
  descriptionHtml: string;
  environments: { entries: DeploymentWithPeople[]; total: number };
  /** A story's first sub-items; none for other types. */
  children?: { rows: ItemRow[]; total: number };
  /** The latest deploys of the item, newest first. */
  history: { deploys: ItemDeploy[]; total: number };
  followers: { names: string[]; following: boolean };
  /** Which lists around the item hold anything (the page reads only those). */
  around: AroundItem;
}

/**
 * Everything an item's page reads but the item's JSON, the first `limit` of each list: the item,
 * its description's HTML and which lists around it hold anything in one query, then at once its
 * environments with their people and its deploy history (when it went anywhere), its sub-items,
 * and its followers by name.
 */
export async function itemPageOf(db: Db, scope: ProductScope, number: number, limit: number): Promise<ItemPageData> {
  const found = await findItemForPage(db, scope.product.id, number);
  if (!found) throw itemNotFound(number);
  const { row, around } = found;
  const page = { offset: 0, limit };
  const nowhere = { entries: [], total: 0 };
  const [[environments, history], children, followers] = await Promise.all([
    (around.deployments ? environmentsOf(db, scope, row, page) : Promise.resolve(nowhere)).then(
      async (environments) => {
        // Every deploy of an item leaves its entry for the environment (a rollback marks it reverted,
        // nothing removes it): an item deployed nowhere has no history to read.
        const history =
          environments.total === 0
            ? { deploys: [], total: 0 }
            : await deployHistoryOf(db, scope, row.id, { ...page, newest: true });
        return [environments, history] as const;
      },
    ),
    row.type !== 'story' ? undefined : around.children ? childrenOfItem(db, row, page) : { rows: [], total: 0 },
    followersOf(db, row.id, scope.user.id, limit),
  ]);
  const descriptionHtml = row.description === '' ? '' : shownHtml(row.description, found.descriptionHtml);
  return { row, descriptionHtml, environments, children, history, followers, around };
}

/** The first `limit` followers of an item by name, and whether `userId` follows it. */
async function followersOf(db: Db, itemId: number, userId: number, limit: number) {
  const rows = await followersWithNames(db, itemId, limit);
  const following = rows.some((u) => u.id === userId) || (rows.length >= limit && (await follows(db, itemId, userId)));
  return { names: rows.map(personName), following };
}
