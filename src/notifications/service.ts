import type { Db, Trx } from '../db/connection.js';
import { lockProduct } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import type { EnvironmentChoice, NotificationChoice } from './input.js';
import {
  choicesFor,
  commentMailOff,
  commentMailOffAmong,
  findChosenEnvironments,
  replaceChosenEnvironments,
  setCommentMailOff,
} from './repository.js';

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

/** Whether comments on the product's items email the caller (yes, unless they turned it off). */
export async function commentMailChoice(db: Db, scope: ProductScope): Promise<boolean> {
  return !(await commentMailOff(db, scope.product.id, scope.user.id));
}

/** Turns comment mail about the scope's product on or off for the caller; returns the choice as stored. */
export async function setCommentMailChoice(trx: Trx, scope: ProductScope, on: boolean): Promise<boolean> {
  await lockProduct(trx, scope.product.id);
  await setCommentMailOff(trx, scope.product.id, scope.user.id, !on);
  return commentMailChoice(trx, scope);
}

/** Of the given users (an item's followers), those who want comment mail about the product, in the order given. */
export async function wantCommentMail(db: Db, productId: number, userIds: number[]): Promise<number[]> {
  const off = await commentMailOffAmong(db, productId, userIds);
  return userIds.filter((id) => !off.has(id));
}

/** Both of the caller's choices for the scope's product. */
export async function notificationChoice(db: Db, scope: ProductScope): Promise<NotificationChoice> {
  return { environments: await environmentChoice(db, scope), comments: await commentMailChoice(db, scope) };
}

/** Changes what `change` gives of the caller's choices, in one transaction; returns both as stored. */
export async function setNotificationChoice(
  trx: Trx,
  scope: ProductScope,
  change: Partial<NotificationChoice>,
): Promise<NotificationChoice> {
  if (change.environments !== undefined) await setEnvironmentChoice(trx, scope, change.environments);
  if (change.comments !== undefined) await setCommentMailChoice(trx, scope, change.comments);
  return notificationChoice(trx, scope);
}
