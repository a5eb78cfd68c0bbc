import type { Trx } from '../db/connection.js';
import type { DeployRow, ItemRow } from '../db/schema.js';
import type { ProductScope, Urls } from '../scope.js';
import { NO_VIEWER, queueEvent } from '../webhooks/index.js';
import { presentNewDeploy } from './present.js';

/**
 * Tells the product's webhooks about a deploy, in its transaction: `deploy.created`, or, given
 * `reverted` (the numbers of the items a rollback took back), `deploy.rolled_back`. The deploy is
 * rendered as deploys.json renders it, its `items` as they are after it (a rollback's own items),
 * only when a webhook wants the event. The caller (`scope.user`) is the deployer and the actor.
 */
export async function announceDeploy(
  trx: Trx,
  scope: ProductScope,
  deploy: DeployRow,
  items: ItemRow[],
  urls: Urls,
  reverted?: number[],
): Promise<void> {
  await queueEvent(trx, {
    product: scope.product,
    actor: scope.user,
    type: reverted ? 'deploy.rolled_back' : 'deploy.created',
    render: async () => ({
      deploy: await presentNewDeploy(trx, scope, deploy, items, urls, NO_VIEWER),
      ...(reverted ? { reverted: [...reverted].sort((a, b) => a - b) } : {}),
    }),
  });
}
