import type { Db, Trx } from '../db/connection.js';
import type { InboundRefusalRow } from '../db/schema.js';

/**
 * Claims the right to explain a refusal to `address` now: true when nobody was sent one since
 * `since`. Rows older than that are deleted first, so the table holds the last hour's senders
 * only. The insert that finds a row already there does nothing; on PostgreSQL a second
 * transaction inserting the same address waits for the first and then finds its row, so
 * instances refusing mail from one sender at once send one explanation between them.
 */
export async function claimExplanation(trx: Trx, address: string, since: string, at: string): Promise<boolean> {
  await trx.deleteFrom('inbound_senders').where('explained_at', '<=', since).execute();
  const inserted = await trx
    .insertInto('inbound_senders')
    .values({ address, explained_at: at })
    .onConflict((oc) => oc.column('address').doNothing())
    .returning('address')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function insertRefusal(trx: Trx, row: Omit<InboundRefusalRow, 'id'>): Promise<InboundRefusalRow> {
  return trx.insertInto('inbound_refusals').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findRefusalsByIds(db: Db, ids: number[]): Promise<InboundRefusalRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('inbound_refusals').selectAll().where('id', 'in', ids).execute();
}

/**
 * Notes that the item took the message `messageId`: false when it had already (a second copy),
 * in which case nothing of it is to be added again. Notes older than `forgetBefore` are deleted.
 */
export async function noteReceived(
  trx: Trx,
  o: { itemId: number; messageId: string; at: string; forgetBefore: string },
): Promise<boolean> {
  await trx.deleteFrom('inbound_messages').where('received_at', '<', o.forgetBefore).execute();
  const inserted = await trx
    .insertInto('inbound_messages')
    .values({ item_id: o.itemId, message_id: o.messageId, received_at: o.at })
    .onConflict((oc) => oc.columns(['item_id', 'message_id']).doNothing())
    .returning('message_id')
    .executeTakeFirst();
  return inserted !== undefined;
}
