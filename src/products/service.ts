import type { Db, Trx } from '../db/connection.js';
import type { ProductRow, UserRow } from '../db/schema.js';
import { ForbiddenError, NotFoundError, productNotFound, ValidationError } from '../errors.js';
import { digitsToId, textProblem } from '../http/params.js';
import type { ProductScope } from '../scope.js';
import { nowTimestamp } from '../time.js';
import { authenticateWith, findUserByEmail } from '../users/index.js';
import * as repository from './repository.js';
import {
  findCallerAndProduct,
  findProductAs,
  insertMembership,
  insertProduct,
  type CallerAndProduct,
  type Membership,
} from './repository.js';

/**
 * Resolves the product of a `/api/products/{id}` path for a caller, in the order docs/INTERFACE.md §2
 * sets: an id that is not an integer or names no product is 404, a non-member is 403.
 */
export async function productScope(db: Db, user: UserRow, rawId: string): Promise<ProductScope> {
  const id = digitsToId(rawId);
  return scopeOf(user, id === undefined ? undefined : await findProductAs(db, id, user.id));
}

/**
 * The caller of an API request (its Authorization header) and the product of its path, read in
 * one query, checked in the same order as authenticate and productScope one after the other.
 */
export async function callerScope(db: Db, header: string | undefined, rawId: string): Promise<ProductScope> {
  const id = digitsToId(rawId);
  const found = await authenticateWith(db, header, (lookup) => findCallerAndProduct(db, lookup, id));
  return scopeOf(found.user, found);
}

function scopeOf(user: UserRow, found: Omit<CallerAndProduct, 'user'> | undefined): ProductScope {
  if (!found?.product) throw productNotFound();
  if (!found.membership) throw new ForbiddenError();
  return { user, product: found.product, admin: found.membership.admin };
}

/** Creates a product with its creator as admin member. */
export async function createProduct(trx: Trx, owner: UserRow, name: string): Promise<ProductRow> {
  const trimmed = name.trim();
  if (!trimmed) throw new ValidationError({ name: 'is required' });
  if ([...trimmed].length > 255) throw new ValidationError({ name: 'must be at most 255 characters' });
  const problem = textProblem(trimmed);
  if (problem !== undefined) throw new ValidationError({ name: problem });
  const now = nowTimestamp();
  const product = await insertProduct(trx, trimmed, now);
  await insertMembership(trx, product.id, owner.id, true, now);
  return product;
}

/**
 * The admin tool's way in: adds an existing user to a product by email, directly. People added
 * through the API are invited instead (src/invitations): the operator speaks for the user here.
 */
export async function addMemberByEmail(
  trx: Trx,
  productId: number,
  email: string,
  admin: boolean | undefined,
): Promise<{ product: ProductRow; admin: boolean }> {
  const product = await findProduct(trx, productId);
  if (!product) throw productNotFound();
  const user = await findUserByEmail(trx, email);
  if (!user) throw new NotFoundError(`No user with email ${email}; create it with "shiplog user add" first.`);
  return { product, admin: (await addMember(trx, product.id, user.id, admin, nowTimestamp())).admin };
}

/** Admin-only operations check this before looking at their parameters. */
export function requireAdmin(scope: ProductScope): void {
  if (!scope.admin) throw new ForbiddenError('Only admins of this product can do this.');
}

/**
 * Makes a user a member of the product, and returns the membership as it stands then: for someone
 * who already is one, `admin` (when given) sets their role, otherwise their role stays.
 */
export async function addMember(
  trx: Trx,
  productId: number,
  userId: number,
  admin: boolean | undefined,
  at: string,
): Promise<Membership> {
  await insertMembership(trx, productId, userId, admin, at);
  return (await repository.findMembership(trx, productId, userId))!;
}

/** A user's membership of the product (whether they are an admin), undefined when they are not a member. */
export async function findMembership(db: Db, productId: number, userId: number): Promise<Membership | undefined> {
  return repository.findMembership(db, productId, userId);
}

/** The product of an id, if any. */
export async function findProduct(db: Db, id: number): Promise<ProductRow | undefined> {
  return repository.findProduct(db, id);
}

/** The product's members, each with whether they are an admin, by user id. */
export async function listMembers(db: Db, productId: number): Promise<(UserRow & { admin: number })[]> {
  return repository.listMembers(db, productId);
}

/** Of the given users, those who are members of the product. */
export async function filterMembers(db: Db, productId: number, userIds: number[]): Promise<Set<number>> {
  return repository.filterMembers(db, productId, userIds);
}

/**
 * Serializes changes within a product: every writer that moves positions or changes items takes
 * the product's lock first, in its transaction, before any item row (so writers never deadlock).
 */
export async function lockProduct(trx: Trx, productId: number): Promise<void> {
  await repository.lockProduct(trx, productId);
}

/**
 * Hands out the next item number, in the creating transaction: concurrent creators in a product
 * queue on its row and never see the same number. The product's items version and revision move.
 */
export async function allocateItemNumber(trx: Trx, productId: number): Promise<number> {
  return repository.allocateItemNumber(trx, productId);
}

/**
 * Marks, in the changing transaction, a change to what the product's items show: its revision
 * moves (kept pages are stale), and with `totals` (a change that can alter which items a list
 * matches) its items version too, which voids cached list totals.
 */
export async function markItemsChanged(
  trx: Trx,
  productId: number,
  change: { totals: boolean; order?: boolean },
): Promise<void> {
  await repository.markItemsChanged(trx, productId, change);
}
