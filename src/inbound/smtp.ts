import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { SMTPServer, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { addressForm } from './model.js';
import { receiveMessage, type Inbound, type Outcome } from './service.js';

const MIB = 1024 * 1024;

/** Connections the listener serves at once. */
const MAX_CLIENTS = 10;

/** An error the SMTP server answers with its code (smtp-server reads `responseCode`). */
function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/**
 * The SMTP answer to an outcome: 250 for what Shiplog took, ignored or explained itself, 5xx for
 * the refusals the mail system reports.
 */
function answerOf(outcome: Outcome): { error?: Error; message?: string } {
  if (outcome.status === 'accepted') return { message: '2.0.0 Taken by Shiplog' };
  if (outcome.status === 'ignored') return { message: `2.0.0 Ignored: ${outcome.why}` };
  switch (outcome.reason) {
    case 'not_shiplog':
      return { error: smtpError(550, `5.1.1 ${outcome.message}`) };
    case 'too_large':
      return { error: smtpError(552, `5.3.4 ${outcome.message}`) };
    case 'malformed':
      return { error: smtpError(554, `5.6.0 ${outcome.message}`) };
    default:
      // Refused and, unless it was told within the hour or cannot be, explained to its sender by
      // Shiplog: a bounce on top would tell them twice.
      return { message: '2.0.0 Not added; the sender is told why' };
  }
}

/** Reads a message's bytes; undefined when it went past the server's size. */
async function readMessage(stream: SMTPServerDataStream): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) if (!stream.sizeExceeded) chunks.push(chunk as Buffer);
  return stream.sizeExceeded ? undefined : Buffer.concat(chunks);
}

/**
 * The SMTP listener for mail to items' addresses, inside the server: for a relay or MX in front
 * of it (which does TLS, authentication of its own users, and spam filtering), so it offers
 * neither STARTTLS nor AUTH. At RCPT TO it refuses what is not an item's address of the mail
 * domain (550), and takes one item's address per message (452 to the others, which the relay
 * sends again on their own); a message past MAIL_INBOUND_MAX_MB is refused (552). It answers 250
 * once the message is stored (or ignored, or explained to its sender), and 451 when it could not
 * be stored (the database down), so the relay tries again.
 */
export class InboundListener {
  #server: SMTPServer | undefined;

  constructor(
    private readonly inbound: Inbound,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** The server, made when it first listens: the package loads only where mail is taken. */
  private async server(): Promise<SMTPServer> {
    if (this.#server) return this.#server;
    const { SMTPServer } = await import('smtp-server');
    const inbound = this.inbound;
    this.#server = new SMTPServer({
      name: inbound.urls.mailDomain,
      banner: 'Shiplog',
      size: inbound.maxBytes,
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      closeTimeout: 5000,
      // Each message is held whole while it is read and parsed (up to MAIL_INBOUND_MAX_MB, twice):
      // more connections at once get 421, and the relay sends their mail a little later.
      maxClients: MAX_CLIENTS,
      onRcptTo: (address, session, callback) => callback(this.checkRecipient(address.address, session)),
      onData: (stream, session, callback) => {
        this.take(stream, session).then(
          ({ error, message }) => callback(error ?? null, message),
          (err) => callback(err),
        );
      },
    });
    this.#server.on('error', (err) => this.log.warn({ err }, 'inbound mail listener'));
    return this.#server;
  }

  private checkRecipient(address: string, session: SMTPServerSession): Error | undefined {
    if (!addressForm(address, this.inbound.urls.mailDomain))
      return smtpError(550, `5.1.1 <${address}> is not an address of an item in Shiplog`);
    if (session.envelope.rcptTo.length > 0) return smtpError(452, '4.5.3 One item address per message; send again');
    return undefined;
  }

  private async take(stream: SMTPServerDataStream, session: SMTPServerSession) {
    const raw = await readMessage(stream);
    if (!raw) {
      const message = `The message is larger than ${this.inbound.maxBytes / MIB} MiB, the most Shiplog takes.`;
      return answerOf({ status: 'refused', reason: 'too_large', message, explained: false });
    }
    const mailFrom = session.envelope.mailFrom;
    try {
      const outcome = await receiveMessage(this.inbound, raw, {
        recipients: session.envelope.rcptTo.map((r) => r.address),
        sender: mailFrom === false ? undefined : mailFrom.address,
      });
      // Never the recipient: a signed reply address lets whoever holds it comment.
      const { status, reason, itemId } = outcome as { status: string; reason?: string; itemId?: number };
      this.log.info({ inbound: { status, reason, itemId } }, 'inbound mail');
      return answerOf(outcome);
    } catch (err) {
      // The database (or a bug): nothing was stored, so the relay keeps the message and tries again.
      this.log.error({ err }, 'inbound mail could not be stored');
      return { error: smtpError(451, '4.3.0 Could not store the message now; try again later') };
    }
  }

  async listen(port: number, host: string): Promise<number> {
    const server = await this.server();
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, host, () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    return (server.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    const server = this.#server;
    return server ? new Promise((resolve) => server.close(() => resolve())) : Promise.resolve();
  }
}
