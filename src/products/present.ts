import { Type, type Static } from '@sinclair/typebox';
import type { ProductRow, UserRow } from '../db/schema.js';
import { presentUser, UserSchema } from '../users/index.js';

export const ProductSummarySchema = Type.Object(
  { id: Type.Integer(), name: Type.String(), archived: Type.Boolean() },
  { $id: 'ProductSummary', description: 'A product as embedded in an item (docs/INTERFACE.md §4.2).' },
);
export type ProductSummary = Static<typeof ProductSummarySchema>;

export const ProductSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    archived: Type.Boolean(),
    admin: Type.Boolean({ description: 'Whether the caller is an admin of the product.' }),
    created_at: Type.String(),
  },
  { $id: 'Product', description: 'A product, as its members see it (docs/INTERFACE.md §9).' },
);

export const MemberSchema = Type.Composite(
  [
    UserSchema,
    Type.Object({
      admin: Type.Boolean({ description: 'Whether the member is an admin of the product.' }),
      revoked: Type.Boolean({ description: 'Always false.' }),
    }),
  ],
  { $id: 'Member', description: 'A member of a product: a User with their role.' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const PRODUCT_SCHEMAS = [ProductSummarySchema, ProductSchema, MemberSchema];

export function presentProductSummary(row: ProductRow): ProductSummary {
  return { id: row.id, name: row.name, archived: row.archived === 1 };
}

export function presentProduct(row: ProductRow, admin: boolean): Static<typeof ProductSchema> {
  return { ...presentProductSummary(row), admin, created_at: row.created_at };
}

/** A member as people.json lists them; `viewerId` is the caller (see presentUser). */
export function presentMember(row: UserRow, admin: boolean, viewerId: number): Static<typeof MemberSchema> {
  return { ...presentUser(row, viewerId), admin, revoked: false };
}
