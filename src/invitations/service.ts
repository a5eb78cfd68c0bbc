import type { Db, Trx } from '../db/connection.js';
import type { InvitationRow, ProductRow, UserRow } from '../db/schema.js';
import { ConflictError, GoneError, NotFoundError, TooManyRequestsError, ValidationError } from '../errors.js';
import { queueInvitation, type UnsubscribeLinks } from '../mail/index.js';
import { addMember, findMembership, findProduct, lockProduct } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { currentTime, formatTimestamp } from '../time.js';
import { createUser, findUserByEmail, findUserById } from '../users/index.js';
import type { InviteInput } from './input.js';
import { readInvitationToken } from './links.js';
import {
  countSentSince,
  expireInvitation,
  findInvitation,
  findInvitationById,
  listPendingInvitations,
  lockInviter,
  markAccepted,
  saveSentInvitation,
  updateInvitationTerms,
} from './repository.js';

/** How long the link of an invitation works. */
export const INVITATION_VALID_MS = 7 * 24 * 3600_000;
/** A repeated invitation of the same address to the same product is sent again at most this often. */
export const RESEND_AFTER_MS = 24 * 3600_000;
/** Invitations sent per hour (sliding): by one person, whatever the product, and to one product. */
export const INVITATIONS_PER_HOUR_PER_INVITER = 20;
export const INVITATIONS_PER_HOUR_PER_PRODUCT = 50;
const HOUR_MS = 3600_000;

/**
 * The answer to an invitation request. It says nothing about the person beyond what the admin
 * knows already: `member` only for members of the product (whom people.json lists anyway),
 * otherwise `invited`, the same whether the address has a user or not and whether an invitation
 * went out now or one did within the day.
 */
export interface InviteAnswer {
  email: string;
  status: 'invited' | 'member';
  admin: boolean;
}

/**
 * Invites a person to the product (the caller must be an admin): nothing is created for them but
 * an invitation, sent by email through the outbox, that makes them a member once they accept. A
 * member already only has their role set (when `admin` is given). A pending invitation is sent
 * again at most once a day; in between a repeat only updates the names and role it gives.
 * Throws TooManyRequestsError (429) past the hourly limits of the inviter and of the product.
 * Resolves with the answer and whether a message was queued. Kept as one function on purpose:
 * its steps run under the locks it takes first, and read in the order they must happen.
 */
export async function invitePerson(
  trx: Trx,
  scope: ProductScope,
  input: InviteInput,
  mailDomain: string,
  now = currentTime(),
): Promise<{ answer: InviteAnswer; queued: boolean }> {
  const { product, user: inviter } = scope;
  // Invitations of a product queue here, and an inviter's across products: the limits count
  // what earlier requests wrote.
  await lockProduct(trx, product.id);
  await lockInviter(trx, inviter.id);

  const existing = await findUserByEmail(trx, input.email);
  if (existing && (await findMembership(trx, product.id, existing.id))) {
    const membership = await addMember(trx, product.id, existing.id, input.admin, formatTimestamp(now));
    return { answer: { email: input.email, status: 'member', admin: membership.admin }, queued: false };
  }

  const pending = await findInvitation(trx, product.id, input.email);
  const terms = {
    first_name: input.firstName ?? pending?.first_name ?? '',
    last_name: input.lastName ?? pending?.last_name ?? '',
    admin: input.admin === undefined ? (pending?.admin ?? 0) : input.admin ? 1 : 0,
  };
  const answer: InviteAnswer = { email: input.email, status: 'invited', admin: terms.admin === 1 };
  const open = pending && pending.accepted_at === null && Date.parse(pending.expires_at) > now.getTime();
  if (open && now.getTime() - Date.parse(pending.sent_at) < RESEND_AFTER_MS) {
    await updateInvitationTerms(trx, pending.id, terms);
    return { answer, queued: false };
  }

  await checkLimits(trx, product.id, inviter.id, now);
  const sentAt = formatTimestamp(now);
  const invitation = await saveSentInvitation(trx, {
    product_id: product.id,
    email: input.email,
    ...terms,
    invited_by_id: inviter.id,
    sent_at: sentAt,
    expires_at: formatTimestamp(new Date(now.getTime() + INVITATION_VALID_MS)),
  });
  await queueInvitation(trx, { invitation, product, inviter }, mailDomain, now);
  return { answer, queued: true };
}

/** 429 once the inviter or the product has sent its hourly share of invitations. */
async function checkLimits(trx: Trx, productId: number, inviterId: number, now: Date): Promise<void> {
  const since = formatTimestamp(new Date(now.getTime() - HOUR_MS));
  const limits = [
    { by: { inviterId }, max: INVITATIONS_PER_HOUR_PER_INVITER, what: 'You have sent' },
    { by: { productId }, max: INVITATIONS_PER_HOUR_PER_PRODUCT, what: 'This product has sent' },
  ];
  for (const { by, max, what } of limits) {
    const { count, earliest } = await countSentSince(trx, by, since);
    if (count >= max) {
      const retryAfter = Math.max(1, Math.ceil((Date.parse(earliest!) + HOUR_MS - now.getTime()) / 1000));
      throw new TooManyRequestsError(
        `${what} ${max} invitations in the last hour, the most allowed; ` +
          `try again in ${Math.ceil(retryAfter / 60)} minutes.`,
        retryAfter,
      );
    }
  }
}

/** What an invitation link leads to, as its page shows it. */
export interface InvitationTarget {
  invitation: InvitationRow;
  product: ProductRow;
  inviter: UserRow;
  /** The user of the invited address, when there is one. */
  user: UserRow | undefined;
  /** When this link stops working. */
  expiresAt: string;
  accepted: boolean;
}

/**
 * What a link is for: 404 when it was not signed here or its invitation (or product) is gone,
 * 410 when it has expired and was not used.
 */
export async function invitationTarget(
  db: Db,
  links: UnsubscribeLinks,
  token: string,
  now = currentTime(),
): Promise<InvitationTarget> {
  const read = readInvitationToken(links, token);
  const invitation = read && (await findInvitationById(db, read.id));
  const product = invitation && (await findProduct(db, invitation.product_id));
  if (!read || !invitation || !product) throw new NotFoundError('This invitation link is not valid.');
  const accepted = invitation.accepted_at !== null;
  // A link ends at its own end, or when the invitation was cancelled (its row's end moved to then).
  const end = Math.min(Date.parse(read.expiresAt), Date.parse(invitation.expires_at));
  if (!accepted && end <= now.getTime()) {
    throw new GoneError('This invitation has expired; ask whoever invited you to send it again.');
  }
  const inviter = (await findUserById(db, invitation.invited_by_id))!;
  const user = await findUserByEmail(db, invitation.email);
  return { invitation, product, inviter, user, expiresAt: read.expiresAt, accepted };
}

/**
 * Accepts an invitation: the invited address becomes a member of the product, with the role the
 * invitation gives (a member already keeps theirs, unless it makes them an admin). An address
 * without a user gets one, named as the invitation says unless `first_name`/`last_name` are
 * given, and its API key is returned, the only time it is visible. A link works once: 410 when
 * it was used already or has expired; 400 when a new user would have no name.
 */
export async function acceptInvitation(
  trx: Trx,
  links: UnsubscribeLinks,
  token: string,
  names: { firstName?: string; lastName?: string },
): Promise<{ target: InvitationTarget; user: UserRow; admin: boolean; apiKey?: string }> {
  const first = await invitationTarget(trx, links, token);
  await lockProduct(trx, first.product.id);
  // Read again under the lock: a repeat invitation may have changed the role or names meanwhile.
  const target = await invitationTarget(trx, links, token);
  const { invitation, product } = target;
  if (!(await markAccepted(trx, invitation.id, formatTimestamp(currentTime())))) {
    throw new GoneError('This invitation has already been accepted.');
  }
  let user = target.user;
  let apiKey: string | undefined;
  if (!user) {
    const firstName = names.firstName ?? invitation.first_name;
    const lastName = names.lastName ?? invitation.last_name;
    if (!firstName || !lastName) {
      throw new ValidationError({
        ...(firstName ? {} : { first_name: 'is required: your account is created now' }),
        ...(lastName ? {} : { last_name: 'is required: your account is created now' }),
      });
    }
    try {
      ({ user, apiKey } = await createUser(trx, { email: invitation.email, firstName, lastName }));
    } catch (err) {
      // The address got a user a moment ago (the operator made one): accept as that user.
      user = err instanceof ConflictError ? await findUserByEmail(trx, invitation.email) : undefined;
      if (!user) throw err;
    }
  }
  const admin = invitation.admin === 1 ? true : undefined;
  const membership = await addMember(trx, product.id, user.id, admin, formatTimestamp(currentTime()));
  return { target, user, admin: membership.admin, apiKey };
}

/** A pending invitation as the admins' page lists it. */
export interface PendingInvitation {
  id: number;
  email: string;
  firstName: string;
  lastName: string;
  admin: boolean;
  sentAt: string;
  expiresAt: string;
}

/** An invitation may be sent again by hand once its last sending is this old. */
export const RESEND_BY_HAND_AFTER_MS = 15 * 60_000;

/** The product's invitations not yet accepted whose links still work (admins only), latest sent first. */
export async function pendingInvitations(
  db: Db,
  scope: ProductScope,
  now = currentTime(),
): Promise<PendingInvitation[]> {
  const rows = await listPendingInvitations(db, scope.product.id, formatTimestamp(now));
  return rows.map(pendingOf);
}

const pendingOf = (row: InvitationRow): PendingInvitation => ({
  id: row.id,
  email: row.email,
  firstName: row.first_name,
  lastName: row.last_name,
  admin: row.admin === 1,
  sentAt: row.sent_at,
  expiresAt: row.expires_at,
});

/** The pending invitation `id` of the scope's product, under the product's lock; 404 otherwise. */
async function lockedPending(trx: Trx, scope: ProductScope, id: number, now: Date): Promise<InvitationRow> {
  await lockProduct(trx, scope.product.id);
  const invitation = await findInvitationById(trx, id);
  const pending =
    invitation?.product_id === scope.product.id &&
    invitation.accepted_at === null &&
    Date.parse(invitation.expires_at) > now.getTime();
  if (!pending) throw new NotFoundError('No pending invitation with that id in this product.', { parameter: 'id' });
  return invitation;
}

/**
 * Sends a pending invitation again now, with a new link valid for a week, as whoever asks (an
 * admin). Counts against the same hourly limits as an invitation (429), and is refused (429) within
 * 15 minutes of its last sending, so that a click repeated does not flood the address.
 */
export async function resendInvitation(
  trx: Trx,
  scope: ProductScope,
  id: number,
  mailDomain: string,
  now = currentTime(),
): Promise<PendingInvitation> {
  const invitation = await lockedPending(trx, scope, id, now);
  await lockInviter(trx, scope.user.id);
  const wait = Date.parse(invitation.sent_at) + RESEND_BY_HAND_AFTER_MS - now.getTime();
  if (wait > 0) {
    throw new TooManyRequestsError(
      `This invitation was sent less than ${RESEND_BY_HAND_AFTER_MS / 60_000} minutes ago; ` +
        `try again in ${Math.ceil(wait / 60_000)} minutes.`,
      Math.ceil(wait / 1000),
    );
  }
  await checkLimits(trx, scope.product.id, scope.user.id, now);
  const sent = await saveSentInvitation(trx, {
    ...invitation,
    invited_by_id: scope.user.id,
    sent_at: formatTimestamp(now),
    expires_at: formatTimestamp(new Date(now.getTime() + INVITATION_VALID_MS)),
  });
  await queueInvitation(trx, { invitation: sent, product: scope.product, inviter: scope.user }, mailDomain, now);
  return pendingOf(sent);
}

/**
 * Cancels a pending invitation (admins): every link sent with it stops working at once, and a
 * message not yet delivered is not sent. The sending still counts against the hourly limits.
 */
export async function cancelInvitation(
  trx: Trx,
  scope: ProductScope,
  id: number,
  now = currentTime(),
): Promise<PendingInvitation> {
  const invitation = await lockedPending(trx, scope, id, now);
  await expireInvitation(trx, id, formatTimestamp(now));
  return pendingOf(invitation);
}
