import type { Db, Trx } from '../db/connection.js';
import {
  ITEM_COLUMNS,
  storableId,
  type ItemRow,
  type SigninLinkRow,
  type UserRow,
  type WebSessionRow,
} from '../db/schema.js';
import type { Deployment } from '../items/index.js';
import { sql } from 'kysely';
import { inChunks } from '../db/chunks.js';
import { dialectOf } from '../db/dialect.js';
import { prepared } from '../db/prepared.js';

// ---- requests for links (what the rate limits count)

/**
 * Makes requests for links count and record one at a time, so two at once cannot both pass a
 * limit: a transaction-long advisory lock on PostgreSQL; SQLite has a single writer already
 * (write transactions begin IMMEDIATE).
 */
export async function lockSigninRequests(trx: Trx): Promise<void> {
  if (dialectOf(trx) === 'postgres')
    await sql`select pg_advisory_xact_lock(hashtext('shiplog.signin_requests'))`.execute(trx);
}

export async function insertSigninRequest(trx: Trx, email: string, clientIp: string, at: string): Promise<void> {
  await trx.insertInto('signin_requests').values({ email, client_ip: clientIp, created_at: at }).execute();
}

/**
 * How many requests since `since` came for the address from anywhere, for the address from the
 * client, and from the client for any address; and the oldest of each, for Retry-After.
 */
export async function countSigninRequests(
  db: Db,
  email: string,
  client: string,
  since: string,
): Promise<Record<'byEmail' | 'byEmailAndClient' | 'byClient', { n: number; oldest: string | null }>> {
  const count = async (where: { email?: string; client_ip?: string }) => {
    let query = db
      .selectFrom('signin_requests')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where('created_at', '>=', since);
    if (where.email !== undefined) query = query.where('email', '=', where.email);
    if (where.client_ip !== undefined) query = query.where('client_ip', '=', where.client_ip);
    const row = await query.executeTakeFirstOrThrow();
    return { n: Number(row.n), oldest: row.oldest };
  };
  return {
    byEmail: await count({ email }),
    byEmailAndClient: await count({ email, client_ip: client }),
    byClient: await count({ client_ip: client }),
  };
}

/** Requests and links of the past are of no use to anyone; they go as new ones come. */
export async function pruneSignin(trx: Trx, requestsBefore: string, linksBefore: string): Promise<void> {
  await trx.deleteFrom('signin_requests').where('created_at', '<', requestsBefore).execute();
  await trx.deleteFrom('signin_links').where('expires_at', '<', linksBefore).execute();
}

// ---- clients a person signed in from (exempt from the per-address ceiling)

/** Records that the user used a link from the client now (or again). */
export async function rememberSigninClient(trx: Trx, userId: number, client: string, at: string): Promise<void> {
  await trx
    .insertInto('signin_clients')
    .values({ user_id: userId, client_ip: client, used_at: at })
    .onConflict((oc) => oc.columns(['user_id', 'client_ip']).doUpdateSet({ used_at: at }))
    .execute();
}

/** Whether the user used a link from the client since `since`. */
export async function signedInFromSince(db: Db, userId: number, client: string, since: string): Promise<boolean> {
  const row = await db
    .selectFrom('signin_clients')
    .select('used_at')
    .where('user_id', '=', userId)
    .where('client_ip', '=', client)
    .where('used_at', '>=', since)
    .executeTakeFirst();
  return row !== undefined;
}

/** Clients nobody has signed in from since `before` are trusted no longer. */
export async function pruneSigninClients(trx: Trx, before: string): Promise<void> {
  await trx.deleteFrom('signin_clients').where('used_at', '<', before).execute();
}

// ---- links

export async function insertSigninLink(
  trx: Trx,
  link: {
    user_id: number;
    token_hash: string;
    token_salt: string;
    message_id: string | null;
    created_at: string;
    expires_at: string;
  },
): Promise<void> {
  await trx.insertInto('signin_links').values(link).execute();
}

export async function findSigninLinksByMessageIds(db: Db, messageIds: string[]): Promise<SigninLinkRow[]> {
  return inChunks([...new Set(messageIds)], (chunk) =>
    db.selectFrom('signin_links').selectAll().where('message_id', 'in', chunk).execute(),
  );
}

/** The link of a token while it still works (unused, unexpired), or undefined. */
export async function findUsableLink(db: Db, tokenHash: string, now: string): Promise<SigninLinkRow | undefined> {
  return db
    .selectFrom('signin_links')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/**
 * Uses a link up: one guarded UPDATE, so that of two requests with the same token only one gets
 * the user id back, whatever the database and however many instances there are.
 */
export async function useLink(trx: Trx, tokenHash: string, now: string): Promise<number | undefined> {
  const row = await trx
    .updateTable('signin_links')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('user_id')
    .executeTakeFirst();
  return row?.user_id;
}

// ---- sessions

export async function insertSession(trx: Trx, session: WebSessionRow): Promise<void> {
  await trx.insertInto('web_sessions').values(session).execute();
}

const activeSession = prepared((db, idHash: string, activeSince: string, startedAfter: string) =>
  db
    .selectFrom('web_sessions')
    .innerJoin('users', 'users.id', 'web_sessions.user_id')
    .selectAll('users')
    .select([
      'web_sessions.id_hash',
      'web_sessions.csrf_token',
      'web_sessions.created_at as session_created_at',
      'web_sessions.last_seen_at',
    ])
    .where('web_sessions.id_hash', '=', idHash)
    .where('web_sessions.last_seen_at', '>=', activeSince)
    .where('web_sessions.created_at', '>', startedAfter),
);

/** A session seen since `activeSince` and begun after `startedAfter`, with its user. */
export async function findSession(
  db: Db,
  idHash: string,
  activeSince: string,
  startedAfter: string,
): Promise<{ session: WebSessionRow; user: UserRow } | undefined> {
  const [row] = await activeSession(db, idHash, activeSince, startedAfter);
  if (!row) return undefined;
  const { id_hash, csrf_token, session_created_at, last_seen_at, ...user } = row;
  return { session: { id_hash, user_id: user.id, csrf_token, created_at: session_created_at, last_seen_at }, user };
}

export async function touchSession(db: Db, idHash: string, at: string): Promise<void> {
  await db.updateTable('web_sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('web_sessions').where('id_hash', '=', idHash).execute();
}

/** Every session of a user, wherever it was started. */
export async function deleteSessionsOf(db: Db, userId: number): Promise<void> {
  await db.deleteFrom('web_sessions').where('user_id', '=', userId).execute();
}

/** Sessions that have ended: unused since `seenBefore`, or begun before `startedBefore`. */
export async function pruneSessions(trx: Trx, seenBefore: string, startedBefore: string): Promise<void> {
  await trx.deleteFrom('web_sessions').where('last_seen_at', '<', seenBefore).execute();
  await trx.deleteFrom('web_sessions').where('created_at', '<', startedBefore).execute();
}

// ---- pages

/**
 * The products a user belongs to with their items counted by status, in one query: one row per
 * product and status (a product without items has one row with a null status).
 */
export async function productOverviewRows(db: Db, userId: number) {
  return db
    .selectFrom('memberships')
    .innerJoin('products', 'products.id', 'memberships.product_id')
    .leftJoin('items', (j) => j.onRef('items.product_id', '=', 'products.id').on('items.archived', '=', 0))
    .select((eb) => [
      'products.id',
      'products.name',
      'products.archived',
      'memberships.admin',
      'items.status',
      eb.fn.count<number>('items.id').as('n'),
    ])
    .where('memberships.user_id', '=', userId)
    .groupBy(['products.id', 'products.name', 'products.archived', 'memberships.admin', 'items.status'])
    .orderBy('products.name')
    .orderBy('products.id')
    .execute();
}

/**
 * The environments the product was deployed to, the most recently used first, at most `limit`:
 * what the notifications page offers to choose from. The (product, environment, id) index holds
 * every value it reads.
 */
export async function deployedEnvironments(db: Db, productId: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('deploys')
    .select('environment')
    .where('product_id', '=', productId)
    .groupBy('environment')
    .orderBy((eb) => eb.fn.max('id'), 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => r.environment);
}

/** Which of `names` no deploy of the product went to (by the product's environment index). */
export async function neverDeployedTo(db: Db, productId: number, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await db
    .selectFrom('deploys')
    .select('environment')
    .distinct()
    .where('product_id', '=', productId)
    .where('environment', 'in', [...names])
    .execute();
  const deployed = new Set(rows.map((r) => r.environment));
  return names.filter((n) => !deployed.has(n));
}

// ---- an item's page: what it shows besides the item's JSON, each with the people it names

/**
 * Which of the lists around an item hold anything: an item's page skips the reads of those that
 * are empty, which most items' are (a read costs more to make and run than the test in the item's).
 */
export interface AroundItem {
  /** Blocks the item makes, and blocks on it (marked unblocked or not). */
  blocking: boolean;
  blockedBy: boolean;
  attachments: boolean;
  activities: boolean;
  /** Environments it was deployed to (item_deployments: every deploy leaves its row). */
  deployments: boolean;
  /** Items whose parent it is, archived or not. */
  children: boolean;
}

// The reads of an item's page are prepared (see prepared): they run on every view of an item.
const itemForPage = prepared((db, productId: number, number: number) =>
  db
    .selectFrom('items as i')
    .select(ITEM_COLUMNS.map((c) => `i.${c}` as const))
    .select('i.description_html')
    .select((eb) => [
      eb.exists(eb.selectFrom('blocks').select('id').whereRef('blocks.item_id', '=', 'i.id')).as('a_blocking'),
      eb.exists(eb.selectFrom('blocks').select('id').whereRef('blocks.blocked_id', '=', 'i.id')).as('a_blocked_by'),
      eb
        .exists(eb.selectFrom('attachments').select('id').whereRef('attachments.item_id', '=', 'i.id'))
        .as('a_attachments'),
      eb
        .exists(eb.selectFrom('activities').select('id').whereRef('activities.item_id', '=', 'i.id'))
        .as('a_activities'),
      eb
        .exists(eb.selectFrom('item_deployments').select('item_id').whereRef('item_deployments.item_id', '=', 'i.id'))
        .as('a_deployments'),
      eb.exists(eb.selectFrom('items as c').select('c.id').whereRef('c.parent_id', '=', 'i.id')).as('a_children'),
    ])
    .where('i.product_id', '=', productId)
    .where('i.number', '=', number),
);

/**
 * The item of a product by number, with its description's HTML (null: not rendered yet) and which
 * lists around it hold anything, in one statement: each test is a probe of the list's own index.
 */
export async function findItemForPage(
  db: Db,
  productId: number,
  number: number,
): Promise<{ row: ItemRow; descriptionHtml: string | null; around: AroundItem } | undefined> {
  if (!storableId(number)) return undefined;
  const [found] = await itemForPage(db, productId, number);
  if (!found) return undefined;
  const { description_html, a_blocking, a_blocked_by, a_attachments, a_activities, a_deployments, a_children, ...row } =
    found;
  // SQLite answers 0 or 1, PostgreSQL a boolean.
  const around = {
    blocking: Boolean(a_blocking),
    blockedBy: Boolean(a_blocked_by),
    attachments: Boolean(a_attachments),
    activities: Boolean(a_activities),
    deployments: Boolean(a_deployments),
    children: Boolean(a_children),
  };
  return { row: row as ItemRow, descriptionHtml: description_html, around };
}

/** A person as a page names them. */
export type Named = Pick<UserRow, 'first_name' | 'last_name' | 'email'>;

/** An item's deployment to an environment, with who made its deploy and the rollback that reverted it. */
export interface DeploymentWithPeople extends Deployment {
  deployer: Named | null;
  reverter: Named | null;
}

const namedOf = (first: string | null, last: string | null, email: string | null): Named | null =>
  email === null ? null : { first_name: first ?? '', last_name: last ?? '', email };

/**
 * One page of an item's deployments, latest first, each with the people of its deploy and of the
 * rollback that reverted it (deploys of the product only), in one query.
 */
export async function itemDeploymentsWithPeople(
  db: Db,
  productId: number,
  itemId: number,
  page: { offset: number; limit: number },
): Promise<DeploymentWithPeople[]> {
  const rows = await deploymentsWithPeople(db, productId, itemId, page.limit, page.offset);
  return rows.map(({ u_first, u_last, u_email, r_first, r_last, r_email, ...d }) => ({
    ...d,
    deployer: namedOf(u_first, u_last, u_email),
    reverter: namedOf(r_first, r_last, r_email),
  }));
}

const deploymentsWithPeople = prepared((db, productId: number, itemId: number, limit: number, offset: number) =>
  db
    .selectFrom('item_deployments as x')
    .leftJoin('deploys as d', (j) => j.onRef('d.id', '=', 'x.deploy_id').on('d.product_id', '=', productId))
    .leftJoin('users as u', 'u.id', 'd.user_id')
    .leftJoin('deploys as r', (j) => j.onRef('r.id', '=', 'x.reverted_by').on('r.product_id', '=', productId))
    .leftJoin('users as ru', 'ru.id', 'r.user_id')
    .select(['x.environment', 'x.version', 'x.deployed_at', 'x.deploy_id', 'x.reverted_at', 'x.reverted_by'])
    .select(['u.first_name as u_first', 'u.last_name as u_last', 'u.email as u_email'])
    .select(['ru.first_name as r_first', 'ru.last_name as r_last', 'ru.email as r_email'])
    .where('x.item_id', '=', itemId)
    .orderBy('x.deploy_id', 'desc')
    .limit(limit)
    .offset(offset),
);

/** How many environments an item went to. */
export async function countItemDeployments(db: Db, itemId: number): Promise<number> {
  const [row] = await itemDeploymentCount(db, itemId);
  return Number(row.n);
}

const itemDeploymentCount = prepared((db, itemId: number) =>
  db
    .selectFrom('item_deployments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('item_id', '=', itemId),
);

/** The first `limit` followers of an item by when they started following, as pages name them. */
export async function followersWithNames(db: Db, itemId: number, limit: number): Promise<(Named & { id: number })[]> {
  return firstFollowersWithNames(db, itemId, limit);
}

const firstFollowersWithNames = prepared((db, itemId: number, limit: number) =>
  db
    .selectFrom('followers as f')
    .innerJoin('users as u', 'u.id', 'f.user_id')
    .select(['u.id', 'u.first_name', 'u.last_name', 'u.email'])
    .where('f.item_id', '=', itemId)
    .orderBy('f.created_at')
    .orderBy('f.user_id')
    .limit(limit),
);

/** Whether the user follows the item. */
export async function follows(db: Db, itemId: number, userId: number): Promise<boolean> {
  return (await follower(db, itemId, userId)).length > 0;
}

const follower = prepared((db, itemId: number, userId: number) =>
  db.selectFrom('followers').select('user_id').where('item_id', '=', itemId).where('user_id', '=', userId),
);
