import { recordActivity } from '../activities/index.js';
import type { Trx } from '../db/connection.js';
import type { DeployRow, UserRow } from '../db/schema.js';
import { itemSummary, type ItemHead } from '../items/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { MAX_EVENT_ITEMS, queueEvent } from '../webhooks/index.js';

/**
 * Tells the product's webhooks about a deploy, in its transaction: `deploy.created`, or for a
 * rollback (`rollback`: the ids of the deploys it undid) `deploy.rolled_back`, which also names
 * the numbers of the items it took back (`reverted`, its own items: restored to an earlier deploy
 * or reverted) and those deploys (`reverted_deploys`). The deploy is summarised with its first
 * MAX_EVENT_ITEMS items by number, as they are after it, and how many it has: however large the
 * deploy, the event is a small one, and only the items it lists are looked at. Rendered only
 * when a webhook wants the event. The caller (`scope.user`) is the deployer and the actor.
 */
export async function announceDeploy(
  trx: Trx,
  scope: ProductScope,
  deploy: DeployRow,
  items: ItemHead[],
  urls: Urls,
  rollback?: { undone: number[] },
): Promise<void> {
  await queueEvent(trx, {
    product: scope.product,
    actor: scope.user,
    type: rollback ? 'deploy.rolled_back' : 'deploy.created',
    render: async () => {
      const listed = [...items].sort((a, b) => a.number - b.number).slice(0, MAX_EVENT_ITEMS);
      const summary = {
        id: deploy.id,
        environment: deploy.environment,
        version: deploy.version,
        notes: deploy.notes,
        created_at: deploy.created_at,
        rollback: deploy.rollback === 1,
        item_count: items.length,
        items: listed.map((i) => itemSummary(i, urls)),
      };
      if (!rollback) return { deploy: summary };
      const undone = [...rollback.undone].sort((a, b) => a - b);
      return {
        deploy: summary,
        reverted: listed.map((i) => i.number),
        reverted_deploys: undone.slice(0, MAX_EVENT_ITEMS),
        reverted_deploy_count: undone.length,
      };
    },
  });
}

/**
 * Puts a deploy in the activity log, in its transaction: one activity per item it changed,
 * `deployed` (its environment, version and id) or, for a rollback, `rolled_back`, with the deploy
 * the item's entry went back to (`restoredTo`, by item id; null: the entry was reverted).
 */
export async function logDeploy(
  trx: Trx,
  deploy: DeployRow,
  actor: UserRow,
  items: ItemHead[],
  restoredTo?: Map<number, DeployRow | null>,
): Promise<void> {
  const meta = { deploy_id: deploy.id, environment: deploy.environment, version: deploy.version };
  await recordActivity(
    trx,
    items.map((item) => {
      if (!restoredTo) return { action: 'deployed', item, actor, at: deploy.created_at, meta };
      const restored = restoredTo.get(item.id) ?? null;
      return {
        action: 'rolled_back',
        item,
        actor,
        at: deploy.created_at,
        meta: { ...meta, restored_deploy_id: restored?.id ?? null, restored_version: restored?.version ?? null },
      };
    }),
  );
}
