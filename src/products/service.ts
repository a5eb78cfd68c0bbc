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
 * Marks, in the changing transaction, a change to what the product's items show (see the
 * repository's markItemsChanged): its revision moves; with `order`, its order version; with
 * `totals`, its items version; a change of text names its `items`, for ChangedItems.
 */
export async function markItemsChanged(
  trx: Trx,
  productId: number,
  change: { totals: boolean; order?: boolean; items?: number[] },
): Promise<void> {
  await repository.markItemsChanged(trx, productId, change);
}

/**
 * The revisions of products, read together: what a process watching them for open pages polls
 * (one indexed read for all of them, whatever the number of pages).
 */
export async function productRevisions(db: Db, ids: number[]): Promise<Map<number, number>> {
  return new Map((await repository.findRevisions(db, ids)).map((r) => [r.id, Number(r.revision)]));
}

/** The ids of the items named as changed after `revision` (none for changes that named no item). */
export async function itemsChangedSince(db: Db, productId: number, revision: number): Promise<number[]> {
  return [...new Set((await repository.findItemChangesSince(db, productId, revision)).map((c) => c.item_id))];
}

/** Items changed without their product's order version moving, as far as this instance knows. */
interface ProductChanges {
  /** The revision read up to. */
  seen: number;
  /** Before this revision nothing is known (the log was out of reach, or forgotten). */
  knownFrom: number;
  /** When each item last changed. */
  changed: Map<number, number>;
  reading?: Promise<void>;
}

/** Items whose changes an instance remembers per product before it forgets them all. */
const REMEMBERED_CHANGES = 50_000;

/**
 * Which items changed since a revision, as item_changes tells every instance: an answer kept by
 * the product's order version (a list by position, which changes of text leave in place) stays
 * good until one of the items it shows changes. Each instance reads the log when it sees a newer
 * revision of the product (one indexed read per change, not per request); one that fell further
 * behind than the log reaches, or remembers too much, forgets, and its kept answers are made anew.
 */
export class ChangedItems {
  private readonly products = new Map<number, ProductChanges>();

  /** Whether any of `items` changed after revision `since`, as of `product`'s revision. */
  async changedSince(db: Db, product: ProductRow, since: number, items: readonly number[]): Promise<boolean> {
    const known = await this.readUpTo(db, product);
    if (since < known.knownFrom) return true;
    return items.some((id) => (known.changed.get(id) ?? 0) > since);
  }

  private async readUpTo(db: Db, product: ProductRow): Promise<ProductChanges> {
    let known = this.products.get(product.id);
    if (!known) {
      known = { seen: product.revision, knownFrom: product.revision, changed: new Map() };
      this.products.set(product.id, known);
    }
    while (known.seen < product.revision) {
      known.reading ??= this.read(db, product.id, known, product.revision).finally(() => {
        known.reading = undefined;
      });
      await known.reading;
    }
    return known;
  }

  private async read(db: Db, productId: number, known: ProductChanges, revision: number): Promise<void> {
    if (revision - known.seen > repository.CHANGES_KEPT || known.changed.size > REMEMBERED_CHANGES) {
      known.changed.clear();
      known.seen = known.knownFrom = revision;
      return;
    }
    const seen = known.seen;
    for (const change of await repository.findItemChangesSince(db, productId, seen)) {
      if (change.revision > (known.changed.get(change.item_id) ?? 0))
        known.changed.set(change.item_id, change.revision);
      if (change.revision > known.seen) known.seen = change.revision;
    }
    // Revisions that named no item (other kinds of change) are read too.
    if (known.seen < revision) known.seen = revision;
  }
}
