import type { DeployRow, ItemRow, ProductRow, UserRow } from '../db/schema.js';

/** What a message shows of an item: no description, which a deploy's mail never reads. */
export type MailedItem = Pick<ItemRow, 'id' | 'product_id' | 'number' | 'type' | 'title' | 'status'>;
import { escapeHtml } from '../http/html.js';
import { itemShortUrl, statusName } from '../items/index.js';
import { fullName } from '../users/index.js';
import { oneLine, readableTime } from './format.js';

/** `[Product] Deployed to production: #12 Title and 2 more`, from a follower's items in number order. */
export function deploySubject(
  product: ProductRow,
  deploy: DeployRow,
  items: Pick<ItemRow, 'number' | 'title'>[],
): string {
  const first = items[0];
  const more = items.length > 1 ? ` and ${items.length - 1} more` : '';
  return oneLine(`[${product.name}] Deployed to ${deploy.environment}: #${first.number} ${first.title}${more}`);
}

/** What one deploy message is rendered from; everything but the items is the deploy's. */
export interface DeployMessageParts {
  product: ProductRow;
  deploy: DeployRow;
  deployer: UserRow;
  /** The recipient's items in the deploy, in number order. */
  items: MailedItem[];
  /** By item number, the blockers of the items that the environment did not run when it was recorded. */
  blockedBy?: ReadonlyMap<number, readonly number[]>;
  /** The notes as safe HTML, rendered when the deploy was recorded (deploys' notesHtmlOf). */
  notesHtml: string;
  subject: string;
  unsubscribeUrl: string;
  /** Base of item links. */
  publicUrl: string;
}

/**
 * The text and HTML a follower gets: only their items, the version, the notes, who deployed and
 * when, and a link to stop following these items. A pure function of its parts.
 */
export function renderDeployEmail(parts: DeployMessageParts): { text: string; html: string } {
  const { deploy, deployer, items } = parts;
  const when = readableTime(deploy.created_at);
  const text =
    `${fullName(deployer)} deployed ${deploy.version ? `version ${deploy.version} ` : ''}` +
    `to ${oneLine(deploy.environment)} on ${when}.`;
  const version = deploy.version ? `version <strong>${escapeHtml(deploy.version)}</strong> ` : '';
  const html =
    `<strong>${escapeHtml(fullName(deployer))}</strong> deployed ${version}` +
    `to <strong>${escapeHtml(deploy.environment)}</strong> on ${escapeHtml(when)}.`;
  return renderFollowerMessage({
    ...parts,
    headline: { text, html },
    intro:
      items.length === 1
        ? 'The item you follow in this deploy:'
        : `The ${items.length} items you follow in this deploy:`,
    items: items.map((item) => ({ item, note: blockedNote(parts.blockedBy?.get(item.number), deploy.environment) })),
  });
}

/** `Blocked by #9, which is not in production.`, or nothing for an item no absent item blocks. */
function blockedNote(blockers: readonly number[] | undefined, environment: string): string | undefined {
  if (!blockers?.length) return undefined;
  const numbers = blockers.map((n) => `#${n}`);
  const list = numbers.length === 1 ? numbers[0] : `${numbers.slice(0, -1).join(', ')} and ${numbers.at(-1)}`;
  return `Blocked by ${list}, which ${numbers.length === 1 ? 'is' : 'are'} not in ${oneLine(environment)}.`;
}

/** A message to followers about a deploy of their items: what happened, the items, the notes. */
export interface FollowerMessageParts {
  product: ProductRow;
  /** The deploy whose notes the message ends with. */
  deploy: DeployRow;
  /** What happened, one sentence, as text and as HTML. */
  headline: { text: string; html: string };
  /** The line above the items. */
  intro: string;
  /** The recipient's items in number order, each with a note of what happened to it, if any. */
  items: { item: MailedItem; note?: string }[];
  /** The deploy's notes as safe HTML, rendered when they were written. */
  notesHtml: string;
  subject: string;
  unsubscribeUrl: string;
  publicUrl: string;
}

/** The text and HTML of a message to followers; deploy and rollback messages differ in their parts only. */
export function renderFollowerMessage(parts: FollowerMessageParts): { text: string; html: string } {
  return { text: followerText(parts), html: followerHtml(parts) };
}

/** An item in the text of a message: number, type, title, status, a note, the link. */
function itemLines(item: MailedItem, publicUrl: string, note?: string): string[] {
  return [
    `  #${item.number} [${item.type}] ${oneLine(item.title)} (${statusName(item.status)})`,
    ...(note ? [`      ${note}`] : []),
    `      ${itemShortUrl(publicUrl, item)}`,
  ];
}

/** An item as a row of a message's HTML table, with its note in the last cell. */
function itemRowHtml(item: MailedItem, publicUrl: string, note?: string): string {
  const href = escapeHtml(itemShortUrl(publicUrl, item));
  return [
    '<tr>',
    `<td style="padding:4px 8px;white-space:nowrap"><a href="${href}">#${item.number}</a></td>`,
    `<td style="padding:4px 8px;color:#666">${escapeHtml(item.type)}</td>`,
    `<td style="padding:4px 8px">${escapeHtml(item.title)}</td>`,
    `<td style="padding:4px 8px;color:#666;white-space:nowrap">${escapeHtml(statusName(item.status))}</td>`,
    ...(note ? [`<td style="padding:4px 8px">${escapeHtml(note)}</td>`] : []),
    '</tr>',
  ].join('\n');
}

function followerText({
  product,
  deploy,
  headline,
  intro,
  items,
  unsubscribeUrl,
  publicUrl,
}: FollowerMessageParts): string {
  const lines = [
    headline.text,
    '',
    intro,
    '',
    ...items.flatMap(({ item, note }) => itemLines(item, publicUrl, note)),
    ...(deploy.notes ? ['', 'Notes:', '', deploy.notes] : []),
    '',
    '-- ',
    `You receive this because you follow these items in ${product.name}.`,
    `Stop following them: ${unsubscribeUrl}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** The style of a message's closing words: small and grey. */
export const FOOTNOTE_STYLE = 'color:#595959;font-size:12px;margin-top:24px';
/** The style of a message's body. */
export const MESSAGE_STYLE =
  'font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;color:#222;line-height:1.4';

function followerHtml({
  product,
  deploy,
  headline,
  intro,
  items,
  notesHtml,
  subject,
  unsubscribeUrl,
  publicUrl,
}: FollowerMessageParts): string {
  const rows = items.map(({ item, note }) => itemRowHtml(item, publicUrl, note)).join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="${MESSAGE_STYLE}">
<p>${headline.html}</p>
<p>${escapeHtml(intro)}</p>
<table style="border-collapse:collapse">
${rows}
</table>
${deploy.notes ? `<h3 style="font-size:14px;margin:16px 0 4px">Notes</h3>\n<div>${notesHtml}</div>` : ''}
<p style="${FOOTNOTE_STYLE}">You receive this because you follow these items in ${escapeHtml(product.name)}.
<a href="${escapeHtml(unsubscribeUrl)}">Stop following them</a>.</p>
</body></html>
`;
}
