import type { DeployRow, ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { escapeHtml } from '../http/html.js';
import { fullName } from '../users/index.js';
import { renderFollowerMessage, type MailedItem } from './deploy-email.js';
import { oneLine, readableTime } from './format.js';

/** `[Product] Rolled back production to 1.4.1: #12 Title and 2 more`, from a follower's items in number order. */
export function rollbackSubject(
  product: ProductRow,
  rollback: DeployRow,
  items: Pick<ItemRow, 'number' | 'title'>[],
): string {
  const first = items[0];
  const more = items.length > 1 ? ` and ${items.length - 1} more` : '';
  return oneLine(
    `[${product.name}] Rolled back ${rollback.environment} to ${rollback.version}: ` +
      `#${first.number} ${first.title}${more}`,
  );
}

/** What one rollback message is rendered from. */
export interface RollbackMessageParts {
  product: ProductRow;
  /** The rollback deploy. */
  rollback: DeployRow;
  deployer: UserRow;
  /**
   * The recipient's items the rollback changed, in number order, each with the deploy its entry
   * for the environment went back to, or null when no earlier deploy there had it.
   */
  items: { item: MailedItem; restoredTo: DeployRow | null }[];
  /** The rollback's notes as safe HTML, rendered when it was recorded. */
  notesHtml: string;
  subject: string;
  unsubscribeUrl: string;
  publicUrl: string;
}

/** What became of an item in the environment: gone from it, or back to an earlier version. */
function outcome(environment: string, restoredTo: DeployRow | null): string {
  if (!restoredTo) return `No longer in ${oneLine(environment)}: no earlier deploy there had it.`;
  const version = restoredTo.version ? `version ${oneLine(restoredTo.version)}` : 'an unversioned deploy';
  return `Back to ${version}, deployed ${readableTime(restoredTo.created_at)}.`;
}

/**
 * The text and HTML a follower gets about a rollback: who rolled which environment back to
 * which version, and each of their items it changed, with what became of it there. A pure
 * function of its parts.
 */
export function renderRollbackEmail(parts: RollbackMessageParts): { text: string; html: string } {
  const { rollback, deployer, items } = parts;
  const when = readableTime(rollback.created_at);
  const text =
    `${fullName(deployer)} rolled ${oneLine(rollback.environment)} ` +
    `back to version ${oneLine(rollback.version)} on ${when}.`;
  const html =
    `<strong>${escapeHtml(fullName(deployer))}</strong> rolled ` +
    `<strong>${escapeHtml(rollback.environment)}</strong> back to ` +
    `version <strong>${escapeHtml(rollback.version)}</strong> on ${escapeHtml(when)}.`;
  return renderFollowerMessage({
    ...parts,
    deploy: rollback,
    headline: { text, html },
    intro:
      items.length === 1
        ? 'The item you follow that this rolled back:'
        : `The ${items.length} items you follow that this rolled back:`,
    items: items.map(({ item, restoredTo }) => ({ item, note: outcome(rollback.environment, restoredTo) })),
  });
}
