import { attachmentLimits } from '../attachments/index.js';
import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import { ReplyAddresses, UnsubscribeLinks } from '../mail/index.js';
import { sharedSecret } from '../settings.js';
import { receiveMessage, type Inbound, type Outcome } from './service.js';

/** The exit statuses of sysexits.h that a pipe transport (Postfix pipe(8), Exim) reads. */
export const SYSEXITS = { ok: 0, dataErr: 65, noUser: 67, software: 70, tempFail: 75 } as const;

/**
 * Reads one message from a stream, up to `max` bytes and one more: a longer one is not read to its
 * end (the caller refuses it by its length, before parsing).
 */
export async function readBounded(input: NodeJS.ReadableStream, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    chunks.push(bytes);
    length += bytes.length;
    if (length > max) break;
  }
  return Buffer.concat(chunks);
}

/**
 * The exit status and the line for the mail system of an outcome. Postfix puts the line into the
 * bounce it sends; one starting with an enhanced status code (5.1.1) is used as that status.
 * What Shiplog explains to the sender itself (or ignores) exits 0, so that no bounce follows.
 */
export function exitOf(outcome: Outcome): { code: number; line: string } {
  if (outcome.status === 'accepted')
    return { code: SYSEXITS.ok, line: `Taken: item ${outcome.itemId}, ${outcome.files} file(s).` };
  if (outcome.status === 'ignored') return { code: SYSEXITS.ok, line: `Ignored: ${outcome.why}.` };
  switch (outcome.reason) {
    case 'not_shiplog':
      return { code: SYSEXITS.noUser, line: `5.1.1 ${outcome.message}` };
    case 'too_large':
      return { code: SYSEXITS.dataErr, line: `5.3.4 ${outcome.message}` };
    case 'malformed':
      return { code: SYSEXITS.dataErr, line: `5.6.0 ${outcome.message}` };
    default:
      return {
        code: SYSEXITS.ok,
        line: `Not added (${outcome.reason}): ${outcome.message} ${outcome.explained ? 'The sender is told why.' : ''}`,
      };
  }
}

/**
 * `shiplog mail receive`: one message from a pipe transport, delivered to `recipients` (the
 * transport's ${recipient}; none: the message's headers say), taken as the SMTP listener takes it.
 * Throws what the database throws (the command exits 75, and the mail system tries again).
 */
export async function receiveFromPipe(
  db: Db,
  config: Config,
  input: NodeJS.ReadableStream,
  recipients: string[],
): Promise<{ code: number; line: string }> {
  const links = new UnsubscribeLinks(config.publicUrl, await sharedSecret(db, 'unsubscribe_key'));
  const inbound = inboundOf(db, config, links);
  const raw = await readBounded(input, inbound.maxBytes);
  return exitOf(await receiveMessage(inbound, raw, { recipients }));
}

/** What receiving mail needs, from the configuration: the same for the listener and the pipe. */
export function inboundOf(db: Db, config: Config, links: UnsubscribeLinks): Inbound {
  return {
    db,
    replies: new ReplyAddresses(links, config.mailDomain),
    urls: { publicUrl: config.publicUrl, mailDomain: config.mailDomain },
    maxBytes: config.mailInboundMaxMb * 1024 * 1024,
    attachments: attachmentLimits(config),
  };
}
