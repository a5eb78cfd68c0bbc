import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { DeployRow, ItemRow, UserRow } from '../db/schema.js';
import { BIG_PAGE, ItemSchema, presentItems, type ItemJson } from '../items/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { nextTurn } from '../turns.js';
import { findUsersByIds, presentUser, UserSchema } from '../users/index.js';
import { itemsOfDeploys } from './repository.js';

export const DeploySchema = Type.Object({
  id: Type.Integer(),
  environment: Type.String(),
  version: Type.String(),
  notes: Type.String(),
  created_at: Type.String(),
  user: UserSchema,
  items: Type.Array(ItemSchema),
});

export type DeployJson = Static<typeof DeploySchema>;

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

/** Deploys as JSON, each with its items (embedded: a short deployed_to) in their current state. */
export async function presentDeploys(db: Db, scope: ProductScope, deploys: DeployRow[], urls: Urls): Promise<DeployJson[]> {
  const itemsByDeploy = await itemsOfDeploys(db, deploys.map((d) => d.id));
  const allItems = [...new Map([...itemsByDeploy.values()].flat().map((i) => [i.id, i])).values()];
  if (allItems.length > BIG_PAGE) await nextTurn();
  const rendered = new Map((await presentItems(db, scope.product, allItems, urls, scope.user.id, true)).map((json, i) => [allItems[i].id, json]));
  const users = new Map((await findUsersByIds(db, deploys.map((d) => d.user_id))).map((u) => [u.id, u]));
  const json = deploys.map((d) => presentDeploy(d, users.get(d.user_id)!, scope.user.id, itemsByDeploy.get(d.id)!.map((i) => rendered.get(i.id)!)));
  // Serialising a page of a thousand items is a step of its own (see nextTurn).
  if (allItems.length > BIG_PAGE) await nextTurn();
  return json;
}

/**
 * A deploy just recorded as JSON: its items and its deployer (the caller) are in hand. People are
 * shown as `viewerId` sees them: the caller, or nobody in particular (webhooks).
 */
export async function presentNewDeploy(
  db: Db,
  scope: ProductScope,
  deploy: DeployRow,
  items: ItemRow[],
  urls: Urls,
  viewerId = scope.user.id,
): Promise<DeployJson> {
  const json = presentDeploy(deploy, scope.user, viewerId, await presentItems(db, scope.product, items, urls, viewerId, true));
  if (items.length > BIG_PAGE) await nextTurn();
  return json;
}
