import type { Db, Trx } from '../db/connection.js';
import type { AttachmentRow, AttachmentsTable } from '../db/schema.js';
import type { Insertable } from 'kysely';
import { prepared } from '../db/prepared.js';

/** Every column but the bytes: what lists, answers and checks read. */
const COLUMNS = [
  'id',
  'product_id',
  'item_id',
  'name',
  'content_type',
  'size',
  'created_by_id',
  'created_at',
] as const satisfies readonly (keyof AttachmentRow)[];

export async function insertAttachment(trx: Trx, row: Insertable<AttachmentsTable>): Promise<AttachmentRow> {
  return trx.insertInto('attachments').values(row).returning(COLUMNS).executeTakeFirstOrThrow();
}

/** What the product's attachments weigh together, in bytes (from the (product, size) index alone). */
export async function productAttachmentBytes(db: Db, productId: number): Promise<number> {
  const row = await db
    .selectFrom('attachments')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('size'), eb.lit(0)).as('total'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow();
  // PostgreSQL sums integers as a bigint, which pg gives as text.
  return Number(row.total);
}

// An item's page reads its attachments on every view: prepared (see db/prepared.ts).
const attachmentsPage = prepared((db, itemId: number, limit: number, offset: number) =>
  db.selectFrom('attachments').select(COLUMNS).where('item_id', '=', itemId).orderBy('id').limit(limit).offset(offset),
);

/** A page of the item's attachments, oldest first, and how many it has. */
export async function listItemAttachments(
  db: Db,
  itemId: number,
  page: { offset: number; limit: number },
): Promise<{ rows: AttachmentRow[]; total: number }> {
  const rows = await attachmentsPage(db, itemId, page.limit, page.offset);
  // A first page that is not full holds them all.
  if (page.offset === 0 && rows.length < page.limit) return { rows, total: rows.length };
  const { n } = await db
    .selectFrom('attachments')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('item_id', '=', itemId)
    .executeTakeFirstOrThrow();
  return { rows, total: Number(n) };
}

/** One attachment of the item (none when the id is another item's). */
export async function findItemAttachment(db: Db, itemId: number, id: number): Promise<AttachmentRow | undefined> {
  return db
    .selectFrom('attachments')
    .select(COLUMNS)
    .where('item_id', '=', itemId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** One attachment of the item with its bytes. */
export async function findItemAttachmentFile(
  db: Db,
  itemId: number,
  id: number,
): Promise<(AttachmentRow & { bytes: Buffer }) | undefined> {
  return db
    .selectFrom('attachments')
    .select([...COLUMNS, 'bytes'])
    .where('item_id', '=', itemId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function deleteAttachment(trx: Trx, id: number): Promise<void> {
  await trx.deleteFrom('attachments').where('id', '=', id).execute();
}
