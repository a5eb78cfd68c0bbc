import type { Db } from '../db/connection.js';
import type { DeployRow, OutboxRow, ProductRow, UserRow } from '../db/schema.js';
import { findItemHeadsByIds, type ItemHead } from '../items/index.js';
import { renderDeployEmail, renderRollbackEmail, type MessageRenderer, type UnsubscribeLinks } from '../mail/index.js';
import { findProduct } from '../products/index.js';
import { findUsersByIds } from '../users/index.js';
import { findDeploysByIds, restoredDeploysOf } from './repository.js';
import { notesHtmlOf } from './service.js';

/** What a batch of deploy messages is rendered from, read in a few queries for the whole batch. */
interface DeployMail {
  deploys: Map<number, DeployRow>;
  /** Each deploy's notes as kept when it was recorded. */
  notes: Map<number, string>;
  deployers: Map<number, UserRow>;
  products: Map<number, ProductRow | undefined>;
  /** Without their descriptions, which no message shows. */
  items: Map<number, ItemHead>;
}

async function loadDeployMail(db: Db, messages: OutboxRow[]): Promise<DeployMail> {
  const deployIds = [...new Set(messages.flatMap((m) => (m.deploy_id === null ? [] : [m.deploy_id])))];
  const deploys = new Map((await findDeploysByIds(db, deployIds)).map((d) => [d.id, d]));
  const notes = await notesHtmlOf(db, [...deploys.values()]);
  const deployers = new Map(
    (
      await findUsersByIds(
        db,
        [...deploys.values()].map((d) => d.user_id),
      )
    ).map((u) => [u.id, u]),
  );
  const products = new Map<number, ProductRow | undefined>();
  for (const productId of new Set([...deploys.values()].map((d) => d.product_id)))
    products.set(productId, await findProduct(db, productId));
  const itemIds = messages.flatMap((m) => JSON.parse(m.item_ids) as number[]);
  const items = new Map((await findItemHeadsByIds(db, itemIds)).map((i) => [i.id, i]));
  return { deploys, notes, deployers, products, items };
}

/**
 * A message of a batch with what it is rendered from; undefined when its deploy or items are gone
 * (their product was deleted).
 */
function messageParts(mail: DeployMail, message: OutboxRow) {
  const deploy = message.deploy_id === null ? undefined : mail.deploys.get(message.deploy_id);
  const product = deploy && mail.products.get(deploy.product_id);
  const deployer = deploy && mail.deployers.get(deploy.user_id);
  const items = (JSON.parse(message.item_ids) as number[])
    .flatMap((id) => mail.items.get(id) ?? [])
    .sort((a, b) => a.number - b.number);
  return deploy && product && deployer && items.length > 0
    ? { deploy, product, deployer, items, notesHtml: mail.notes.get(deploy.id)! }
    : undefined;
}

/** What the deploy kept of its blocked items, by number. */
const blockedByOf = (deploy: DeployRow): Map<number, number[]> =>
  new Map(
    (JSON.parse(deploy.blocked_items) as { number: number; blocked_by: number[] }[]).map((b) => [
      b.number,
      b.blocked_by,
    ]),
  );

/**
 * Deploy messages as their recipients read them, rendered when they are sent: items show as they
 * are then, usually seconds after the deploy. A message whose deploy or items are gone maps to null.
 */
export function deployMessageRenderer(publicUrl: string, links: UnsubscribeLinks): MessageRenderer {
  return async (db, messages) => {
    const mail = await loadDeployMail(db, messages);
    return new Map(
      messages.map((message) => {
        const parts = messageParts(mail, message);
        const unsubscribeUrl = links.url(message.message_id);
        return [
          message.id,
          parts
            ? renderDeployEmail({
                ...parts,
                blockedBy: blockedByOf(parts.deploy),
                subject: message.subject,
                unsubscribeUrl,
                publicUrl,
              })
            : null,
        ];
      }),
    );
  };
}

/**
 * Rollback messages, rendered when they are sent like deploy messages: each item with the deploy
 * its entry for the environment went back to, as the rollback recorded it.
 */
export function rollbackMessageRenderer(publicUrl: string, links: UnsubscribeLinks): MessageRenderer {
  return async (db, messages) => {
    const mail = await loadDeployMail(db, messages);
    const restored = await restoredDeploysOf(db, [...mail.deploys.keys()]);
    return new Map(
      messages.map((message) => {
        const parts = messageParts(mail, message);
        if (!parts) return [message.id, null];
        const mine = restored.get(parts.deploy.id);
        const items = parts.items.map((item) => ({ item, restoredTo: mine?.get(item.id) ?? null }));
        const unsubscribeUrl = links.url(message.message_id);
        return [
          message.id,
          renderRollbackEmail({
            ...parts,
            rollback: parts.deploy,
            items,
            subject: message.subject,
            unsubscribeUrl,
            publicUrl,
          }),
        ];
      }),
    );
  };
}
