import type { Db, Trx } from '../db/connection.js';
import type { ItemRow, UserRow } from '../db/schema.js';
import { GoneError, NotFoundError } from '../errors.js';
import { findItemsByIds, unfollow } from '../items/index.js';
import { formatTimestamp, nowTimestamp } from '../time.js';
import { findUserById } from '../users/index.js';
import * as outbox from './outbox.js';
import {
  findByMessageId,
  markUnsubscribed,
  recentErrors,
  retryNow,
  type OutboxSummary,
  type SentCount,
} from './outbox.js';
import { hasUnsubscribeLink, type UnsubscribeLinks } from './unsubscribe.js';
import { RETRY_WINDOW_MS } from './notifications.js';

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
  // Only mail to followers has unsubscribe links; other messages go to an address, not a follower.
  if (!message || !hasUnsubscribeLink(message.kind) || message.user_id === null)
    throw new NotFoundError('This unsubscribe link is not valid.');
  const user = (await findUserById(db, message.user_id))!;
  const items = await findItemsByIds(db, JSON.parse(message.item_ids) as number[]);
  return {
    outboxId: message.id,
    user,
    items: items.sort((a, b) => a.number - b.number),
    used: message.unsubscribed_at !== null,
  };
}

/**
 * Makes the recipient of a message stop following the items it was about. A link works once:
 * 410 when it was used already.
 */
export async function unsubscribe(trx: Trx, links: UnsubscribeLinks, token: string): Promise<UnsubscribeTarget> {
  const target = await unsubscribeTarget(trx, links, token);
  if (!(await markUnsubscribed(trx, target.outboxId, nowTimestamp()))) {
    throw new GoneError('This unsubscribe link has already been used.');
  }
  for (const item of target.items) await unfollow(trx, item.id, target.user.id);
  return target;
}

export interface MailStatus extends OutboxSummary {
  /** How long the longest-waiting due message has been due, in seconds (0 when none is). */
  oldestDueSeconds: number;
  /** False when due mail has stood still for the stall limit: nothing due was taken up, nothing sent. */
  progressing: boolean;
  /** Why delivery is not progressing, for a person. */
  stalled: string | null;
  recentErrors: { id: number; to: string; status: string; attempts: number; error: string; next_attempt_at: string }[];
}

/**
 * Whether mail is moving: it stalls when some message has been due for longer than `stallSeconds`
 * and no message at all was delivered in that time. A long queue that is being worked through
 * keeps delivering, so it is not a stall; an outage or a stuck worker is.
 */
export function assessDelivery(
  summary: OutboxSummary,
  now: Date,
  stallSeconds: number,
): Pick<MailStatus, 'oldestDueSeconds' | 'progressing' | 'stalled'> {
  const since = (t: string | null) =>
    t === null ? Infinity : Math.max(0, Math.floor((now.getTime() - Date.parse(t)) / 1000));
  const oldestDueSeconds = summary.oldestDueAt === null ? 0 : since(summary.oldestDueAt);
  const quietSeconds = since(summary.lastSentAt);
  if (oldestDueSeconds <= stallSeconds || quietSeconds <= stallSeconds)
    return { oldestDueSeconds, progressing: true, stalled: null };
  const last = summary.lastSentAt ? `the last delivery was at ${summary.lastSentAt}` : 'nothing has been delivered yet';
  const still = oldestDueSeconds < 120 ? `${oldestDueSeconds} seconds` : `${Math.floor(oldestDueSeconds / 60)} minutes`;
  const due = `a message has been due since ${summary.oldestDueAt}`;
  const stalled = `Due mail has not moved for ${still}: ${due} and ${last}.`;
  return { oldestDueSeconds, progressing: false, stalled };
}

/**
 * The outbox by state, its oldest waiting and due messages, and its latest delivery: what /health
 * and /metrics show. `sent` remembers the settled part of the sent count between calls.
 */
export async function summarize(db: Db, now: string, sent?: SentCount): Promise<OutboxSummary> {
  return outbox.summarize(db, now, sent);
}

export async function mailStatus(db: Db, stallSeconds: number, now = new Date()): Promise<MailStatus> {
  const [summary, errors] = await Promise.all([summarize(db, formatTimestamp(now)), recentErrors(db)]);
  return {
    ...summary,
    ...assessDelivery(summary, now, stallSeconds),
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
