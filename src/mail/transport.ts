import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { OutboxRow } from '../db/schema.js';
import { PRIVATE_FILE_MODE, privateDirectory } from '../private-files.js';
import type { MessageBody } from './render.js';
import { hasUnsubscribeLink, type UnsubscribeLinks } from './unsubscribe.js';

/** Hands one composed message to the world; throws when it could not. */
export interface MailTransport {
  send(mail: nodemailer.SendMailOptions, outboxId: number): Promise<void>;
  /**
   * Gives up on connections that may be stuck: sends still running on them finish or fail on
   * their own, later sends use fresh ones. Called when a send missed its deadline.
   */
  reset(): void;
  close(): void;
}

/** Mail lines end in CRLF (RFC 5322), also inside the parts. */
const crlf = (s: string): string => s.replace(/\r?\n/g, '\r\n');

/**
 * The RFC 5322 message for an outbox row and its rendered bodies: plain text and HTML, the stored
 * Message-ID (the same on every attempt), and for mail to followers the one-click unsubscribe headers of
 * RFC 8058 (an invitation is a single message, not a subscription: ignoring it is enough).
 */
export function composeMessage(
  message: OutboxRow,
  body: MessageBody,
  from: string,
  links: UnsubscribeLinks,
): nodemailer.SendMailOptions {
  return {
    from,
    to: message.to_address,
    subject: message.subject,
    text: crlf(body.text),
    html: crlf(body.html),
    messageId: message.message_id,
    date: new Date(message.created_at),
    // Chosen here rather than by nodemailer scanning every body for the better fit: these bodies
    // are mostly ASCII, which quoted-printable leaves readable.
    textEncoding: 'quoted-printable',
    ...(body.replyTo ? { replyTo: body.replyTo } : {}),
    headers: {
      // A kind may say more precisely (an answer to a message is `auto-replied`, RFC 3834).
      'Auto-Submitted': 'auto-generated',
      ...body.headers,
      ...(hasUnsubscribeLink(message.kind) ? { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {}),
    },
    ...(hasUnsubscribeLink(message.kind) ? { list: { unsubscribe: links.url(message.message_id) } } : {}),
  };
}

/** Writes `data` to `file` so that after a crash it is either whole or absent, never half there. */
async function writeDurably(file: string, data: Buffer): Promise<void> {
  const tmp = `${file}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const handle = await fs.open(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    try {
      // A message may hold a live sign-in or invitation link: for the owner alone, whatever the umask.
      await handle.chmod(PRIVATE_FILE_MODE);
      await handle.writeFile(data);
      // On disk before the rename: otherwise a power loss can leave the new name on an empty file.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (err) {
    // A full disk: what was written of the message would only take more of the space.
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  // The rename itself is an entry in the directory, durable only once the directory is synced.
  const dir = await fs.open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Removes temporary files a crashed writer left behind; they never became messages. */
async function removeLeftovers(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await Promise.all(
    names.filter((n) => /\.eml\.[0-9a-f]+\.tmp$/.test(n)).map((n) => fs.rm(path.join(dir, n), { force: true })),
  );
}

/**
 * The embedded default: each message becomes `DATA_DIR/mail/<outbox id>.eml`, written under a
 * temporary name, flushed to disk and renamed, so a file is never half there and a retry rewrites
 * the same file. Temporary files left by a crash are removed when the transport starts (the data
 * directory belongs to one server).
 */
export function emlTransport(dataDir: string): MailTransport {
  const dir = path.join(dataDir, 'mail');
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  // Started at once; the first message waits for it so the sweep never meets a file of ours. A
  // leftover that cannot be removed harms nothing: mail goes on.
  const swept = removeLeftovers(dir).catch(() => {});
  return {
    async send(mail, outboxId) {
      await swept;
      const info = await composer.sendMail(mail);
      privateDirectory(dataDir);
      privateDirectory(dir);
      await writeDurably(path.join(dir, `${String(outboxId).padStart(8, '0')}.eml`), info.message as Buffer);
    },
    reset() {},
    close() {
      composer.close();
    },
  };
}

/**
 * Connection settings from an `smtp://` or `smtps://` URL. nodemailer reads a `url` option on its
 * own, but then drops every other option (pool, timeouts), so the URL is taken apart here.
 */
export function smtpSettings(url: string) {
  const u = new URL(url);
  const secure = u.protocol === 'smtps:';
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined;
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    auth,
    // Credentials never cross the network in clear: without TLS on connect, STARTTLS is a must.
    requireTLS: !secure && auth !== undefined,
  };
}

type SocketCallback = (err: Error | null, socket?: { connection: net.Socket }) => void;

/**
 * Opens the TCP connection for nodemailer with Nagle's algorithm off. SMTP writes a message as a
 * few small segments and waits for the answer; with Nagle on, the last segment waits for the
 * server's delayed ACK (about 40 ms on Linux), which would cap each connection at some 25
 * messages a second. nodemailer takes the socket as it is and does TLS (smtps) or STARTTLS on top.
 *
 * The socket is handed over while it is still connecting, never as an error: nodemailer's pool
 * keeps a connection whose socket could not be had counted as busy forever, so after as many
 * refused connections as the pool holds it would never send again. A refused or failed connect
 * now surfaces as an error of the pooled connection, which the pool drops and replaces; a connect
 * that hangs runs into the greeting timeout.
 */
function connectWithoutDelay(options: { host?: string; port?: number }, callback: SocketCallback): void {
  callback(null, { connection: net.connect({ host: options.host, port: options.port!, noDelay: true }) });
}

/**
 * SMTP through a pool of connections (`smtp://` or `smtps://`, credentials in the URL; STARTTLS
 * whenever the server offers it). Timeouts are short so a stuck server costs a retry, not a worker.
 */
export function smtpTransport(url: string, maxConnections = 5): MailTransport {
  // Each message is composed into one buffer first and handed to the connection whole: streamed
  // part by part, it would go out as dozens of small writes (and, without Nagle, as many packets).
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const pool = () =>
    nodemailer.createTransport({
      ...smtpSettings(url),
      pool: true,
      maxConnections,
      maxMessages: 1000,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      getSocket: connectWithoutDelay,
    });
  let transporter = pool();
  return {
    async send(mail) {
      const composed = await composer.sendMail(mail);
      const pool = transporter;
      try {
        await pool.sendMail({ envelope: composed.envelope, raw: composed.message as Buffer });
      } catch (err) {
        // Still queued when reset() closed its pool: it never reached the mail server.
        if (pool !== transporter && !(err as { code?: string }).code)
          throw Object.assign(new Error('Not sent: the connections were replaced.'), { code: 'ERESET' });
        throw err;
      }
    },
    reset() {
      // A closed pool lets the messages on its connections finish and fails those still queued.
      transporter.close();
      transporter = pool();
    },
    close() {
      composer.close();
      transporter.close();
    },
  };
}
