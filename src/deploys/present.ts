import { Type } from '@sinclair/typebox';
import type { DeployRow, UserRow } from '../db/schema.js';
import { ItemSchema, type ItemJson } from '../items/present.js';
import { presentUser, UserSchema, type UserJson } from '../users/present.js';

export const DeploySchema = Type.Object({
  id: Type.Integer(),
  environment: Type.String(),
  version: Type.String(),
  notes: Type.String(),
  created_at: Type.String(),
  user: UserSchema,
  items: Type.Array(ItemSchema),
});

export interface DeployJson {
  id: number;
  environment: string;
  version: string;
  notes: string;
  created_at: string;
  user: UserJson;
  items: ItemJson[];
}

/** A deploy as the caller (`viewerId`) sees it (see presentUser). */
export function presentDeploy(row: DeployRow, user: UserRow, viewerId: number, items: ItemJson[]): DeployJson {
  return {
    id: row.id,
    environment: row.environment,
    version: row.version,
    notes: row.notes,
    created_at: row.created_at,
    user: presentUser(user, viewerId),
    items,
  };
}
