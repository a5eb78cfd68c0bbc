import type { ProductRow } from '../db/schema.js';
import { renderInvitationEmail, type MessageRenderer, type UnsubscribeLinks } from '../mail/index.js';
import { findProduct } from '../products/index.js';
import { findUsersByIds } from '../users/index.js';
import { currentTime } from '../time.js';
import { invitationUrl } from './links.js';
import { findInvitationsByIds } from './repository.js';

/**
 * Invitation messages, rendered when they are sent from the invitation as it is then. A message
 * whose invitation is gone (its product was deleted) or was accepted meanwhile maps to null.
 */
export function invitationMessageRenderer(links: UnsubscribeLinks): MessageRenderer {
  return async (db, messages) => {
    const ids = messages.flatMap((m) => (m.invitation_id === null ? [] : [m.invitation_id]));
    const invitations = new Map((await findInvitationsByIds(db, ids)).map((i) => [i.id, i]));
    const inviters = new Map(
      (
        await findUsersByIds(
          db,
          [...invitations.values()].map((i) => i.invited_by_id),
        )
      ).map((u) => [u.id, u]),
    );
    const products = new Map<number, ProductRow | undefined>();
    for (const productId of new Set([...invitations.values()].map((i) => i.product_id)))
      products.set(productId, await findProduct(db, productId));
    return new Map(
      messages.map((message) => {
        const invitation = message.invitation_id === null ? undefined : invitations.get(message.invitation_id);
        const product = invitation && products.get(invitation.product_id);
        const inviter = invitation && inviters.get(invitation.invited_by_id);
        // A cancelled invitation (its end moved to then) is not sent.
        const open =
          invitation &&
          product &&
          inviter &&
          invitation.accepted_at === null &&
          Date.parse(invitation.expires_at) > currentTime().getTime();
        return [
          message.id,
          open
            ? renderInvitationEmail({
                invitation,
                product,
                inviter,
                subject: message.subject,
                acceptUrl: invitationUrl(links, invitation),
              })
            : null,
        ];
      }),
    );
  };
}
