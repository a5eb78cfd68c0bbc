import crypto from 'node:crypto';

/**
 * Whether messages of a kind go to followers about their items (deploys, rollbacks, comments) and
 * so carry an unsubscribe link; others go to an address once (invitations, sign-in links, a block
 * told to the blocked item's assignee).
 */
export function hasUnsubscribeLink(kind: string): boolean {
  return kind === 'deploy' || kind === 'rollback' || kind === 'comment';
}

/**
 * Signed one-click unsubscribe links (RFC 8058). A link names one outbox message; the message row
 * says whom it went to and about which items, so a link can neither be forged nor pointed at
 * another user or item: only the signature over the Message-ID makes it valid.
 *
 * The same key signs the service's other links (invitations), each for its own purpose, so a
 * token made for one purpose never passes for another.
 */
export class UnsubscribeLinks {
  constructor(
    private readonly publicUrl: string,
    private readonly key: string,
  ) {}

  /** The signature of `payload` for `purpose` (see ReplyAddresses, which carries it in an address). */
  sign(purpose: string, payload: string): string {
    return crypto.createHmac('sha256', this.key).update(`${purpose}\0${payload}`).digest('base64url');
  }

  /** A URL-safe token carrying `payload`, signed for `purpose`. */
  seal(purpose: string, payload: string): string {
    return `${Buffer.from(payload, 'utf8').toString('base64url')}.${this.sign(purpose, payload)}`;
  }

  /** The payload of a token sealed here for `purpose`, or undefined. */
  open(purpose: string, token: string): string | undefined {
    const [encoded, signature, extra] = token.split('.');
    if (!encoded || !signature || extra !== undefined) return undefined;
    const payload = Buffer.from(encoded, 'base64url').toString('utf8');
    const expected = Buffer.from(this.sign(purpose, payload));
    const given = Buffer.from(signature);
    return expected.length === given.length && crypto.timingSafeEqual(expected, given) ? payload : undefined;
  }

  /** An absolute URL of this service. */
  absolute(path: string): string {
    return `${this.publicUrl}${path}`;
  }

  token(messageId: string): string {
    return this.seal('unsubscribe', messageId);
  }

  url(messageId: string): string {
    return this.absolute(`/unsubscribe/${this.token(messageId)}`);
  }

  /** The Message-ID a token was made for, or undefined when it was not made here. */
  verify(token: string): string | undefined {
    return this.open('unsubscribe', token);
  }
}
