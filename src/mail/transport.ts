import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { OutboxRow } from '../db/schema.js';

/** Hands one outbox message to the world; throws when it could not. */
export interface MailTransport {
  send(message: OutboxRow): Promise<void>;
  close(): void;
}

export interface MailSettings {
  from: string;
  dataDir: string;
}

/** The RFC 5322 message as nodemailer composes it; the stored Message-ID is kept as is. */
function envelope(message: OutboxRow, from: string): nodemailer.SendMailOptions {
  return {
    from,
    to: message.to_address,
    subject: message.subject,
    text: message.body_text.replace(/\r?\n/g, '\r\n'),
    messageId: message.message_id,
    date: new Date(message.created_at),
    headers: { 'Auto-Submitted': 'auto-generated' },
  };
}

/**
 * The embedded default: each message becomes `DATA_DIR/mail/<outbox id>.eml`, written under a
 * temporary name and renamed, so a file is never half there and a retry rewrites the same file.
 */
export function emlTransport(settings: MailSettings): MailTransport {
  const dir = path.join(settings.dataDir, 'mail');
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  return {
    async send(message) {
      const info = await composer.sendMail(envelope(message, settings.from));
      await fs.mkdir(dir, { recursive: true });
      const file = path.join(dir, `${String(message.id).padStart(8, '0')}.eml`);
      const tmp = `${file}.${crypto.randomBytes(4).toString('hex')}.tmp`;
      await fs.writeFile(tmp, info.message as Buffer);
      await fs.rename(tmp, file);
    },
    close() {
      composer.close();
    },
  };
}
