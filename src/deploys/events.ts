import type { Trx } from '../db/connection.js';
import type { DeployRow, ItemRow } from '../db/schema.js';
import type { ProductScope, Urls } from '../scope.js';
import { NO_VIEWER, queueEvent } from '../webhooks/index.js';
import { presentRecorded } from './present.js';

/**
 * Tells the product's webhooks about a deploy, in its transaction: `deploy.created`, or for a
 * rollback (`rollback`: the ids of the deploys it undid) `deploy.rolled_back`, which also names
 * the numbers of the items it took back (`reverted`, its own items: restored to an earlier deploy
 * or reverted) and those deploys (`reverted_deploys`). The deploy is rendered as deploys.json
 * renders it, its items as they are after it, only when a webhook wants the event. The caller
 * (`scope.user`) is the deployer and the actor.
 */
export async function announceDeploy(
  trx: Trx,
  scope: ProductScope,
  deploy: DeployRow,
  items: ItemRow[],
  urls: Urls,
  rollback?: { undone: number[] },
): Promise<void> {
  await queueEvent(trx, {
    product: scope.product,
    actor: scope.user,
    type: rollback ? 'deploy.rolled_back' : 'deploy.created',
    render: async () => ({
      deploy: await presentRecorded(trx, scope, deploy, items, urls, NO_VIEWER),
      ...(rollback
        ? { reverted: items.map((i) => i.number).sort((a, b) => a - b), reverted_deploys: [...rollback.undone].sort((a, b) => a - b) }
        : {}),
    }),
  });
}
