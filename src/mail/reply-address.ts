import crypto from 'node:crypto';
import type { UnsubscribeLinks } from './unsubscribe.js';

/** Hex digits of the signature an address carries: 80 bits, in a local part any mail system keeps. */
const SIGNATURE_LENGTH = 20;
const LOCAL_PART = /^discussion-(\d{1,15})-(\d{1,15})-([0-9a-f]{20})$/;

/**
 * The address a person's replies to an item's mail go to: the item's discussion address, signed
 * for that person (`discussion-<item>-<user>-<signature>@<mail domain>`). It names the item and the
 * person, and only this installation's key makes the signature, so it can neither be forged nor
 * moved to another item or person. Lower case hex only: some mail systems change the case of
 * local parts.
 */
export class ReplyAddresses {
  constructor(
    private readonly links: UnsubscribeLinks,
    readonly mailDomain: string,
  ) {}

  private signature(itemId: number, userId: number): string {
    return Buffer.from(this.links.sign('reply', `${itemId}.${userId}`), 'base64url')
      .toString('hex')
      .slice(0, SIGNATURE_LENGTH);
  }

  address(itemId: number, userId: number): string {
    return `discussion-${itemId}-${userId}-${this.signature(itemId, userId)}@${this.mailDomain}`;
  }

  /** The item and person an address was made for here, or undefined (another domain, forged, malformed). */
  open(address: string): { itemId: number; userId: number } | undefined {
    const at = address.lastIndexOf('@');
    if (at < 0 || address.slice(at + 1).toLowerCase() !== this.mailDomain.toLowerCase()) return undefined;
    const match = LOCAL_PART.exec(address.slice(0, at).toLowerCase());
    if (!match) return undefined;
    const itemId = Number(match[1]);
    const userId = Number(match[2]);
    const expected = Buffer.from(this.signature(itemId, userId));
    return crypto.timingSafeEqual(expected, Buffer.from(match[3])) ? { itemId, userId } : undefined;
  }
}

/** The Message-ID every message about an item refers to, so that mail clients put them in one thread. */
export const itemThreadId = (itemId: number, mailDomain: string): string => `<item-${itemId}@${mailDomain}>`;
