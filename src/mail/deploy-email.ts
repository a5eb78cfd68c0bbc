import MarkdownIt from 'markdown-it';
import type { DeployRow, ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { statusName } from '../items/model.js';
import type { Urls } from '../scope.js';

export interface DeployEmail {
  subject: string;
  text: string;
  html: string;
}

// Raw HTML in notes is shown as text, never passed through; links are limited to safe schemes.
const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true });

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

/** `"First Last" <email>`, quoted so that any name is a valid header. */
export function mailbox(user: UserRow): string {
  const name = `${user.first_name} ${user.last_name}`.trim().replace(/[\\"]/g, '\\$&').replace(/[\r\n]+/g, ' ');
  return name ? `"${name}" <${user.email}>` : user.email;
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\t]+/g, ' ').trim();
}

function fullName(user: UserRow): string {
  return `${user.first_name} ${user.last_name}`.trim() || user.email;
}

/** `Sun, 22 Nov 2026 10:04 UTC` from the interface's timestamp form. */
function readableTime(timestamp: string): string {
  return new Date(timestamp).toUTCString().replace(/:\d\d GMT$/, ' UTC');
}

/**
 * The messages of one deploy: the returned function renders the one a follower gets, with only
 * that follower's items, the version, the notes, who deployed and when, and a link to stop
 * following these items. What all followers share (the notes' HTML) is rendered once.
 */
export function deployEmailRenderer(
  product: ProductRow,
  deploy: DeployRow,
  deployer: UserRow,
  urls: Urls,
): (items: ItemRow[], unsubscribeUrl: string) => DeployEmail {
  const notesHtml = deploy.notes ? markdown.render(deploy.notes) : '';
  return (items, unsubscribeUrl) => renderDeployEmail(product, deploy, deployer, items, urls, unsubscribeUrl, notesHtml);
}

function renderDeployEmail(
  product: ProductRow,
  deploy: DeployRow,
  deployer: UserRow,
  items: ItemRow[],
  urls: Urls,
  unsubscribeUrl: string,
  notesHtml: string,
): DeployEmail {
  const first = items[0];
  const more = items.length > 1 ? ` and ${items.length - 1} more` : '';
  const subject = oneLine(`[${product.name}] Deployed to ${deploy.environment}: #${first.number} ${first.title}${more}`);
  const who = fullName(deployer);
  const when = readableTime(deploy.created_at);
  const version = deploy.version ? `version ${deploy.version} ` : '';
  const itemUrl = (item: ItemRow) => `${urls.publicUrl}/i/${item.product_id}/${item.number}/`;
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
${notesHtml ? `<h3 style="font-size:14px;margin:16px 0 4px">Notes</h3>\n<div>${notesHtml}</div>` : ''}
<p style="color:#888;font-size:12px;margin-top:24px">You receive this because you follow these items in ${escapeHtml(product.name)}.
<a href="${escapeHtml(unsubscribeUrl)}">Stop following them</a>.</p>
</body></html>
`;
  return { subject, text, html };
}
