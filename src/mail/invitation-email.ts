import type { InvitationRow, ProductRow, UserRow } from '../db/schema.js';
import { escapeHtml } from '../http/html.js';
import { fullName } from '../users/index.js';
import { oneLine, quotedName, readableTime } from './format.js';

/** `Ada Lovelace invites you to “World Domination” on Shiplog`: the name the inviter chose, quoted and shortened. */
export function invitationSubject(product: ProductRow, inviter: UserRow): string {
  return oneLine(`${fullName(inviter)} invites you to ${quotedName(product.name)} on Shiplog`);
}

export interface InvitationMessageParts {
  invitation: InvitationRow;
  product: ProductRow;
  inviter: UserRow;
  subject: string;
  acceptUrl: string;
}

/** The style of a message's closing words: small and grey. */
const FOOTNOTE_STYLE = 'color:#595959;font-size:12px;margin-top:24px';

/**
 * The text and HTML of an invitation: who invites whom to what, the link and how long it works,
 * and that nothing happens without accepting. Nothing the inviter typed about the recipient
 * (names) appears: only the product's name, quoted and shortened (quotedName), and the inviter's own.
 */
export function renderInvitationEmail(parts: InvitationMessageParts): { text: string; html: string } {
  const { invitation, product, inviter, subject, acceptUrl } = parts;
  const who = `${fullName(inviter)} (${inviter.email})`;
  const role = invitation.admin === 1 ? ' as an admin' : '';
  const name = quotedName(product.name);
  const until = readableTime(invitation.expires_at);
  const text = [
    `${who} invites you to join the product ${name} on Shiplog${role}.`,
    '',
    `Accept the invitation (the link works until ${until}):`,
    acceptUrl,
    '',
    'If you have no Shiplog account yet, accepting creates one for this address and shows you its',
    'API key once.',
    '',
    '-- ',
    `Nothing happens unless you accept: until then you are not a member of ${name},`,
    'cannot be assigned work there and get no mail about it. If you did not expect this, ignore it.',
    '',
  ].join('\n');
  const [whoHtml, nameHtml] = [escapeHtml(who), escapeHtml(name)];
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;color:#222;line-height:1.4">
<p><strong>${whoHtml}</strong> invites you to join the product <strong>${nameHtml}</strong> on Shiplog${role}.</p>
<p><a href="${escapeHtml(acceptUrl)}">See and accept the invitation</a> (the link works until ${escapeHtml(until)}).</p>
<p>If you have no Shiplog account yet, accepting creates one for this address and shows you its API key once.</p>
<p style="${FOOTNOTE_STYLE}">Nothing happens unless you accept: until then you are not a member of ${nameHtml},
cannot be assigned work there and get no mail about it. If you did not expect this, ignore it.</p>
</body></html>
`;
  return { text, html };
}
