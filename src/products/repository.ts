import { sql } from 'kysely';
import type { Db, Trx } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import { notifyProductChanged, productChangedNotification } from '../db/listen.js';
import { prepared } from '../db/prepared.js';
import { sharedUntilStarted } from '../db/shared-reads.js';
import { storableId, type ProductRow, type UserRow } from '../db/schema.js';
import { findUserBy, type UserLookup } from '../users/index.js';

export async function insertProduct(trx: Trx, name: string, createdAt: string): Promise<ProductRow> {
  return trx
    .insertInto('products')
    .values({
      name,
      archived: 0,
      created_at: createdAt,
      last_number: 0,
      items_version: 0,
      revision: 0,
      order_version: 0,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findProduct(db: Db, id: number): Promise<ProductRow | undefined> {
  if (!storableId(id)) return undefined;
  return db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The revisions of the given products (those that exist). */
export async function findRevisions(db: Db, ids: number[]): Promise<{ id: number; revision: number }[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('products').select(['id', 'revision']).where('id', 'in', ids).execute();
}

const productAs = prepared((db, id: number, userId: number) =>
  db
    .selectFrom('products')
    .leftJoin('memberships', (j) =>
      j.onRef('memberships.product_id', '=', 'products.id').on('memberships.user_id', '=', userId),
    )
    .selectAll('products')
    .select('memberships.admin')
    .where('products.id', '=', id),
);

/** A product with the given user's membership of it (undefined when not a member), in one read. */
export async function findProductAs(
  db: Db,
  id: number,
  userId: number,
): Promise<{ product: ProductRow; membership: Membership | undefined } | undefined> {
  if (!storableId(id)) return undefined;
  const [row] = await productAs(db, id, userId);
  if (!row) return undefined;
  const { admin, ...product } = row;
  return { product, membership: admin === null ? undefined : { admin: admin === 1 } };
}

export interface Membership {
  admin: boolean;
}

/** A product's columns under names of their own, read beside a user's (whose names they share). */
const PRODUCT_AS = {
  id: 'products.id as product_id',
  name: 'products.name as product_name',
  archived: 'products.archived as product_archived',
  created_at: 'products.created_at as product_created_at',
  last_number: 'products.last_number as product_last_number',
  items_version: 'products.items_version as product_items_version',
  revision: 'products.revision as product_revision',
  order_version: 'products.order_version as product_order_version',
} as const satisfies Record<keyof ProductRow, string>;

const callerIn = (db: Db, productId: number) =>
  db
    .selectFrom('users')
    .leftJoin('products', (j) => j.on('products.id', '=', productId))
    .leftJoin('memberships', (j) =>
      j.onRef('memberships.product_id', '=', 'products.id').onRef('memberships.user_id', '=', 'users.id'),
    )
    .selectAll('users')
    .select([...Object.values(PRODUCT_AS), 'memberships.admin']);
const callerByEmailIn = prepared((db, productId: number, email: string) =>
  callerIn(db, productId).where('users.email', '=', email),
);
const callerByKeyIn = prepared((db, productId: number, hash: string) =>
  callerIn(db, productId).where('users.api_key_hash', '=', hash),
);

export interface CallerAndProduct {
  user: UserRow | undefined;
  product?: ProductRow;
  membership?: Membership;
}

/**
 * The user a request names (see UserLookup), the product `productId` and that user's membership
 * of it, in one read: each undefined when there is none (no product for an id that names none).
 */
export async function findCallerAndProduct(
  db: Db,
  lookup: UserLookup,
  productId: number | undefined,
): Promise<CallerAndProduct> {
  if (productId === undefined || !storableId(productId)) return { user: await findUserBy(db, lookup) };
  // Every request of a product reads this: those waiting for a connection at once share one read.
  const question =
    'email' in lookup ? `caller ${productId} email ${lookup.email}` : `caller ${productId} key ${lookup.keyHash}`;
  // The row is shared; what is made of it below (the user, the product) is each request's own.
  const [row] = await sharedUntilStarted(db, question, (connection) =>
    'email' in lookup
      ? callerByEmailIn(connection, productId, lookup.email)
      : callerByKeyIn(connection, productId, lookup.keyHash),
  );
  if (!row) return { user: undefined };
  const {
    product_id,
    product_name,
    product_archived,
    product_created_at,
    product_last_number,
    product_items_version,
    product_revision,
    product_order_version,
    admin,
    ...user
  } = row;
  if (product_id === null) return { user };
  const product: ProductRow = {
    id: product_id,
    name: product_name!,
    archived: product_archived!,
    created_at: product_created_at!,
    last_number: product_last_number!,
    items_version: product_items_version!,
    revision: product_revision!,
    order_version: product_order_version!,
  };
  return { user, product, membership: admin === null ? undefined : { admin: admin === 1 } };
}

export async function findMembership(db: Db, productId: number, userId: number): Promise<Membership | undefined> {
  const row = await db
    .selectFrom('memberships')
    .select('admin')
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && { admin: row.admin === 1 };
}

/**
 * Makes a user a member. For someone who already is, `admin` (when given) sets their role;
 * otherwise the membership stays as it was. The product's revision moves: pages list its members.
 */
export async function insertMembership(
  trx: Trx,
  productId: number,
  userId: number,
  admin: boolean | undefined,
  at: string,
): Promise<void> {
  await markItemsChanged(trx, productId, { totals: false });
  await trx
    .insertInto('memberships')
    .values({ product_id: productId, user_id: userId, admin: admin ? 1 : 0, created_at: at })
    .onConflict((oc) =>
      admin === undefined
        ? oc.columns(['product_id', 'user_id']).doNothing()
        : oc.columns(['product_id', 'user_id']).doUpdateSet({ admin: admin ? 1 : 0 }),
    )
    .execute();
}

export async function listProductsOfUser(db: Db, userId: number): Promise<(ProductRow & { admin: number })[]> {
  return db
    .selectFrom('products')
    .innerJoin('memberships', 'memberships.product_id', 'products.id')
    .selectAll('products')
    .select('memberships.admin')
    .where('memberships.user_id', '=', userId)
    .orderBy('products.id')
    .execute();
}

export async function listMembers(db: Db, productId: number): Promise<(UserRow & { admin: number })[]> {
  return db
    .selectFrom('users')
    .innerJoin('memberships', 'memberships.user_id', 'users.id')
    .selectAll('users')
    .select('memberships.admin')
    .where('memberships.product_id', '=', productId)
    .orderBy('users.id')
    .execute();
}

/** Of the given users, those who are members of the product. */
export async function filterMembers(db: Db, productId: number, userIds: number[]): Promise<Set<number>> {
  const ids = [...new Set(userIds)].filter(storableId);
  if (ids.length === 0) return new Set();
  const rows = await membersAmong(db, productId, ids);
  return new Set(rows.map((r) => r.user_id));
}

const membersAmong = prepared((db, productId: number, ids: number[]) =>
  db.selectFrom('memberships').select('user_id').where('product_id', '=', productId).where('user_id', 'in', ids),
);

/**
 * Hands out the next item number. The UPDATE takes the product row's write lock, so concurrent
 * creators in a product queue here and never see the same number; it also moves the product's
 * items version (a new item changes list totals) and its revision.
 */
export async function allocateItemNumber(trx: Trx, productId: number): Promise<number> {
  const [row] = await nextItemNumber(trx, productId);
  if (!row) throw new Error(`No product ${productId} to number an item in.`);
  await notifyProductChanged(trx, productId);
  return row.last_number;
}

const nextItemNumber = prepared((db, productId: number) =>
  db
    .updateTable('products')
    .set((eb) => ({
      last_number: eb('last_number', '+', 1),
      items_version: eb('items_version', '+', 1),
      order_version: eb('order_version', '+', 1),
      revision: eb('revision', '+', 1),
    }))
    .where('id', '=', productId)
    .returning('last_number'),
);

/**
 * Serializes changes within a product: every writer that moves positions or changes items takes
 * the product row's lock first (always before any item row, so writers never deadlock). SQLite
 * has one writer at a time already (write transactions begin IMMEDIATE).
 */
export async function lockProduct(trx: Trx, productId: number): Promise<void> {
  if (dialectOf(trx) === 'sqlite') return;
  await trx.selectFrom('products').select('id').where('id', '=', productId).forUpdate().execute();
}

/**
 * Marks a change to what the product's items show: its revision moves; with `order` (a change of
 * which items a list holds, or of their order by priority: a resort) its order version too; and
 * with `totals` (a change that can alter which items a list matches) its items version as well,
 * which voids cached list totals, and its order version. A change of neither whose `items` show
 * differently (their text, when they were last active) names them in item_changes, at the new
 * revision, for the answers kept by order version (see ChangedItems).
 */
export async function markItemsChanged(
  trx: Trx,
  productId: number,
  { totals, order = false, items = [] }: { totals: boolean; order?: boolean; items?: number[] },
): Promise<void> {
  if (dialectOf(trx) === 'postgres') return markItemsChangedAtOnce(trx, productId, { totals, order, items });
  // Every move of the revision comes here (or to allocateItemNumber), and so tells the other instances.
  await notifyProductChanged(trx, productId);
  if (totals || order || items.length === 0) {
    await (totals ? newItemsVersion : order ? newOrderVersion : newRevision)(trx, productId);
    return;
  }
  const [{ revision }] = await newRevisionIs(trx, productId);
  await trx
    .insertInto('item_changes')
    .values([...new Set(items)].map((item_id) => ({ product_id: productId, revision, item_id })))
    .execute();
  // What no instance reads any more (one that is further behind forgets what it kept instead):
  // the rows of one older revision at most, found by the key's first columns.
  await forgetChanges(trx, productId, revision - CHANGES_KEPT + 1);
}

/** Revisions of a product whose item changes are kept for instances to catch up with. */
export const CHANGES_KEPT = 1000;

/**
 * markItemsChanged on PostgreSQL, in one statement: the notification, the versions that move and,
 * for a change of text, its items named at the new revision and the rows of one older revision
 * forgotten. Each statement of a change is a round trip, and while reads keep the process busy
 * each costs a turn of its event loop (milliseconds), with the product's lock held: four
 * statements were four turns. (A data-modifying WITH runs whether or not it is read; the DELETE
 * sees the rows as they were before the statement, so never the ones it adds.)
 */
async function markItemsChangedAtOnce(
  trx: Trx,
  productId: number,
  { totals, order, items }: { totals: boolean; order: boolean; items: number[] },
): Promise<void> {
  const notify = productChangedNotification(productId);
  if (totals || order || items.length === 0) {
    const versions = totals
      ? sql`items_version = items_version + 1, order_version = order_version + 1,`
      : order
        ? sql`order_version = order_version + 1,`
        : sql``;
    const moved = sql`update products set ${versions} revision = revision + 1 where id = ${productId}`;
    await sql`${moved} returning ${notify}`.execute(trx);
    return;
  }
  await sql`with moved as (
      update products set revision = revision + 1 where id = ${productId} returning revision
    ), named as (
      insert into item_changes (product_id, revision, item_id)
      select ${productId}, moved.revision, changed.id
      from moved, unnest(${[...new Set(items)]}::integer[]) as changed(id)
    ), forgotten as (
      delete from item_changes
      where product_id = ${productId} and revision < (select revision from moved) - ${CHANGES_KEPT - 1}
    )
    select ${notify} from moved`.execute(trx);
}

const newRevisionIs = prepared((db, productId: number) =>
  db
    .updateTable('products')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('id', '=', productId)
    .returning('revision'),
);
const forgetChanges = prepared((db, productId: number, before: number) =>
  db.deleteFrom('item_changes').where('product_id', '=', productId).where('revision', '<', before),
);
const changesSince = prepared((db, productId: number, revision: number) =>
  db
    .selectFrom('item_changes')
    .select(['revision', 'item_id'])
    .where('product_id', '=', productId)
    .where('revision', '>', revision),
);

/** The items named in item_changes after `revision`, with the revision each changed at. */
export async function findItemChangesSince(
  db: Db,
  productId: number,
  revision: number,
): Promise<{ revision: number; item_id: number }[]> {
  return changesSince(db, productId, revision);
}

const newRevision = prepared((db, productId: number) =>
  db
    .updateTable('products')
    .set((eb) => ({ revision: eb('revision', '+', 1) }))
    .where('id', '=', productId),
);
const newOrderVersion = prepared((db, productId: number) =>
  db
    .updateTable('products')
    .set((eb) => ({ order_version: eb('order_version', '+', 1), revision: eb('revision', '+', 1) }))
    .where('id', '=', productId),
);
const newItemsVersion = prepared((db, productId: number) =>
  db
    .updateTable('products')
    .set((eb) => ({
      items_version: eb('items_version', '+', 1),
      order_version: eb('order_version', '+', 1),
      revision: eb('revision', '+', 1),
    }))
    .where('id', '=', productId),
);
