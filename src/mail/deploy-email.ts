import MarkdownIt from 'markdown-it';
import type { Db } from '../db/connection.js';
import type { DeployRow, ItemRow, OutboxRow, ProductRow, UserRow } from '../db/schema.js';
import { findDeploysByIds } from '../deploys/repository.js';
import { statusName } from '../items/model.js';
import { findItemsByIds } from '../items/repository.js';
import { findProduct } from '../products/repository.js';
import { findUsersByIds } from '../users/repository.js';
import type { UnsubscribeLinks } from './unsubscribe.js';

// Raw HTML in notes is shown as text, never passed through; links are limited to safe schemes.
const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true });

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

/** `"First Last" <email>`, quoted so that any name is a valid header. */
export function mailbox(user: UserRow): string {
  const name = `${user.first_name} ${user.last_name}`.trim().replace(/[\\"]/g, '\\$&').replace(/[\r\n]+/g, ' ');
  return name ? `"${name}" <${user.email}>` : user.email;
}

export function oneLine(s: string): string {
  return s.replace(/[\r\n\t]+/g, ' ').trim();
}

export function fullName(user: Pick<UserRow, 'first_name' | 'last_name' | 'email'>): string {
  return `${user.first_name} ${user.last_name}`.trim() || user.email;
}

/** `Sun, 22 Nov 2026 10:04 UTC` from the interface's timestamp form. */
export function readableTime(timestamp: string): string {
  return new Date(timestamp).toUTCString().replace(/:\d\d GMT$/, ' UTC');
}

/** `[Product] Deployed to production: #12 Title and 2 more`, from a follower's items in number order. */
export function deploySubject(product: ProductRow, deploy: DeployRow, items: ItemRow[]): string {
  const first = items[0];
  const more = items.length > 1 ? ` and ${items.length - 1} more` : '';
  return oneLine(`[${product.name}] Deployed to ${deploy.environment}: #${first.number} ${first.title}${more}`);
}

/** Notes are the same in every message of a deploy (and often across deploys): rendered once. */
const notesCache = new Map<string, string>();
const NOTES_CACHE_SIZE = 100;

/**
 * Longest notes rendered as Markdown. markdown-it takes up to ~3.5 µs per character on hostile
 * input (runs of `![*`, `[<`, nested brackets), all of it on the event loop: 64 KB of such notes
 * held the process for a quarter of a second and more. Up to this size the worst case stays near
 * 30 ms; longer notes are shown as they were written, escaped, which costs next to nothing.
 */
export const MARKDOWN_MAX_CHARS = 8192;

function notesHtml(notes: string): string {
  if (!notes) return '';
  let html = notesCache.get(notes);
  if (html === undefined) {
    html =
      notes.length <= MARKDOWN_MAX_CHARS
        ? markdown.render(notes)
        : `<pre style="white-space:pre-wrap;font-family:inherit;margin:0">${escapeHtml(notes)}</pre>\n`;
    if (notesCache.size >= NOTES_CACHE_SIZE) notesCache.delete(notesCache.keys().next().value as string);
    notesCache.set(notes, html);
  }
  return html;
}

/** What one deploy message is rendered from; everything but the items is the deploy's. */
export interface DeployMessageParts {
  product: ProductRow;
  deploy: DeployRow;
  deployer: UserRow;
  /** The recipient's items in the deploy, in number order. */
  items: ItemRow[];
  subject: string;
  unsubscribeUrl: string;
  /** Base of item links. */
  publicUrl: string;
}

/**
 * The text and HTML a follower gets: only their items, the version, the notes, who deployed and
 * when, and a link to stop following these items.
 */
export function renderDeployEmail(parts: DeployMessageParts): { text: string; html: string } {
  const { product, deploy, deployer, items, subject, unsubscribeUrl, publicUrl } = parts;
  const who = fullName(deployer);
  const when = readableTime(deploy.created_at);
  const version = deploy.version ? `version ${deploy.version} ` : '';
  const itemUrl = (item: ItemRow) => `${publicUrl}/i/${item.product_id}/${item.number}/`;
  const intro = items.length === 1 ? 'The item you follow in this deploy:' : `The ${items.length} items you follow in this deploy:`;

  const text = [
    `${who} deployed ${version}to ${oneLine(deploy.environment)} on ${when}.`,
    '',
    intro,
    '',
    ...items.flatMap((item) => [
      `  #${item.number} [${item.type}] ${oneLine(item.title)} (${statusName(item.status)})`,
      `      ${itemUrl(item)}`,
    ]),
    ...(deploy.notes ? ['', 'Notes:', '', deploy.notes] : []),
    '',
    '-- ',
    `You receive this because you follow these items in ${product.name}.`,
    `Stop following them: ${unsubscribeUrl}`,
  ].join('\n') + '\n';

  const rows = items
    .map(
      (item) => `<tr>
<td style="padding:4px 8px;white-space:nowrap"><a href="${escapeHtml(itemUrl(item))}">#${item.number}</a></td>
<td style="padding:4px 8px;color:#666">${escapeHtml(item.type)}</td>
<td style="padding:4px 8px">${escapeHtml(item.title)}</td>
<td style="padding:4px 8px;color:#666;white-space:nowrap">${escapeHtml(statusName(item.status))}</td>
</tr>`,
    )
    .join('\n');
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;color:#222;line-height:1.4">
<p><strong>${escapeHtml(who)}</strong> deployed ${deploy.version ? `version <strong>${escapeHtml(deploy.version)}</strong> ` : ''}to <strong>${escapeHtml(deploy.environment)}</strong> on ${escapeHtml(when)}.</p>
<p>${escapeHtml(intro)}</p>
<table style="border-collapse:collapse">
${rows}
</table>
${deploy.notes ? `<h3 style="font-size:14px;margin:16px 0 4px">Notes</h3>\n<div>${notesHtml(deploy.notes)}</div>` : ''}
<p style="color:#888;font-size:12px;margin-top:24px">You receive this because you follow these items in ${escapeHtml(product.name)}.
<a href="${escapeHtml(unsubscribeUrl)}">Stop following them</a>.</p>
</body></html>
`;
  return { text, html };
}

/**
 * The bodies of queued deploy messages, rendered when they are sent: an outbox row names its
 * deploy, recipient and items, and the deploy, its product and deployer, and the items are read
 * here, a batch of messages at a time. Items show as they are at sending, usually seconds after
 * the deploy. A message whose deploy or items are gone (their product was deleted) maps to null.
 */
export async function renderDeployMessages(
  db: Db,
  messages: OutboxRow[],
  publicUrl: string,
  links: UnsubscribeLinks,
): Promise<Map<number, { text: string; html: string } | null>> {
  const itemIdsOf = new Map(messages.map((m) => [m.id, JSON.parse(m.item_ids) as number[]]));
  const deploys = new Map(
    (await findDeploysByIds(db, [...new Set(messages.flatMap((m) => (m.deploy_id === null ? [] : [m.deploy_id])))])).map((d) => [d.id, d]),
  );
  const deployers = new Map((await findUsersByIds(db, [...deploys.values()].map((d) => d.user_id))).map((u) => [u.id, u]));
  const products = new Map<number, ProductRow | undefined>();
  for (const productId of new Set([...deploys.values()].map((d) => d.product_id))) products.set(productId, await findProduct(db, productId));
  const items = new Map((await findItemsByIds(db, [...itemIdsOf.values()].flat())).map((i) => [i.id, i]));

  const rendered = new Map<number, { text: string; html: string } | null>();
  for (const message of messages) {
    const deploy = message.deploy_id === null ? undefined : deploys.get(message.deploy_id);
    const product = deploy && products.get(deploy.product_id);
    const deployer = deploy && deployers.get(deploy.user_id);
    const mine = itemIdsOf
      .get(message.id)!
      .flatMap((id) => items.get(id) ?? [])
      .sort((a, b) => a.number - b.number);
    rendered.set(
      message.id,
      deploy && product && deployer && mine.length
        ? renderDeployEmail({
            product,
            deploy,
            deployer,
            items: mine,
            subject: message.subject,
            unsubscribeUrl: links.url(message.message_id),
            publicUrl,
          })
        : null,
    );
  }
  return rendered;
}
