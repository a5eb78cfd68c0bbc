import type { Db } from '../db/connection.js';
import type { ItemRow, UserRow } from '../db/schema.js';
import { GoneError, NotFoundError } from '../errors.js';
import { findItemsByIds, removeFollower } from '../items/repository.js';
import { formatTimestamp, nowTimestamp } from '../time.js';
import { findUserById } from '../users/repository.js';
import { findByMessageId, markUnsubscribed, recentErrors, retryNow, summarize, type OutboxSummary } from './outbox.js';
import type { UnsubscribeLinks } from './unsubscribe.js';
import { RETRY_WINDOW_MS } from './worker.js';

export interface UnsubscribeTarget {
  /** The outbox row of the message the link came in. */
  outboxId: number;
  user: UserRow;
  items: ItemRow[];
  used: boolean;
}

/** What a link is for; 404 when it was not signed here or names no message. */
export async function unsubscribeTarget(db: Db, links: UnsubscribeLinks, token: string): Promise<UnsubscribeTarget> {
  const messageId = links.verify(token);
  const message = messageId === undefined ? undefined : await findByMessageId(db, messageId);
  // Only deploy mail has unsubscribe links; other messages go to an address, not a follower.
  if (!message || message.kind !== 'deploy' || message.user_id === null) throw new NotFoundError('This unsubscribe link is not valid.');
  const user = (await findUserById(db, message.user_id))!;
  const items = await findItemsByIds(db, JSON.parse(message.item_ids) as number[]);
  return { outboxId: message.id, user, items: items.sort((a, b) => a.number - b.number), used: message.unsubscribed_at !== null };
}

/**
 * Makes the recipient of a message stop following the items it was about. A link works once:
 * 410 when it was used already.
 */
export async function unsubscribe(trx: Db, links: UnsubscribeLinks, token: string): Promise<UnsubscribeTarget> {
  const target = await unsubscribeTarget(trx, links, token);
  if (!(await markUnsubscribed(trx, target.outboxId, nowTimestamp()))) {
    throw new GoneError('This unsubscribe link has already been used.');
  }
  for (const item of target.items) await removeFollower(trx, item.id, target.user.id);
  return target;
}

export interface MailStatus extends OutboxSummary {
  recentErrors: { id: number; to: string; status: string; attempts: number; error: string; next_attempt_at: string }[];
}

export async function mailStatus(db: Db): Promise<MailStatus> {
  const [summary, errors] = await Promise.all([summarize(db), recentErrors(db)]);
  return {
    ...summary,
    recentErrors: errors.map((m) => ({
      id: m.id,
      to: m.to_address,
      status: m.status,
      attempts: m.attempts,
      error: m.last_error ?? '',
      next_attempt_at: m.next_attempt_at,
    })),
  };
}

/** Operators' retry: everything waiting goes now; with `failed`, given-up messages too. */
export async function retryMail(db: Db, failed: boolean): Promise<number> {
  const now = new Date();
  return retryNow(db, formatTimestamp(now), formatTimestamp(new Date(now.getTime() + RETRY_WINDOW_MS)), failed);
}
