import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { DeployRow, ItemRow, UserRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { BIG_PAGE, ItemSchema, presentItems, type ItemJson } from '../items/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { nextTurn } from '../turns.js';
import { findUsersByIds, presentUser, UserSchema } from '../users/index.js';
import { itemsOfDeploys } from './repository.js';

export const DeploySchema = Type.Object(
  {
    id: Type.Integer(),
    environment: Type.String(),
    version: Type.String({ description: 'Empty when not given.' }),
    notes: Type.String({ description: 'Markdown; empty when not given.' }),
    created_at: Type.String(),
    user: ref(UserSchema, { description: 'Who recorded the deploy.' }),
    items: Type.Array(ref(ItemSchema), { description: 'The deployed items as they are now, by number.' }),
  },
  { $id: 'Deploy', description: 'Items that went to an environment (docs/INTERFACE.md §4.4).' },
);

export type DeployJson = Static<typeof DeploySchema>;

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const DEPLOY_SCHEMAS = [DeploySchema];

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

/** A deploy just recorded as JSON: its items and its deployer (the caller) are in hand. */
export async function presentNewDeploy(db: Db, scope: ProductScope, deploy: DeployRow, items: ItemRow[], urls: Urls): Promise<DeployJson> {
  const json = presentDeploy(deploy, scope.user, scope.user.id, await presentItems(db, scope.product, items, urls, scope.user.id, true));
  if (items.length > BIG_PAGE) await nextTurn();
  return json;
}
