import type { Db } from '../db/connection.js';
import type { InvitationRow, OutboxRow, ProductRow, UserRow } from '../db/schema.js';
import { invitationUrl } from '../invitations/links.js';
import { findInvitationsByIds } from '../invitations/repository.js';
import { findProduct } from '../products/repository.js';
import { findUsersByIds } from '../users/repository.js';
import { escapeHtml, fullName, oneLine, readableTime } from './deploy-email.js';
import type { UnsubscribeLinks } from './unsubscribe.js';

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

/**
 * The bodies of queued invitations, rendered when they are sent, from the invitation as it is
 * then. A message whose invitation is gone (its product was deleted) or was accepted meanwhile
 * maps to null.
 */
export async function renderInvitationMessages(
  db: Db,
  messages: OutboxRow[],
  links: UnsubscribeLinks,
): Promise<Map<number, { text: string; html: string } | null>> {
  const invitations = new Map(
    (await findInvitationsByIds(db, messages.flatMap((m) => (m.invitation_id === null ? [] : [m.invitation_id])))).map((i) => [i.id, i]),
  );
  const inviters = new Map((await findUsersByIds(db, [...invitations.values()].map((i) => i.invited_by_id))).map((u) => [u.id, u]));
  const products = new Map<number, ProductRow | undefined>();
  for (const productId of new Set([...invitations.values()].map((i) => i.product_id))) products.set(productId, await findProduct(db, productId));

  const rendered = new Map<number, { text: string; html: string } | null>();
  for (const message of messages) {
    const invitation = message.invitation_id === null ? undefined : invitations.get(message.invitation_id);
    const product = invitation && products.get(invitation.product_id);
    const inviter = invitation && inviters.get(invitation.invited_by_id);
    rendered.set(
      message.id,
      invitation && product && inviter && invitation.accepted_at === null
        ? renderInvitationEmail({ invitation, product, inviter, subject: message.subject, acceptUrl: invitationUrl(links, invitation) })
        : null,
    );
  }
  return rendered;
}
