import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { AttachmentRow, ItemRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { itemSummary } from '../items/index.js';
import { presentProductSummary, ProductSummarySchema } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { findProfiles, presentUser, UserSchema } from '../users/index.js';

/** The item an attachment is on, as Sprint.ly embedded it, cut to what identifies it. */
export const AttachedItemSchema = Type.Object(
  {
    number: Type.Integer(),
    title: Type.String(),
    type: Type.String(),
    status: Type.String(),
    product: ref(ProductSummarySchema),
    short_url: Type.String(),
  },
  {
    $id: 'AttachedItem',
    description: "The item a file is attached to: which one and where it stands; the rest is items/{number}.json's.",
  },
);

export const AttachmentSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String({ description: 'The file name: no path, no control characters, at most 255 characters.' }),
    created_at: Type.String(),
    created_by: ref(UserSchema),
    item: ref(AttachedItemSchema),
    href: Type.String({ description: 'The file itself, behind the same credentials and membership as this answer.' }),
    content_type: Type.String({
      description: "Shiplog's addition: the media type as sent (application/octet-stream when none was usable).",
    }),
    size: Type.Integer({ description: "Shiplog's addition: the file's size in bytes." }),
  },
  { $id: 'Attachment', description: 'A file attached to an item (docs/INTERFACE.md §12).' },
);
export type AttachmentJson = Static<typeof AttachmentSchema>;

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const ATTACHMENT_SCHEMAS = [AttachedItemSchema, AttachmentSchema];

/** Where an attachment's file is served. */
export const attachmentFilePath = (productId: number, itemNumber: number, id: number) =>
  `/api/products/${productId}/items/${itemNumber}/attachments/${id}/file`;

/** Attachments of one item as JSON, their people read in one query (remembered profiles). */
export async function presentAttachments(
  db: Db,
  scope: ProductScope,
  urls: Urls,
  item: Pick<ItemRow, 'product_id' | 'number' | 'title' | 'type' | 'status'>,
  rows: AttachmentRow[],
): Promise<AttachmentJson[]> {
  const people = await findProfiles(
    db,
    rows.map((r) => r.created_by_id),
  );
  const embedded = { ...itemSummary(item, urls), product: presentProductSummary(scope.product) };
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    created_at: row.created_at,
    created_by: presentUser(people.get(row.created_by_id)!, scope.user.id),
    item: embedded,
    href: `${urls.publicUrl}${attachmentFilePath(scope.product.id, item.number, row.id)}`,
    content_type: row.content_type,
    size: row.size,
  }));
}
