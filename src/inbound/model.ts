/**
 * What inbound mail is sent to, and which of it is a person's: the pure rules, with no database.
 */

/** The forms of an item's addresses (items/present.ts and mail/reply-address.ts make them). */
const ITEM_ADDRESS = /^(discussion|files)-(\d{1,15})$/;
const SIGNED_ADDRESS = /^discussion-\d{1,15}-\d{1,15}-[0-9a-f]{20}$/;

/** An address of the mail domain in a form Shiplog gives out (signed or not, its signature unchecked). */
export type AddressForm = { kind: 'signed' } | { kind: 'discussion' | 'files'; itemId: number };

/**
 * The form of an address, if it is one Shiplog gives out at its mail domain: what the SMTP listener
 * accepts at RCPT TO. Whether a signature holds or an item exists is decided with the message.
 */
export function addressForm(address: string, mailDomain: string): AddressForm | undefined {
  const at = address.lastIndexOf('@');
  if (at < 1 || address.slice(at + 1).toLowerCase() !== mailDomain.toLowerCase()) return undefined;
  const local = address.slice(0, at).toLowerCase();
  if (SIGNED_ADDRESS.test(local)) return { kind: 'signed' };
  const match = ITEM_ADDRESS.exec(local);
  return match ? { kind: match[1] as 'discussion' | 'files', itemId: Number(match[2]) } : undefined;
}

/**
 * Why a message was refused. The first three are refused to the mail system (the SMTP dialogue or
 * the pipe's exit status), whose bounce tells the sender; Shiplog explains the others itself.
 */
export type RefusalReason =
  | 'not_shiplog'
  | 'too_large'
  | 'malformed'
  | 'unknown_address'
  | 'not_member'
  | 'empty'
  | 'too_long'
  | 'file_refused';

/** The refusals the mail system reports (a 5xx answer, or the pipe's exit status); no explanation of Shiplog's. */
export const REFUSED_TO_MAIL_SYSTEM: ReadonlySet<RefusalReason> = new Set(['not_shiplog', 'too_large', 'malformed']);

/** A header as mailparser gives it: a string, a structured value, or a list of them. */
type HeaderValue = unknown;

/** The header's value as text (a structured one by its `value` or `text`), lower case and trimmed. */
function headerText(value: HeaderValue): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value.trim().toLowerCase();
  if (Array.isArray(value)) return value.map(headerText).join(' ');
  const v = value as { value?: unknown; text?: unknown };
  if (typeof v.value === 'string') return v.value.trim().toLowerCase();
  if (typeof v.text === 'string') return v.text.trim().toLowerCase();
  return String(value).toLowerCase();
}

/** What the automation rules read of a message: its headers (names in lower case) and its senders. */
export interface Senders {
  headers: Map<string, HeaderValue>;
  /** The envelope sender (MAIL FROM, or the Return-Path header): '' for the null sender `<>`, undefined if unknown. */
  envelope: string | undefined;
  /** The From address, if there is one. */
  from: string | undefined;
}

const localPart = (address: string | undefined): string =>
  address === undefined ? '' : address.slice(0, Math.max(0, address.lastIndexOf('@'))).toLowerCase();
const domainOf = (address: string | undefined): string =>
  address === undefined ? '' : address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/**
 * Why a message was sent by a machine rather than a person (bounces, auto-replies, list copies,
 * Shiplog's own mail coming back), or undefined for a person's. Such mail creates nothing and is
 * never answered: answering is how mail loops begin (RFC 3834).
 */
export function automatedBecause(m: Senders, mailDomain: string): string | undefined {
  const h = (name: string) => headerText(m.headers.get(name));
  if (m.envelope === '') return 'null envelope sender (a bounce)';
  const autoSubmitted = h('auto-submitted');
  if (autoSubmitted && autoSubmitted.split(/[;\s]/)[0] !== 'no') return `Auto-Submitted: ${autoSubmitted}`;
  if (['bulk', 'junk', 'list'].includes(h('precedence'))) return `Precedence: ${h('precedence')}`;
  for (const name of ['x-autoreply', 'x-autorespond', 'x-autoresponder', 'list-id'])
    if (m.headers.has(name)) return `${name} header`;
  if (h('content-type').startsWith('multipart/report')) return 'a delivery or disposition report';
  for (const address of [m.envelope, m.from]) {
    if (/^(mailer-daemon|mail-daemon)$/.test(localPart(address))) return 'sent by a mailer daemon';
    if (domainOf(address) === mailDomain.toLowerCase()) return "Shiplog's own mail";
  }
  return undefined;
}

/**
 * Whether a person's refused message may be answered: not when it asks for no automatic answers
 * (X-Auto-Response-Suppress) or comes from an address nobody reads.
 */
export function answerable(m: Senders): boolean {
  if (m.headers.has('x-auto-response-suppress')) return false;
  const to = m.envelope ?? m.from;
  return to !== undefined && !/^(no-?reply|do-?not-?reply)([+.-]|$)/.test(localPart(to));
}

/** The text of a reply as a comment: line ends as LF, no control characters but tab and line feed, trimmed. */
export function commentText(visible: string): string {
  return (
    visible
      .replace(/\r\n?/g, '\n')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
      .trim()
  );
}
