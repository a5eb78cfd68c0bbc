import type { Db, Trx } from '../db/connection.js';
import { lockProduct } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import type { EnvironmentChoice } from './input.js';
import { choicesFor, findChosenEnvironments, replaceChosenEnvironments } from './repository.js';

/** The caller's choice of deploy environments that email them about the scope's product. */
export async function environmentChoice(db: Db, scope: ProductScope): Promise<EnvironmentChoice> {
  const chosen = await findChosenEnvironments(db, scope.product.id, scope.user.id);
  return chosen.length ? chosen : 'all';
}

/**
 * Sets the caller's choice for the scope's product and returns it as now stored. The product row
 * is locked first, as every writer of a product does: a deploy recorded meanwhile sees the old
 * choice or the new one, never half of it, and two changes at once do not mix.
 */
export async function setEnvironmentChoice(
  trx: Trx,
  scope: ProductScope,
  choice: EnvironmentChoice,
): Promise<EnvironmentChoice> {
  await lockProduct(trx, scope.product.id);
  await replaceChosenEnvironments(trx, scope.product.id, scope.user.id, choice === 'all' ? [] : choice);
  return environmentChoice(trx, scope);
}

/**
 * Of the given users (followers of a deploy's items), those who want mail about a deploy of the
 * product to `environment`, in the order given: everyone who chose nothing (every environment),
 * and those who chose this one. Chosen names are trimmed, so a deploy's is compared trimmed too.
 */
export async function wantDeployMail(
  db: Db,
  productId: number,
  environment: string,
  userIds: number[],
): Promise<number[]> {
  const choices = await choicesFor(db, productId, environment.trim(), userIds);
  return userIds.filter((id) => choices.get(id) ?? true);
}
