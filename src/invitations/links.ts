import type { InvitationRow } from '../db/schema.js';
import type { UnsubscribeLinks } from '../mail/index.js';

/**
 * Invitation links: the invitation's id and the moment the link stops working, signed with the
 * service's link key. A link cannot be forged, pointed at another invitation or made to last
 * longer; a re-sent invitation comes with a new link, and earlier links keep their own end.
 */
export function invitationUrl(links: UnsubscribeLinks, invitation: Pick<InvitationRow, 'id' | 'expires_at'>): string {
  return links.absolute(`/invitations/${links.seal('invitation', `${invitation.id} ${invitation.expires_at}`)}`);
}

/** What an invitation link names, or undefined when it was not made here. */
export function readInvitationToken(
  links: UnsubscribeLinks,
  token: string,
): { id: number; expiresAt: string } | undefined {
  const match = /^(\d{1,10}) (\S+)$/.exec(links.open('invitation', token) ?? '');
  return match ? { id: Number(match[1]), expiresAt: match[2] } : undefined;
}
