import type { ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { escapeHtml } from '../http/html.js';
import { itemShortUrl } from '../items/index.js';
import { fullName } from '../users/index.js';
import { FOOTNOTE_STYLE, MESSAGE_STYLE } from './deploy-email.js';
import { oneLine, readableTime } from './format.js';

/** An item as its conversation's mail names it. */
export type TalkedItem = Pick<ItemRow, 'id' | 'product_id' | 'number' | 'type' | 'title'>;

/**
 * `[Product] #12 Title`: every message of an item's conversation has this subject, so that mail
 * clients that thread by subject as well as by References keep them together.
 */
export function conversationSubject(product: ProductRow, item: Pick<ItemRow, 'number' | 'title'>): string {
  return oneLine(`[${product.name}] #${item.number} ${item.title}`);
}

/** What one comment message is rendered from. */
export interface CommentMessageParts {
  product: ProductRow;
  item: TalkedItem;
  author: UserRow;
  comment: { body: string; created_at: string };
  /** The comment as safe HTML. */
  bodyHtml: string;
  subject: string;
  unsubscribeUrl: string;
  publicUrl: string;
  /** Whether a reply to the message becomes a comment (inbound mail is set up). */
  replies: boolean;
}

/**
 * The text and HTML a follower gets about a comment: who said what on which item, when, a link to
 * it, and how to answer. A pure function of its parts.
 */
export function renderCommentEmail(parts: CommentMessageParts): { text: string; html: string } {
  const { product, item, author, comment, publicUrl } = parts;
  const when = readableTime(comment.created_at);
  const url = itemShortUrl(publicUrl, item);
  const answer = parts.replies ? 'Reply to this message to comment, or open' : 'Open';
  const text = [
    `${fullName(author)} commented on #${item.number} ${oneLine(item.title)} (${item.type}) on ${when}:`,
    '',
    comment.body,
    '',
    '-- ',
    `${answer} the item: ${url}`,
    `You receive this because you follow this item in ${product.name}.`,
    `Stop following it: ${parts.unsubscribeUrl}`,
  ];
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(parts.subject)}</title></head>
<body style="${MESSAGE_STYLE}">
<p><strong>${escapeHtml(fullName(author))}</strong> commented on
<a href="${escapeHtml(url)}">#${item.number} ${escapeHtml(item.title)}</a> on ${escapeHtml(when)}:</p>
<div style="border-left:3px solid #ccc;padding-left:12px">${parts.bodyHtml}</div>
<p style="${FOOTNOTE_STYLE}">${escapeHtml(answer)} <a href="${escapeHtml(url)}">the item</a>.
You receive this because you follow this item in ${escapeHtml(product.name)}.
<a href="${escapeHtml(parts.unsubscribeUrl)}">Stop following it</a>.</p>
</body></html>
`;
  return { text: `${text.join('\n')}\n`, html };
}

/** What one block message is rendered from: `blocker` now blocks `blocked`, whose assignee gets it. */
export interface BlockMessageParts {
  product: ProductRow;
  blocker: TalkedItem;
  blocked: TalkedItem;
  by: UserRow;
  createdAt: string;
  subject: string;
  publicUrl: string;
}

/** `[Product] #12 Title is blocked by #9 Other`. */
export function blockSubject(
  product: ProductRow,
  blocked: Pick<ItemRow, 'number' | 'title'>,
  blocker: Pick<ItemRow, 'number' | 'title'>,
): string {
  return oneLine(
    `[${product.name}] #${blocked.number} ${blocked.title} is blocked by #${blocker.number} ${blocker.title}`,
  );
}

/** The text and HTML the blocked item's assignee gets. A pure function of its parts. */
export function renderBlockEmail(parts: BlockMessageParts): { text: string; html: string } {
  const { product, blocker, blocked, by, publicUrl } = parts;
  const when = readableTime(parts.createdAt);
  const blockedUrl = itemShortUrl(publicUrl, blocked);
  const blockerUrl = itemShortUrl(publicUrl, blocker);
  const text = [
    `${fullName(by)} marked #${blocked.number} ${oneLine(blocked.title)}, assigned to you, ` +
      `as blocked by #${blocker.number} ${oneLine(blocker.title)} on ${when}.`,
    '',
    `  #${blocked.number}: ${blockedUrl}`,
    `  #${blocker.number}: ${blockerUrl}`,
    '',
    '-- ',
    `You receive this because the item is assigned to you in ${product.name}.`,
  ];
  const link = (url: string, item: TalkedItem) =>
    `<a href="${escapeHtml(url)}">#${item.number} ${escapeHtml(item.title)}</a>`;
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(parts.subject)}</title></head>
<body style="${MESSAGE_STYLE}">
<p><strong>${escapeHtml(fullName(by))}</strong> marked ${link(blockedUrl, blocked)}, assigned to you,
as blocked by ${link(blockerUrl, blocker)} on ${escapeHtml(when)}.</p>
<p style="${FOOTNOTE_STYLE}">You receive this because the item is assigned to you in ${escapeHtml(product.name)}.</p>
</body></html>
`;
  return { text: `${text.join('\n')}\n`, html };
}
