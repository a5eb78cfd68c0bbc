import { recordActivity } from '../activities/index.js';
import type { Db, Trx } from '../db/connection.js';
import type { AttachmentRow } from '../db/schema.js';
import { attachmentNotFound, ForbiddenError, itemNotFound, PayloadTooLargeError } from '../errors.js';
import { findItemHeadsByNumbers, type ItemHead } from '../items/index.js';
import { lockProduct } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { nowTimestamp } from '../time.js';
import { sanitizeContentType, sanitizeName, type NewAttachment } from './input.js';
import {
  deleteAttachment,
  findItemAttachment,
  findItemAttachmentFile,
  insertAttachment,
  listItemAttachments,
  productAttachmentBytes,
} from './repository.js';

/** How much may be attached: per file, and per product in all (ATTACHMENT_MAX_MB, ATTACHMENTS_PER_PRODUCT_MB). */
export interface AttachmentLimits {
  fileBytes: number;
  productBytes: number;
}

const MIB = 1024 * 1024;

export function attachmentLimits(config: { attachmentMaxMb: number; attachmentsPerProductMb: number }) {
  return { fileBytes: config.attachmentMaxMb * MIB, productBytes: config.attachmentsPerProductMb * MIB };
}

const inMib = (bytes: number) => `${Math.round((bytes / MIB) * 10) / 10} MiB`;

/** An attachment with the item it is on. */
export interface Attached {
  row: AttachmentRow;
  item: ItemHead;
}

/** The item of the scope's product with this number (404 otherwise). */
export async function itemOf(db: Db, scope: ProductScope, number: number): Promise<ItemHead> {
  const [item] = await findItemHeadsByNumbers(db, scope.product.id, [number]);
  if (!item) throw itemNotFound(number);
  return item;
}

/**
 * Attaches a file to an item as the scope's user: from an upload, or a mail to the item's files
 * address (whose sender the mail's reader has made the scope of). The name and type are made safe
 * to keep and show (sanitizeName, sanitizeContentType). A file over the limit, or one that would
 * take the product's attachments past theirs, is a 413 and nothing is stored. The product is
 * locked first, as every writer of a product does, so that two uploads at once cannot both fit
 * under the total that only one of them fits under. Throws 404 for an unknown item.
 */
export async function addAttachment(
  trx: Trx,
  scope: ProductScope,
  itemNumber: number,
  file: NewAttachment,
  limits: AttachmentLimits,
): Promise<Attached> {
  // What was sent, then the item (docs/INTERFACE.md §2).
  if (file.bytes.length > limits.fileBytes)
    throw new PayloadTooLargeError(
      `The file is larger than ${inMib(limits.fileBytes)}, the most one attachment may be.`,
      { code: 'attachment_too_large', parameter: 'file' },
    );
  await lockProduct(trx, scope.product.id);
  const item = await itemOf(trx, scope, itemNumber);
  const stored = await productAttachmentBytes(trx, scope.product.id);
  if (stored + file.bytes.length > limits.productBytes)
    throw new PayloadTooLargeError(
      `The product's attachments would weigh more than ${inMib(limits.productBytes)} in all ` +
        `(${inMib(stored)} now); delete some first.`,
      { code: 'attachments_full', parameter: 'file' },
    );
  const row = await insertAttachment(trx, {
    product_id: scope.product.id,
    item_id: item.id,
    name: sanitizeName(file.name),
    content_type: sanitizeContentType(file.contentType),
    size: file.bytes.length,
    created_by_id: scope.user.id,
    created_at: nowTimestamp(),
    bytes: file.bytes,
  });
  await recordActivity(trx, {
    action: 'attached',
    item,
    actor: scope.user,
    meta: { attachment_id: row.id, name: row.name },
    at: row.created_at,
  });
  return { row, item };
}

/** A page of the item's attachments, oldest first, with how many it has. */
export async function listAttachments(
  db: Db,
  scope: ProductScope,
  itemNumber: number,
  page: { offset: number; limit: number },
): Promise<{ item: ItemHead; rows: AttachmentRow[]; total: number }> {
  const item = await itemOf(db, scope, itemNumber);
  return { item, ...(await listItemAttachments(db, item.id, page)) };
}

/** A page of the attachments of an item of the scope's product read already (by its id), oldest first, and how many. */
export async function attachmentsOfItem(
  db: Db,
  itemId: number,
  page: { offset: number; limit: number },
): Promise<{ rows: AttachmentRow[]; total: number }> {
  return listItemAttachments(db, itemId, page);
}

/** One attachment of the item (404 for an unknown item, or an id that is not one of its attachments). */
export async function getAttachment(db: Db, scope: ProductScope, itemNumber: number, id: number): Promise<Attached> {
  const item = await itemOf(db, scope, itemNumber);
  const row = await findItemAttachment(db, item.id, id);
  if (!row) throw attachmentNotFound();
  return { row, item };
}

/** One attachment of the item with its bytes, to be served. */
export async function attachmentFile(
  db: Db,
  scope: ProductScope,
  itemNumber: number,
  id: number,
): Promise<AttachmentRow & { bytes: Buffer }> {
  const item = await itemOf(db, scope, itemNumber);
  const file = await findItemAttachmentFile(db, item.id, id);
  if (!file) throw attachmentNotFound();
  return file;
}

/**
 * Deletes an attachment, which its uploader or an admin of the product may do (403 for anyone
 * else); returns it as it was.
 */
export async function removeAttachment(
  trx: Trx,
  scope: ProductScope,
  itemNumber: number,
  id: number,
): Promise<Attached> {
  await lockProduct(trx, scope.product.id);
  const attached = await getAttachment(trx, scope, itemNumber, id);
  if (attached.row.created_by_id !== scope.user.id && !scope.admin)
    throw new ForbiddenError('Only whoever attached the file, or an admin of the product, can delete it.');
  await deleteAttachment(trx, id);
  return attached;
}
