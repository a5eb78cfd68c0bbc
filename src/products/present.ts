import { Type, type Static } from '@sinclair/typebox';
import type { ProductRow, UserRow } from '../db/schema.js';
import { presentUser, UserSchema } from '../users/index.js';

export const ProductSummarySchema = Type.Object({ id: Type.Integer(), name: Type.String(), archived: Type.Boolean() });
export type ProductSummary = Static<typeof ProductSummarySchema>;

export const ProductSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  archived: Type.Boolean(),
  admin: Type.Boolean(),
  created_at: Type.String(),
});

export const MemberSchema = Type.Composite([UserSchema, Type.Object({ admin: Type.Boolean(), revoked: Type.Boolean() })]);

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
