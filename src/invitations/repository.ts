import { inChunks } from '../db/chunks.js';
import type { Db, Trx } from '../db/connection.js';
import { dialectOf } from '../db/dialect.js';
import { storableId, type InvitationRow } from '../db/schema.js';

export async function findInvitation(db: Db, productId: number, email: string): Promise<InvitationRow | undefined> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('product_id', '=', productId)
    .where('email', '=', email)
    .executeTakeFirst();
}

export async function findInvitationById(db: Db, id: number): Promise<InvitationRow | undefined> {
  if (!storableId(id)) return undefined;
  return db.selectFrom('invitations').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findInvitationsByIds(db: Db, ids: number[]): Promise<InvitationRow[]> {
  return inChunks([...new Set(ids)], (chunk) =>
    db.selectFrom('invitations').selectAll().where('id', 'in', chunk).execute(),
  );
}

/**
 * Records a sending of the invitation of an address to a product: a new row, or the existing one
 * renewed (sent again, valid again, not accepted, by whoever sends it now).
 */
export async function saveSentInvitation(
  trx: Trx,
  row: Pick<
    InvitationRow,
    'product_id' | 'email' | 'first_name' | 'last_name' | 'admin' | 'invited_by_id' | 'sent_at' | 'expires_at'
  >,
): Promise<InvitationRow> {
  return trx
    .insertInto('invitations')
    .values({ ...row, created_at: row.sent_at, accepted_at: null })
    .onConflict((oc) =>
      oc.columns(['product_id', 'email']).doUpdateSet({
        first_name: row.first_name,
        last_name: row.last_name,
        admin: row.admin,
        invited_by_id: row.invited_by_id,
        sent_at: row.sent_at,
        expires_at: row.expires_at,
        accepted_at: null,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Changes what a pending invitation gives (names, role) without sending it again. */
export async function updateInvitationTerms(
  trx: Trx,
  id: number,
  terms: Pick<InvitationRow, 'first_name' | 'last_name' | 'admin'>,
): Promise<void> {
  await trx.updateTable('invitations').set(terms).where('id', '=', id).execute();
}

/** Marks an invitation accepted; false when it already was (it works once). */
export async function markAccepted(trx: Trx, id: number, at: string): Promise<boolean> {
  const res = await trx
    .updateTable('invitations')
    .set({ accepted_at: at })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** How many invitations were sent since `since` by one inviter or to one product, and the earliest of them. */
export async function countSentSince(
  db: Db,
  by: { productId: number } | { inviterId: number },
  since: string,
): Promise<{ count: number; earliest: string | null }> {
  let query = db
    .selectFrom('invitations')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('sent_at').as('earliest')])
    .where('sent_at', '>', since);
  query =
    'productId' in by ? query.where('product_id', '=', by.productId) : query.where('invited_by_id', '=', by.inviterId);
  const row = await query.executeTakeFirstOrThrow();
  return { count: Number(row.n), earliest: (row.earliest as string | null) ?? null };
}

/**
 * Serializes an inviter's invitations across products, so that concurrent requests cannot both
 * pass the per-inviter limit. SQLite has one writer at a time already.
 */
export async function lockInviter(trx: Trx, userId: number): Promise<void> {
  if (dialectOf(trx) === 'sqlite') return;
  await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
}

/** The invitations of a product still waiting for an answer (not accepted, not expired), latest sent first. */
export async function listPendingInvitations(db: Db, productId: number, now: string): Promise<InvitationRow[]> {
  return db
    .selectFrom('invitations')
    .selectAll()
    .where('product_id', '=', productId)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('sent_at', 'desc')
    .orderBy('id', 'desc')
    .limit(500)
    .execute();
}

/**
 * Ends an invitation's links at once (they are then answered as expired); the row stays, so that
 * the hourly limits still count its sending. False when it was accepted meanwhile.
 */
export async function expireInvitation(trx: Trx, id: number, at: string): Promise<boolean> {
  const res = await trx
    .updateTable('invitations')
    .set({ expires_at: at })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
