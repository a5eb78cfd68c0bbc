import type { ServerResponse } from 'node:http';
import type { Db } from '../db/connection.js';
import { ChangeListener } from '../db/listen.js';
import { findItemHeadsByIds } from '../items/index.js';
import { systemClock, type Clock } from '../time.js';
import { itemsChangedSince, productRevisions } from '../products/index.js';

/** How often a process reads the revisions of the products its open pages show, when nothing tells it. */
export const LIVE_POLL_MS = 400;
/**
 * How often it reads them while PostgreSQL's notifications tell it of changes: only to bound what a
 * listener that looks connected but is not (a network gone silent) can hold back.
 */
export const LIVE_LISTENING_POLL_MS = 10_000;
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

export interface LiveOptions {
  pollMs: number;
  listeningPollMs: number;
  heartbeatMs: number;
  perPerson: number;
  perProcess: number;
  /** PostgreSQL: listen for its notifications of changes on a connection of this URL. */
  databaseUrl?: string;
  /** The timers of the reading and the heartbeat (tests move a manual one). */
  clock: Clock;
}

/** Runs `run` every `ms` on `clock` until the returned function is called. */
function every(clock: Clock, ms: number, run: () => void): () => void {
  let cancel = clock.after(ms, function again() {
    cancel = clock.after(ms, again);
    run();
  });
  return () => cancel();
}

/** Why a stream was refused: the person's bound, or the process's. */
export type Refusal = 'person' | 'process';

/**
 * The pages' live changes: server-sent event streams, one per open board or item page, each of a
 * product. A product whose revision moved gets one event, naming the items changed as item_changes
 * has them (none: reload the whole board). How a process learns that a revision moved: on
 * PostgreSQL, from the notification every change sends at its commit (one listening connection per
 * process, opened with the first stream); and always by reading the revisions of the products
 * watched, every `pollMs` while no listener is connected (SQLite, or the listener down), every
 * `listeningPollMs` while one is, and at once when a listener (re)connects or a stream opens.
 */
export class LiveChanges {
  private readonly streams = new Set<Stream>();
  private readonly revisions = new Map<number, number>();
  /** Products to read at the next check; `all` reads every product watched. */
  private readonly due = new Set<number>();
  private all = false;
  /** Each stops its timer. */
  private poller?: () => void;
  private heartbeat?: () => void;
  private checking = false;
  private closed = false;
  private listener?: ChangeListener;
  private listening = false;
  /** The reading timer's interval, as last set. */
  private pace = 0;
  private readonly o: LiveOptions;

  constructor(
    private readonly db: Db,
    options: Partial<LiveOptions> = {},
  ) {
    this.o = {
      pollMs: LIVE_POLL_MS,
      listeningPollMs: LIVE_LISTENING_POLL_MS,
      heartbeatMs: LIVE_HEARTBEAT_MS,
      perPerson: LIVE_PER_PERSON,
      perProcess: LIVE_PER_PROCESS,
      clock: systemClock,
      ...options,
    };
  }

  /** Whether another stream may open for this person now, or which bound refuses it. */
  refusal(userId: number): Refusal | undefined {
    if (this.closed || this.streams.size >= this.o.perProcess) return 'process';
    let mine = 0;
    for (const s of this.streams) if (s.userId === userId) mine++;
    return mine >= this.o.perPerson ? 'person' : undefined;
  }

  /** Starts a stream on `out` (its headers already sent), from the product's revision the page showed. */
  async open(stream: Stream, revision: number): Promise<void> {
    const known = this.revisions.get(stream.productId);
    if (known === undefined) this.revisions.set(stream.productId, revision);
    this.streams.add(stream);
    stream.out.on('close', () => this.drop(stream));
    // A browser reconnects by itself after a lost connection: two seconds keeps a page live.
    stream.out.write(`retry: 2000\n: open\n\n`);
    // The product is followed here already, past what this page shows: it is told what it missed
    // (or, if that cannot be read now, to read everything again).
    if (known !== undefined && known > revision) {
      const missed = `event: change\ndata: ${JSON.stringify({ revision: known, items: [] })}\n\n`;
      void this.eventOf(stream.productId, revision, known).then(
        (event) => stream.out.write(event),
        () => stream.out.write(missed),
      );
    }
    if (this.o.databaseUrl && !this.listener) {
      this.listener = new ChangeListener(this.o.databaseUrl, {
        onChange: (productId) => this.revisions.has(productId) && this.check(productId),
        onListening: (listening) => {
          this.listening = listening;
          this.schedule();
          // What changed while no one listened is read now.
          if (listening) this.check();
        },
      });
      this.listener.start();
    }
    this.schedule();
    this.heartbeat ??= every(this.o.clock, this.o.heartbeatMs, () => this.beat());
    // A page that showed an older revision than the one read now gets what it missed at once.
    this.check(stream.productId);
  }

  /** How many streams are open (for the process's bound, and for tests). */
  get size(): number {
    return this.streams.size;
  }

  /**
   * Ends every stream (the server is closing), telling each to reconnect within half a second:
   * through a balancer the browser reaches another instance, from the revision its page shows.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.streams) s.out.end('retry: 500\n: reconnect\n\n');
    this.streams.clear();
    this.stop();
    await this.listener?.stop();
  }

  private drop(stream: Stream): void {
    this.streams.delete(stream);
    if (![...this.streams].some((s) => s.productId === stream.productId)) this.revisions.delete(stream.productId);
    if (this.streams.size === 0) this.stop();
  }

  /** The reading timer at the pace that fits whether a listener is connected, while streams are open. */
  private schedule(): void {
    const pace = this.listening ? Math.max(this.o.listeningPollMs, this.o.pollMs) : this.o.pollMs;
    // Left running at the same pace: pages opening often must not keep putting the next read off.
    if (this.streams.size > 0 && this.poller && this.pace === pace) return;
    this.poller?.();
    this.poller = undefined;
    if (this.streams.size === 0) return;
    this.pace = pace;
    this.poller = every(this.o.clock, pace, () => this.check());
  }

  private stop(): void {
    this.poller?.();
    this.heartbeat?.();
    this.poller = this.heartbeat = undefined;
  }

  private beat(): void {
    for (const s of this.streams) s.out.write(': heartbeat\n\n');
  }

  /** Reads the revision of one product (or of all watched) soon; reads asked for meanwhile join the next. */
  private check(productId?: number): void {
    if (productId === undefined) this.all = true;
    else this.due.add(productId);
    void this.read();
  }

  /** Reads the revisions due in one query each round; an event to the streams of products that moved. */
  private async read(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      while ((this.all || this.due.size > 0) && this.streams.size > 0) {
        const ids = this.all ? [...this.revisions.keys()] : [...this.due].filter((id) => this.revisions.has(id));
        this.all = false;
        this.due.clear();
        if (ids.length > 0) await this.readRevisions(ids);
      }
    } catch {
      // A failed read (the database restarting) is retried by the timer; the pages stay as they are.
    } finally {
      this.all = false;
      this.due.clear();
      this.checking = false;
    }
  }

  private async readRevisions(ids: number[]): Promise<void> {
    const now = await productRevisions(this.db, ids);
    for (const [productId, revision] of now) {
      const before = this.revisions.get(productId);
      if (before === undefined || revision <= before) continue;
      this.revisions.set(productId, revision);
      this.send(productId, await this.eventOf(productId, before, revision));
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
