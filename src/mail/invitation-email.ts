import type { InvitationRow, ProductRow, UserRow } from '../db/schema.js';
import { escapeHtml } from '../http/html.js';
import { fullName } from '../users/index.js';
import { oneLine, readableTime } from './format.js';

/** `Ada Lovelace invites you to World Domination on Shiplog`. */
export function invitationSubject(product: ProductRow, inviter: UserRow): string {
  return oneLine(`${fullName(inviter)} invites you to ${product.name} on Shiplog`);
}

export interface InvitationMessageParts {
  invitation: InvitationRow;
  product: ProductRow;
  inviter: UserRow;
  subject: string;
  acceptUrl: string;
}

/**
 * The text and HTML of an invitation: who invites whom to what, the link and how long it works,
 * and that nothing happens without accepting. Nothing the inviter typed about the recipient
 * (names) appears: only the product's and the inviter's own names.
 */
export function renderInvitationEmail(parts: InvitationMessageParts): { text: string; html: string } {
  const { invitation, product, inviter, subject, acceptUrl } = parts;
  const who = `${fullName(inviter)} (${inviter.email})`;
  const role = invitation.admin === 1 ? ' as an admin' : '';
  const until = readableTime(invitation.expires_at);
  const text = [
    `${who} invites you to join ${oneLine(product.name)} on Shiplog${role}.`,
    '',
    `Accept the invitation (the link works until ${until}):`,
    acceptUrl,
    '',
    'If you have no Shiplog account yet, accepting creates one for this address and shows you its',
    'API key once.',
    '',
    '-- ',
    `Nothing happens unless you accept: until then you are not a member of ${oneLine(product.name)},`,
    'cannot be assigned work there and get no mail about it. If you did not expect this, ignore it.',
  ].join('\n') + '\n';
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;color:#222;line-height:1.4">
<p><strong>${escapeHtml(who)}</strong> invites you to join <strong>${escapeHtml(product.name)}</strong> on Shiplog${role}.</p>
<p><a href="${escapeHtml(acceptUrl)}">See and accept the invitation</a> (the link works until ${escapeHtml(until)}).</p>
<p>If you have no Shiplog account yet, accepting creates one for this address and shows you its API key once.</p>
<p style="color:#888;font-size:12px;margin-top:24px">Nothing happens unless you accept: until then you are not a member of ${escapeHtml(product.name)},
cannot be assigned work there and get no mail about it. If you did not expect this, ignore it.</p>
</body></html>
`;
  return { text, html };
}
