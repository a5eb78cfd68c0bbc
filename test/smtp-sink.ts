import type net from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { readEml, type ParsedMail } from './helpers.js';
import { freePort } from './processes.js';

/** A message the sink accepted: the SMTP envelope and the message as a reader sees it. */
export interface ReceivedMail {
  messageId: string;
  envelopeFrom: string;
  envelopeTo: string[];
  mail: ParsedMail;
}

/** An answer the sink gave instead of accepting, as the client saw it. */
export interface Refusal {
  stage: 'rcpt' | 'data';
  code: number;
  recipient: string;
}

interface Rule {
  stage: 'rcpt' | 'data';
  code: number;
  text: string;
  /** Only for this recipient (lower case); every recipient when absent. */
  recipient?: string;
  /** How many more times the rule answers; Infinity for always. */
  remaining: number;
}

export interface SmtpSinkOptions {
  /** Time between the end of a message's data and the sink's answer, to slow delivery down. */
  delayMs?: number;
}

const smtpError = (code: number, text: string): Error & { responseCode: number } =>
  Object.assign(new Error(text), { responseCode: code });

/**
 * A real SMTP server on 127.0.0.1 that keeps what it accepts, for tests of delivery. It can be
 * stopped and started again on the same port (connections are refused meanwhile), and told to
 * answer 4xx or 5xx for chosen recipients or for the next messages.
 *
 * A message counts as received once its data is complete, before the sink answers 250: like a
 * real mail server, which commits a message to its queue and then replies, so a client that dies
 * before reading the reply will send that message again.
 */
export class SmtpSink {
  readonly received: ReceivedMail[] = [];
  readonly refusals: Refusal[] = [];
  delayMs: number;
  /** Connections accepted so far, and the most that were open at once. */
  connectionsOpened = 0;
  peakConnections = 0;
  private rules: Rule[] = [];
  /** Connections still to be left without a greeting, and messages whose connection is still to be dropped. */
  private silentConnections = 0;
  private dropsDuringData = 0;
  /** Messages still to be held before the answer, and the answers held until release(). */
  private holds = 0;
  private readonly held: (() => void)[] = [];
  /** When each accepted message arrived (ms), in the order of `received`. */
  readonly receivedAt: number[] = [];
  private server: SMTPServer | undefined;
  private sockets = new Set<net.Socket>();

  private constructor(
    readonly port: number,
    options: SmtpSinkOptions,
  ) {
    this.delayMs = options.delayMs ?? 0;
  }

  /** A sink on a free port, listening unless `listening` is false (a mail server that is down). */
  static async create(options: SmtpSinkOptions & { listening?: boolean } = {}): Promise<SmtpSink> {
    const sink = new SmtpSink(await freePort(), options);
    if (options.listening !== false) await sink.start();
    return sink;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Connections open now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** Starts counting connections afresh (the peak from those open now). */
  resetConnectionCounts(): void {
    this.connectionsOpened = 0;
    this.peakConnections = this.sockets.size;
  }

  /** How many times each Message-ID was accepted. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const m of this.received) counts.set(m.messageId, (counts.get(m.messageId) ?? 0) + 1);
    return counts;
  }

  /** Message-IDs accepted more than once, with how many times. */
  duplicates(): Map<string, number> {
    return new Map([...this.counts()].filter(([, n]) => n > 1));
  }

  /** Accepted messages whose envelope went to `address`. */
  to(address: string): ReceivedMail[] {
    const wanted = address.toLowerCase();
    return this.received.filter((m) => m.envelopeTo.includes(wanted));
  }

  byMessageId(messageId: string): ReceivedMail[] {
    return this.received.filter((m) => m.messageId === messageId);
  }

  /**
   * Answers `code` instead of accepting: at RCPT TO (as greylisting or an unknown mailbox does) or
   * once the data is in (as a content filter does); for one recipient or any; `times` times.
   */
  refuse(options: { code: number; text?: string; stage?: 'rcpt' | 'data'; recipient?: string; times?: number }): void {
    this.rules.push({
      stage: options.stage ?? 'rcpt',
      code: options.code,
      text: options.text ?? (options.code < 500 ? 'Try again later' : 'Refused'),
      recipient: options.recipient?.toLowerCase(),
      remaining: options.times ?? Infinity,
    });
  }

  /** Answers 550 (a mailbox that does not exist) to every RCPT TO for `address`. */
  rejectRecipient(address: string, text = 'No such user here'): void {
    this.refuse({ code: 550, text, recipient: address });
  }

  /** Answers a temporary 451 (or `code`) to the next `count` messages matching `options`. */
  failNext(
    count: number,
    options: { code?: number; text?: string; stage?: 'rcpt' | 'data'; recipient?: string } = {},
  ): void {
    this.refuse({ ...options, code: options.code ?? 451, times: count });
  }

  /** Accepts the next `count` connections and never says a word on them (no greeting, no answer). */
  stayQuiet(count: number): void {
    this.silentConnections += count;
  }

  /** Drops the connection in the middle of the next `count` messages' data: they are not received. */
  dropDuringData(count: number): void {
    this.dropsDuringData += count;
  }

  /**
   * Holds the answer to the next `count` messages, once their data is in, until release(): a mail
   * server slower than any deadline, without waiting for the clock.
   */
  holdNext(count: number): void {
    this.holds += count;
  }

  /** Answers held now (see holdNext). */
  get holding(): number {
    return this.held.length;
  }

  /** Lets every held message be taken and answered. */
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  /** Forgets every answer set up with refuse, rejectRecipient or failNext. */
  clearRules(): void {
    this.rules = [];
  }

  private refusal(stage: 'rcpt' | 'data', recipients: string[]): Error | undefined {
    for (const rule of this.rules) {
      if (rule.stage !== stage || rule.remaining <= 0) continue;
      const hit = rule.recipient === undefined ? recipients[0] : recipients.find((r) => r === rule.recipient);
      if (hit === undefined) continue;
      rule.remaining -= 1;
      this.refusals.push({ stage, code: rule.code, recipient: hit });
      return smtpError(rule.code, rule.text);
    }
    return undefined;
  }

  /** Listens on the sink's port; resolves once connections are accepted. */
  async start(): Promise<void> {
    if (this.server) return;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      banner: 'shiplog test sink',
      // The greeting is sent once this calls back; a quiet connection is held open without one.
      onConnect: (_session, callback) => {
        if (this.silentConnections > 0) {
          this.silentConnections -= 1;
          return;
        }
        callback();
      },
      onRcptTo: (address, _session, callback) => {
        const err = this.refusal('rcpt', [address.address.toLowerCase()]);
        callback(err ?? undefined);
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        let dropped = false;
        if (this.dropsDuringData > 0) {
          this.dropsDuringData -= 1;
          stream.once('data', () => {
            dropped = true;
            this.socketOf(session)?.destroy();
          });
        }
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        // A client that goes away mid-message leaves an incomplete message: it was never sent.
        stream.on('error', () => undefined);
        stream.on('end', () => {
          // The end of what arrived before the connection was dropped: not a message.
          if (dropped) return;
          void this.accept(Buffer.concat(chunks), session).then(
            (err) => callback(err ?? null),
            (err: Error) => callback(smtpError(554, `Could not read the message: ${err.message}`)),
          );
        });
      },
    });
    server.server.on('connection', (socket: net.Socket) => {
      this.sockets.add(socket);
      this.connectionsOpened += 1;
      this.peakConnections = Math.max(this.peakConnections, this.sockets.size);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('error', () => {
      // A client vanishing mid-session (a killed process) is expected here.
    });
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  private socketOf(session: SMTPServerSession): net.Socket | undefined {
    return [...this.sockets].find(
      (s) => s.remotePort === session.remotePort && s.remoteAddress === session.remoteAddress,
    );
  }

  private async accept(raw: Buffer, session: SMTPServerSession): Promise<Error | undefined> {
    const recipients = session.envelope.rcptTo.map((a) => a.address.toLowerCase());
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.holds > 0) {
      this.holds -= 1;
      await new Promise<void>((resolve) => this.held.push(resolve));
    }
    const refused = this.refusal('data', recipients);
    if (refused) return refused;
    const mail = await readEml(raw);
    const from = session.envelope.mailFrom;
    this.receivedAt.push(Date.now());
    this.received.push({
      messageId: mail.headers.get('message-id') ?? '',
      envelopeFrom: from ? from.address : '',
      envelopeTo: recipients,
      mail,
    });
    return undefined;
  }

  /** Stops listening and drops every open connection: until start(), connections are refused. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }
}
