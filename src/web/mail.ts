import { renderSigninEmail, type MessageRenderer } from '../mail/index.js';
import { nowTimestamp } from '../time.js';
import { findSigninLinksByMessageIds } from './repository.js';
import { linkToken, signInUrl } from './service.js';

/**
 * Sign-in messages, rendered when they are sent: the link of the message, its token made again
 * from the link's salt. A link that was used or has expired meanwhile maps to null (given up).
 */
export function signinMessageRenderer(publicUrl: string, signinKey: string): MessageRenderer {
  return async (db, messages) => {
    const links = new Map(
      (
        await findSigninLinksByMessageIds(
          db,
          messages.map((m) => m.message_id),
        )
      ).map((l) => [l.message_id, l]),
    );
    const now = nowTimestamp();
    return new Map(
      messages.map((message) => {
        const link = links.get(message.message_id);
        const usable = link && link.user_id === message.user_id && link.used_at === null && link.expires_at > now;
        return [
          message.id,
          usable
            ? renderSigninEmail({
                signInUrl: signInUrl(publicUrl, linkToken(signinKey, link.token_salt)),
                expiresAt: link.expires_at,
              })
            : null,
        ];
      }),
    );
  };
}
