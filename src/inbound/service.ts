import type { AddressObject, ParsedMail } from 'mailparser';
import { addAttachment, type AttachmentLimits, type NewAttachment } from '../attachments/index.js';
import { addComment, CONVERSATION_LIMITS } from '../conversation/index.js';
import type { Db, Trx } from '../db/connection.js';
import { storableId, type ItemRow, type UserRow } from '../db/schema.js';
import { NotFoundError, PayloadTooLargeError } from '../errors.js';
import { findItemsByIds } from '../items/index.js';
import { queueRefusalExplanation, type ReplyAddresses } from '../mail/index.js';
import { findMembership, findProduct } from '../products/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { currentTime, formatTimestamp } from '../time.js';
import { findUserByEmail, findUserById } from '../users/index.js';
import {
  addressForm,
  answerable,
  automatedBecause,
  commentText,
  REFUSED_TO_MAIL_SYSTEM,
  type RefusalReason,
  type Senders,
} from './model.js';
import { claimExplanation, insertRefusal, noteReceived } from './repository.js';

/** What receiving mail needs of the installation. */
export interface Inbound {
  db: Db;
  replies: ReplyAddresses;
  urls: Urls;
  /** The largest message taken, whole, in bytes. */
  maxBytes: number;
  attachments: AttachmentLimits;
}

/** What the mail system says of a message besides the message itself. */
export interface Envelope {
  /** RCPT TO, in order; none (a pipe given no address): the message's own headers are read. */
  recipients: string[];
  /** MAIL FROM: '' for the null sender `<>`; undefined (a pipe) to read the Return-Path header. */
  sender?: string;
}

export type Outcome =
  | { status: 'accepted'; recipient: string; itemId: number; commentId: number | undefined; files: number }
  | { status: 'ignored'; recipient: string; why: string }
  | { status: 'refused'; reason: RefusalReason; message: string; explained: boolean };

/** A refusal of the message, with the sentence its sender is told. */
class Refusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** How long after an explanation to an address the next may be sent. */
export const EXPLAIN_EVERY_MS = 3600_000;

// HTML past a megabyte is not made into text (html-to-text holds the event loop a second or more):
// such a message brings its files only.
const PARSER_OPTIONS = {
  skipImageLinks: true,
  skipTextToHtml: true,
  keepCidLinks: true,
  maxHtmlLengthToParse: 1_000_000,
} as const;

/**
 * How much of a message's text the reply parser reads: a reply's own text comes first and a comment
 * holds at most 64 KiB of it, while the quoted thread below can run to megabytes that the parser
 * would take seconds over, holding the event loop.
 */
const REPLY_SCAN_CHARS = 256 * 1024;

/**
 * Takes one inbound message (RFC 5322 bytes) sent to an item's addresses: a reply to the signed
 * address of a comment's mail becomes that person's comment, with quoted text and signature
 * removed, and its files the item's attachments; mail to `files-<id>@` gives attachments only; mail
 * to `discussion-<id>@` is a comment of the member whose account has the From address. Everything
 * is written in one transaction, as the person, with the followers' mail and webhooks of any
 * comment. Bounces and auto-replies are ignored. A refused message creates nothing, and its sender,
 * if a person, is told why by mail at most once an hour (see model.ts for which refusals the mail
 * system reports instead). Throws only what the database throws: the caller answers "try later".
 */
export async function receiveMessage(inbound: Inbound, raw: Buffer, envelope: Envelope): Promise<Outcome> {
  const domain = inbound.urls.mailDomain;
  if (raw.length > inbound.maxBytes) return refused('too_large', tooLarge(inbound.maxBytes));
  if (envelope.recipients.length > 0 && !shiplogRecipient(envelope.recipients, domain))
    return refused('not_shiplog', notShiplog(envelope.recipients[0]));
  const parsed = await parse(raw);
  if (!parsed) return refused('malformed', 'The message could not be read as mail (RFC 5322).');
  const recipients = envelope.recipients.length > 0 ? envelope.recipients : headerRecipients(parsed);
  const recipient = shiplogRecipient(recipients, domain);
  if (!recipient) return refused('not_shiplog', notShiplog(recipients[0]));
  const senders = sendersOf(parsed, envelope);
  const automated = automatedBecause(senders, domain);
  if (automated) return { status: 'ignored', recipient, why: automated };
  try {
    return await inbound.db.transaction().execute((trx) => take(trx, inbound, recipient, parsed, senders));
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    const explained = answerable(senders) && (await explain(inbound, err, { recipient, parsed, senders }));
    return { status: 'refused', reason: err.reason, message: err.message, explained };
  }
}

const refused = (reason: RefusalReason, message: string): Outcome => ({
  status: 'refused',
  reason,
  message,
  explained: false,
});

const tooLarge = (max: number) =>
  `The message is larger than ${Math.round(max / 1024 / 1024)} MiB, the most Shiplog takes.`;
const notShiplog = (address: string | undefined) =>
  `${address ? `<${address}>` : 'The message'} is not an address of an item in Shiplog.`;

function shiplogRecipient(recipients: string[], domain: string): string | undefined {
  return recipients.find((address) => addressForm(address, domain) !== undefined);
}

async function parse(raw: Buffer): Promise<ParsedMail | undefined> {
  try {
    // Loaded with the first message: a server that takes no mail never reads these packages.
    const { simpleParser } = await import('mailparser');
    const parsed = await simpleParser(raw, PARSER_OPTIONS);
    return parsed.headers.size > 0 ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The addresses of a header (To, Cc, Delivered-To...), in order. */
function addressesOf(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value.split(',').map((a) => a.trim().replace(/^<|>$/g, ''));
  const objects = Array.isArray(value) ? (value as AddressObject[]) : [value as AddressObject];
  return objects.flatMap((o) => (o.value ?? []).flatMap((a) => (a.address ? [a.address] : [])));
}

/** A pipe given no address: where the message went, by the mail system's headers first, then the sender's. */
function headerRecipients(parsed: ParsedMail): string[] {
  return ['delivered-to', 'x-original-to', 'to', 'cc'].flatMap((name) => addressesOf(parsed.headers.get(name)));
}

function sendersOf(parsed: ParsedMail, envelope: Envelope): Senders {
  let sender = envelope.sender;
  if (sender === undefined && parsed.headers.has('return-path')) {
    const [address] = addressesOf(parsed.headers.get('return-path'));
    sender = address ?? '';
  }
  return {
    headers: parsed.headers,
    envelope: sender?.toLowerCase(),
    from: parsed.from?.value[0]?.address?.toLowerCase(),
  };
}

/** Writes what the message brings to its item, or throws a Refusal (the transaction then leaves nothing). */
async function take(
  trx: Trx,
  inbound: Inbound,
  recipient: string,
  parsed: ParsedMail,
  senders: Senders,
): Promise<Outcome> {
  const { scope, item, filesOnly } = await targetOf(trx, inbound, recipient, senders);
  if (!(await firstCopy(trx, item, parsed)))
    return { status: 'ignored', recipient, why: 'a copy of a message the item took already' };
  const files = filesOf(parsed);
  const text = (parsed.text ?? '').slice(0, REPLY_SCAN_CHARS);
  const body = filesOnly ? '' : commentText(await visibleText(text));
  if (files.length === 0 && (filesOnly || body === ''))
    throw new Refusal('empty', filesOnly ? 'It had no attached files.' : 'It had no text of its own to add.');
  if (Buffer.byteLength(body, 'utf8') > CONVERSATION_LIMITS.body)
    throw new Refusal('too_long', `Its text is longer than ${CONVERSATION_LIMITS.body} bytes, the most of a comment.`);
  try {
    for (const file of files) await addAttachment(trx, scope, item.number, file, inbound.attachments);
    const comment = body ? await addComment(trx, scope, item.number, { body, via: 'mail' }, inbound.urls) : undefined;
    return { status: 'accepted', recipient, itemId: item.id, commentId: comment?.id, files: files.length };
  } catch (err) {
    if (err instanceof PayloadTooLargeError) throw new Refusal('file_refused', `A file was refused: ${err.message}`);
    if (err instanceof NotFoundError) throw unknownAddress();
    throw err;
  }
}

/** How long an item remembers the Message-IDs it took: far longer than any relay retries. */
const REMEMBER_RECEIVED_MS = 30 * 24 * 3600_000;

/**
 * Whether this is the first copy of the message the item takes: a relay that lost our answer sends
 * it again. A message without a Message-ID cannot be told apart from another, and is taken.
 */
async function firstCopy(trx: Trx, item: ItemRow, parsed: ParsedMail): Promise<boolean> {
  const messageId = parsed.messageId?.trim();
  if (!messageId) return true;
  const now = currentTime();
  return noteReceived(trx, {
    itemId: item.id,
    messageId: messageId.slice(0, 998),
    at: formatTimestamp(now),
    forgetBefore: formatTimestamp(new Date(now.getTime() - REMEMBER_RECEIVED_MS)),
  });
}

/** The text a reply adds: without the message it quotes and the writer's signature. */
async function visibleText(text: string): Promise<string> {
  const { default: EmailReplyParser } = await import('email-reply-parser');
  return new EmailReplyParser().read(text).getVisibleText();
}

const unknownAddress = () =>
  new Refusal('unknown_address', 'The address is not, or no longer, one of an item in Shiplog.');

/** The item an address names, and the member the message is from (a Refusal when either is missing). */
async function targetOf(
  trx: Trx,
  inbound: Inbound,
  recipient: string,
  senders: Senders,
): Promise<{ scope: ProductScope; item: ItemRow; filesOnly: boolean }> {
  const form = addressForm(recipient, inbound.urls.mailDomain)!;
  let itemId: number;
  let user: UserRow | undefined;
  if (form.kind === 'signed') {
    const opened = inbound.replies.open(recipient);
    if (!opened || !storableId(opened.itemId) || !storableId(opened.userId)) throw unknownAddress();
    itemId = opened.itemId;
    user = await findUserById(trx, opened.userId);
  } else {
    itemId = form.itemId;
    user = senders.from ? await findUserByEmail(trx, senders.from) : undefined;
  }
  const [item] = storableId(itemId) ? await findItemsByIds(trx, [itemId]) : [];
  const product = item && (await findProduct(trx, item.product_id));
  if (!item || !product) throw unknownAddress();
  const membership = user && (await findMembership(trx, product.id, user.id));
  if (!user || !membership)
    throw new Refusal(
      'not_member',
      form.kind === 'signed'
        ? 'The person this address was made for is no longer a member of the product the item is in.'
        : `No member of the product the item is in has the address ${senders.from ?? '(none)'} in Shiplog.`,
    );
  return { scope: { user, product, admin: membership.admin }, item, filesOnly: form.kind === 'files' };
}

/** The message's files: its attachments, without the images an HTML body shows inline (logos of signatures). */
function filesOf(parsed: ParsedMail): NewAttachment[] {
  return parsed.attachments
    .filter((a) => !a.related)
    .map((a) => ({ name: a.filename ?? 'attachment', contentType: a.contentType, bytes: a.content }));
}

/**
 * Sends the sender one explanation of a refusal, unless they were sent one within the hour
 * (recorded in the database, so every instance and `shiplog mail receive` agree). Returns whether
 * it was queued.
 */
async function explain(
  inbound: Inbound,
  refusal: Refusal,
  message: { recipient: string; parsed: ParsedMail; senders: Senders },
): Promise<boolean> {
  if (REFUSED_TO_MAIL_SYSTEM.has(refusal.reason)) return false;
  const address = message.senders.envelope || message.senders.from;
  if (!address) return false;
  const now = currentTime();
  const since = formatTimestamp(new Date(now.getTime() - EXPLAIN_EVERY_MS));
  return inbound.db.transaction().execute(async (trx) => {
    if (!(await claimExplanation(trx, address, since, formatTimestamp(now)))) return false;
    const subject = (message.parsed.subject ?? '')
      .replace(/[\r\n\t]+/g, ' ')
      .trim()
      .slice(0, 200);
    const row = await insertRefusal(trx, {
      address,
      reason: refusal.reason,
      detail: refusal.message,
      recipient: message.recipient.slice(0, 320),
      subject,
      in_reply_to: messageIdOf(message.parsed),
      created_at: formatTimestamp(now),
    });
    const about = subject ? `: ${subject}` : '';
    await queueRefusalExplanation(
      trx,
      { refusalId: row.id, address, subject: `Not added to Shiplog${about}` },
      inbound.urls.mailDomain,
      now,
    );
    return true;
  });
}

/** The refused message's Message-ID, to answer it by, when it is one a header can carry as it is. */
function messageIdOf(parsed: ParsedMail): string | null {
  const id = parsed.messageId?.trim();
  return id && /^<[\x21-\x3b\x3d\x3f-\x7e]{1,250}>$/.test(id) ? id : null;
}
