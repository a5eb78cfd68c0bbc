import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { AnnotationRow, BlockRow, CommentRow, FavoriteRow, ItemRow, UserRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { findItemsByIds, itemShortUrl, statusName } from '../items/index.js';
import { presentProductSummary, ProductSummarySchema } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { findUsersByIds, presentUser, UserSchema } from '../users/index.js';

export const CommentSchema = Type.Object(
  {
    id: Type.Integer(),
    body: Type.String({ description: 'Markdown.' }),
    type: Type.Literal('comment'),
    created_at: Type.String(),
    last_modified: Type.String(),
    created_by: ref(UserSchema),
  },
  { $id: 'Comment', description: "A comment on an item, in Sprint.ly's shape." },
);

export const FavoriteSchema = Type.Object(
  { id: Type.Integer(), created_at: Type.String(), user: ref(UserSchema) },
  { $id: 'Favorite', description: 'Someone favorited the item.' },
);

/** What a block embeds of its two items: which, what, where it stands, who has it, its link. */
export const BlockItemSchema = Type.Object(
  {
    number: Type.Integer(),
    title: Type.String(),
    type: Type.String(),
    status: Type.String(),
    archived: Type.Boolean(),
    assigned_to: Type.Union([ref(UserSchema), Type.Null()]),
    product: ref(ProductSummarySchema),
    short_url: Type.String(),
  },
  {
    $id: 'BlockItem',
    description: "An item as a block embeds it: a summary; the rest is items/{number}.json's.",
  },
);

export const BlockSchema = Type.Object(
  {
    id: Type.Integer(),
    created_at: Type.String(),
    unblocked: Type.Boolean({ description: "The blocked item's assignee marked it unblocked." }),
    user: ref(UserSchema, { description: 'Who made the block.' }),
    item: ref(BlockItemSchema, { description: 'The item that blocks.' }),
    blocked: ref(BlockItemSchema, { description: 'The item it blocks.' }),
  },
  { $id: 'Block', description: '`item` blocks `blocked` (both of one product).' },
);

export const AnnotationSchema = Type.Object(
  {
    id: Type.Integer(),
    verb: Type.String({ description: 'The `label` it was posted with.' }),
    action: Type.String(),
    body: Type.String(),
    user: ref(UserSchema),
  },
  { $id: 'Annotation', description: 'A note a tool left on an item.' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const CONVERSATION_SCHEMAS = [CommentSchema, FavoriteSchema, BlockItemSchema, BlockSchema, AnnotationSchema];

type CommentJson = Static<typeof CommentSchema>;
type FavoriteJson = Static<typeof FavoriteSchema>;
type BlockJson = Static<typeof BlockSchema>;
type AnnotationJson = Static<typeof AnnotationSchema>;

/** The users rows name, by id, in one query. */
async function usersOf(db: Db, ids: number[]): Promise<Map<number, UserRow>> {
  return new Map((await findUsersByIds(db, [...new Set(ids)])).map((u) => [u.id, u]));
}

export async function presentComments(db: Db, scope: ProductScope, rows: CommentRow[]): Promise<CommentJson[]> {
  const users = await usersOf(
    db,
    rows.map((r) => r.user_id),
  );
  return rows.map((r) => ({
    id: r.id,
    body: r.body,
    type: 'comment' as const,
    created_at: r.created_at,
    last_modified: r.last_modified,
    created_by: presentUser(users.get(r.user_id)!, scope.user.id),
  }));
}

export async function presentFavorites(db: Db, scope: ProductScope, rows: FavoriteRow[]): Promise<FavoriteJson[]> {
  const users = await usersOf(
    db,
    rows.map((r) => r.user_id),
  );
  return rows.map((r) => ({
    id: r.id,
    created_at: r.created_at,
    user: presentUser(users.get(r.user_id)!, scope.user.id),
  }));
}

export async function presentAnnotations(
  db: Db,
  scope: ProductScope,
  rows: AnnotationRow[],
): Promise<AnnotationJson[]> {
  const users = await usersOf(
    db,
    rows.map((r) => r.user_id),
  );
  return rows.map((r) => ({
    id: r.id,
    verb: r.label,
    action: r.action,
    body: r.body,
    user: presentUser(users.get(r.user_id)!, scope.user.id),
  }));
}

/** Blocks with both their items as summaries; items and people read once for the whole list. */
export async function presentBlocks(db: Db, scope: ProductScope, rows: BlockRow[], urls: Urls): Promise<BlockJson[]> {
  const items = new Map(
    (await findItemsByIds(db, [...new Set(rows.flatMap((r) => [r.item_id, r.blocked_id]))])).map((i) => [i.id, i]),
  );
  const users = await usersOf(db, [
    ...rows.map((r) => r.user_id),
    ...[...items.values()].flatMap((i) => (i.assigned_to_id === null ? [] : [i.assigned_to_id])),
  ]);
  const summary = (item: ItemRow) => ({
    number: item.number,
    title: item.title,
    type: item.type,
    status: statusName(item.status),
    archived: item.archived === 1,
    assigned_to: item.assigned_to_id === null ? null : presentUser(users.get(item.assigned_to_id)!, scope.user.id),
    product: presentProductSummary(scope.product),
    short_url: itemShortUrl(urls.publicUrl, item),
  });
  return rows.map((r) => ({
    id: r.id,
    created_at: r.created_at,
    unblocked: r.unblocked === 1,
    user: presentUser(users.get(r.user_id)!, scope.user.id),
    item: summary(items.get(r.item_id)!),
    blocked: summary(items.get(r.blocked_id)!),
  }));
}
