import type { ServerResponse } from 'node:http';
import type { Db } from '../db/connection.js';
import { findItemHeadsByIds } from '../items/index.js';
import { itemsChangedSince, productRevisions } from '../products/index.js';

/** How often a process reads the revisions of the products its open pages show. */
export const LIVE_POLL_MS = 400;
/** A comment line this often keeps proxies from closing a quiet stream, and finds dead ones. */
export const LIVE_HEARTBEAT_MS = 15_000;
/** Streams one person may hold open in one process (a browser allows six connections to a host). */
export const LIVE_PER_PERSON = 4;
/** Streams one process holds open at most. */
export const LIVE_PER_PROCESS = 1000;
/** Item numbers an event names at most; past that it says only that the board changed. */
const NAMED_AT_MOST = 100;

interface Stream {
  productId: number;
  userId: number;
  out: ServerResponse;
}

/** Why a stream was refused: the person's bound, or the process's. */
export type Refusal = 'person' | 'process';

/**
 * The pages' live changes: server-sent event streams, one per open board or item page, each of a
 * product. One timer per process polls the revisions of the products watched (any instance's
 * change moves them, on SQLite as on PostgreSQL); a product whose revision moved gets one event,
 * naming the items changed as item_changes has them (none: reload the whole board).
 */
export class LiveChanges {
  private readonly streams = new Set<Stream>();
  private readonly revisions = new Map<number, number>();
  private poller?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private polling = false;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly o = {
      pollMs: LIVE_POLL_MS,
      heartbeatMs: LIVE_HEARTBEAT_MS,
      perPerson: LIVE_PER_PERSON,
      perProcess: LIVE_PER_PROCESS,
    },
  ) {}

  /** Whether another stream may open for this person now, or which bound refuses it. */
  refusal(userId: number): Refusal | undefined {
    if (this.closed || this.streams.size >= this.o.perProcess) return 'process';
    let mine = 0;
    for (const s of this.streams) if (s.userId === userId) mine++;
    return mine >= this.o.perPerson ? 'person' : undefined;
  }

  /** Starts a stream on `out` (its headers already sent), from the product's revision the page showed. */
  async open(stream: Stream, revision: number): Promise<void> {
    if (!this.revisions.has(stream.productId)) this.revisions.set(stream.productId, revision);
    this.streams.add(stream);
    stream.out.on('close', () => this.drop(stream));
    // A browser reconnects by itself after a lost connection: two seconds keeps a page live.
    stream.out.write(`retry: 2000\n: open\n\n`);
    this.poller ??= setInterval(() => void this.poll(), this.o.pollMs);
    this.heartbeat ??= setInterval(() => this.beat(), this.o.heartbeatMs);
    this.poller.unref();
    this.heartbeat.unref();
  }

  /** How many streams are open (for the process's bound, and for tests). */
  get size(): number {
    return this.streams.size;
  }

  /**
   * Ends every stream (the server is closing), telling each to reconnect within half a second:
   * through a balancer the browser reaches another instance, from the revision its page shows.
   */
  close(): void {
    this.closed = true;
    for (const s of this.streams) s.out.end('retry: 500\n: reconnect\n\n');
    this.streams.clear();
    this.stop();
  }

  private drop(stream: Stream): void {
    this.streams.delete(stream);
    if (![...this.streams].some((s) => s.productId === stream.productId)) this.revisions.delete(stream.productId);
    if (this.streams.size === 0) this.stop();
  }

  private stop(): void {
    clearInterval(this.poller);
    clearInterval(this.heartbeat);
    this.poller = this.heartbeat = undefined;
  }

  private beat(): void {
    for (const s of this.streams) s.out.write(': heartbeat\n\n');
  }

  /** One read of every watched product's revision; an event to the streams of those that moved. */
  private async poll(): Promise<void> {
    if (this.polling || this.streams.size === 0) return;
    this.polling = true;
    try {
      const now = await productRevisions(this.db, [...this.revisions.keys()]);
      for (const [productId, revision] of now) {
        const before = this.revisions.get(productId);
        if (before === undefined || revision <= before) continue;
        this.revisions.set(productId, revision);
        this.send(productId, await this.eventOf(productId, before, revision));
      }
    } catch {
      // A failed read (the database restarting) is retried at the next tick; the pages stay as they are.
    } finally {
      this.polling = false;
    }
  }

  private async eventOf(productId: number, before: number, revision: number): Promise<string> {
    const ids = await itemsChangedSince(this.db, productId, before);
    const numbers =
      ids.length > 0 && ids.length <= NAMED_AT_MOST
        ? (await findItemHeadsByIds(this.db, ids)).map((i) => i.number)
        : [];
    return `event: change\ndata: ${JSON.stringify({ revision, items: numbers.sort((a, b) => a - b) })}\n\n`;
  }

  private send(productId: number, event: string): void {
    for (const s of this.streams) if (s.productId === productId) s.out.write(event);
  }
}
