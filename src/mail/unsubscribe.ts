import crypto from 'node:crypto';

/**
 * Signed one-click unsubscribe links (RFC 8058). A link names one outbox message; the message row
 * says whom it went to and about which items, so a link can neither be forged nor pointed at
 * another user or item: only the signature over the Message-ID makes it valid.
 */
export class UnsubscribeLinks {
  constructor(
    private readonly publicUrl: string,
    private readonly key: string,
  ) {}

  private sign(messageId: string): string {
    return crypto.createHmac('sha256', this.key).update(`unsubscribe\0${messageId}`).digest('base64url');
  }

  token(messageId: string): string {
    return `${Buffer.from(messageId, 'utf8').toString('base64url')}.${this.sign(messageId)}`;
  }

  url(messageId: string): string {
    return `${this.publicUrl}/unsubscribe/${this.token(messageId)}`;
  }

  /** The Message-ID a token was made for, or undefined when it was not made here. */
  verify(token: string): string | undefined {
    const [encoded, signature, extra] = token.split('.');
    if (!encoded || !signature || extra !== undefined) return undefined;
    const messageId = Buffer.from(encoded, 'base64url').toString('utf8');
    const expected = Buffer.from(this.sign(messageId));
    const given = Buffer.from(signature);
    return expected.length === given.length && crypto.timingSafeEqual(expected, given) ? messageId : undefined;
  }
}
