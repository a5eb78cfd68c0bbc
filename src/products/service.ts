import type { Db, Trx } from '../db/connection.js';
import type { ProductRow, UserRow } from '../db/schema.js';
import { ForbiddenError, NotFoundError, productNotFound, ValidationError } from '../errors.js';
import { digitsToId, textProblem } from '../http/params.js';
import type { ProductScope } from '../scope.js';
import { nowTimestamp } from '../time.js';
import { authenticateWith, findUserByEmail } from '../users/index.js';
import {
  findCallerAndProduct,
  findMembership,
  findProduct,
  findProductAs,
  insertMembership,
  insertProduct,
  type CallerAndProduct,
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
  await insertMembership(trx, product.id, user.id, admin, nowTimestamp());
  return { product, admin: (await findMembership(trx, product.id, user.id))!.admin };
}

/** Admin-only operations check this before looking at their parameters. */
export function requireAdmin(scope: ProductScope): void {
  if (!scope.admin) throw new ForbiddenError('Only admins of this product can do this.');
}
