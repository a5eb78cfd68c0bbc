import type { FastifyReply, FastifyRequest } from 'fastify';
import { answeredNotModified, answerTag } from './http/conditional.js';
import { keptBytes } from './kept-bytes.js';
import { LruCache } from './lru.js';
import { PROFILE_TTL_MS } from './users/index.js';
import type { Db } from './db/connection.js';
import type { ProductRow } from './db/schema.js';
import type { ProductScope } from './scope.js';

/** A serialized answer (its bytes, sent as they are) and the headers its handler set. */
interface KeptAnswer {
  body: Buffer;
  /** A strong entity tag of the body, for conditional requests (http/conditional.ts). */
  etag: string;
  headers: [string, string][];
  /** For an answer kept by order version: the product's revision it was made at, and the items it shows. */
  made?: { revision: number; items: readonly number[] };
}

/** Which of a product's items changed since a revision (products' ChangedItems). */
export interface ItemChanges {
  changedSince(db: Db, product: ProductRow, since: number, items: readonly number[]): Promise<boolean>;
}

/**
 * An answer's bytes, and a text that decides them exactly and is far shorter (for a page of
 * deploys: the digests of its deploys' kept JSON, deploys/listed.ts): its ETag is made from that
 * instead of from the bytes, a tenth of what serving a page of deploys cost.
 */
export class Fingerprinted {
  constructor(
    readonly body: Buffer,
    readonly fingerprint: string,
  ) {}
}

/** Tells a render which items its answer shows (their ids, parents included). */
export type ShowsItems = (ids: readonly number[]) => void;

/** What the kept answers may hold in all, in bytes of their bodies. */
const DEFAULT_BUDGET = 32 * 1024 * 1024;
/** Answers bigger than this are large: a page of deploys (about 100 KiB) is, a page of 20 items is not. */
const LARGE_ANSWER = 64 * 1024;
/** Of the budget, what large answers may hold together (4 MiB by default: six pages of deploys). */
const LARGE_SHARE = 1 / 8;

/**
 * JSON answers of a product's reads (item lists, deploy lists) kept per product revision, caller
 * and question. A product's revision is read from the database with the product on every request
 * and moves in the same transaction as every change to what its items and deploys show, so an
 * answer kept under the revision a request reads is exactly what rendering it again would give;
 * an instance never answers from before the last commit, wherever it was made.
 *
 * One thing can be older: the caller's own `last_login`, embedded where they created or are
 * assigned an item. User profiles are remembered for PROFILE_TTL_MS already, and kept answers are
 * forgotten after as long, so that bound stays the same.
 *
 * A request with `Cache-Control: no-cache` is rendered afresh (and kept), as HTTP asks of caches.
 * Requests that ask what is being rendered at that moment wait for that render instead of each
 * starting their own (a list asked by fifty clients at once right after a change renders once);
 * when that render fails, they fail with it, and the next request renders afresh.
 * Bounded by the total size of the bodies: the least recently used go first. Large answers (pages
 * of deploys, hundreds of KiB each) have an eighth of the budget to themselves, so that clients
 * paging through old deploys neither push out the lists nor fill the memory with pages nobody
 * asks for again; one bigger than half of that eighth is not kept.
 *
 * At most `renders` answers are rendered at once; the others wait their turn. A page of deploys
 * holds up to 1,000 items, several MiB of objects while it renders: fifty of them interleaved
 * held hundreds of MiB at once, for no more answers per second (rendering is work for the one
 * JavaScript thread; on PostgreSQL, as many as the pool has connections still wait on it at once).
 * Turns go round the callers waiting, not first come first served, so that one caller asking for
 * many big pages at once makes another's small list wait for one render, not for all of theirs.
 */
export class KeptAnswers {
  private readonly answers: LruCache<string, KeptAnswer>;
  private readonly largeAnswers: LruCache<string, KeptAnswer>;
  private rendering = 0;
  private readonly waiting: { caller: number; go: () => void }[] = [];
  /** The callers whose renders were started last, latest last: the next turn goes to another. */
  private readonly served: number[] = [];
  /** Answers being rendered, by key: a request asking the same question meanwhile waits for it. */
  private readonly underway = new Map<string, Promise<KeptAnswer>>();

  constructor(
    private readonly budget = DEFAULT_BUDGET,
    private readonly renders = 2,
    private readonly large = LARGE_ANSWER,
    private readonly changes?: { db: Db; items: ItemChanges },
  ) {
    const weigh = (answer: KeptAnswer) => answer.body.length;
    this.answers = new LruCache(budget * (1 - LARGE_SHARE), PROFILE_TTL_MS, weigh);
    this.largeAnswers = new LruCache(budget * LARGE_SHARE, PROFILE_TTL_MS, weigh);
  }

  private kept(key: string): KeptAnswer | undefined {
    return this.answers.get(key) ?? this.largeAnswers.get(key);
  }

  private keep(key: string, answer: KeptAnswer): void {
    if (answer.body.length <= this.large) this.answers.set(key, answer);
    else if (answer.body.length <= (this.budget * LARGE_SHARE) / 2) this.largeAnswers.set(key, answer);
  }

  /** `make()` for `caller`, once fewer than `renders` others are under way and it is their turn. */
  private async rendered<T>(caller: number, make: () => Promise<T>): Promise<T> {
    if (this.rendering >= this.renders) await new Promise<void>((go) => this.waiting.push({ caller, go }));
    else this.rendering++;
    this.served.push(caller);
    if (this.served.length > this.renders) this.served.shift();
    try {
      return await make();
    } finally {
      // The turn passes straight to the next in line: the first waiting of a caller that was not
      // served last, else the first waiting.
      const index = this.waiting.findIndex((w) => !this.served.includes(w.caller));
      const [next] = this.waiting.splice(Math.max(index, 0), 1);
      if (next) next.go();
      else this.rendering--;
    }
  }

  /** How much the kept bodies hold, in bytes. */
  get held(): number {
    return this.answers.weight + this.largeAnswers.weight;
  }

  /**
   * Answers `request` with what was kept for `question` (a string naming everything of the
   * request the answer depends on besides product, revision and caller), or with what `make`
   * returns, serialized by the route's schema (unless it is a Buffer, serialized already) and
   * kept with those of the `headers` it set. Every answer carries an ETag of its bytes; a request
   * whose If-None-Match names it is answered 304 without a body (from the kept answer, or after
   * rendering when none is kept: then the answer is kept for the next).
   *
   * An answer `byPosition` (a list in an order that changes of text leave alone) is kept by the
   * product's order version instead of its revision, with the items `make` says it shows: it stays
   * good across changes to other items, until one of its own changes (ItemChanges).
   */
  async answer(
    request: FastifyRequest,
    reply: FastifyReply,
    question: string,
    headers: readonly string[],
    make: (shows: ShowsItems) => Promise<unknown>,
    byPosition = false,
  ): Promise<Buffer | FastifyReply> {
    const { product, user } = request.scope as ProductScope;
    const inOrder = byPosition && this.changes !== undefined;
    const version = inOrder ? `o${product.order_version}:${product.archived}:${product.name}` : product.revision;
    const key = `${product.id}:${version}:${user.id}:${question}`;
    const answer = await this.keptOrMade(request, reply, { key, caller: user.id, headers, product, inOrder }, make);
    return this.sent(request, reply, answer);
  }

  /**
   * Answers as `answer` does, for a read of several products (a search): `key` must name
   * everything the answer depends on, the revisions of every product it reads among them, and
   * the caller; kept by it alone.
   */
  async answerKeyed(
    request: FastifyRequest,
    reply: FastifyReply,
    q: { key: string; caller: number; headers: readonly string[] },
    make: () => Promise<unknown>,
  ): Promise<Buffer | FastifyReply> {
    const answer = await this.keptOrMade(request, reply, { ...q, key: `*:${q.key}`, inOrder: false }, make);
    return this.sent(request, reply, answer);
  }

  private sent(request: FastifyRequest, reply: FastifyReply, answer: KeptAnswer): Buffer | FastifyReply {
    for (const [name, value] of answer.headers) reply.header(name, value);
    if (answeredNotModified(request, reply, answer.etag)) return reply.send();
    return answer.body;
  }

  /** Whether an answer kept by order version still holds: none of the items it shows changed since. */
  private async holds(kept: KeptAnswer, product: ProductRow): Promise<boolean> {
    if (kept.made === undefined || !this.changes) return true;
    const { db, items } = this.changes;
    return !(await items.changedSince(db, product, kept.made.revision, kept.made.items));
  }

  private async keptOrMade(
    request: FastifyRequest,
    reply: FastifyReply,
    q: { key: string; caller: number; headers: readonly string[]; product?: ProductRow; inOrder: boolean },
    make: (shows: ShowsItems) => Promise<unknown>,
  ): Promise<KeptAnswer> {
    const { key, product } = q;
    const byPosition = q.inOrder && product !== undefined;
    const fresh = /\bno-(cache|store)\b/i.test(request.headers['cache-control'] ?? '');
    reply.type('application/json; charset=utf-8');
    // Kept, or being rendered for another request right now: the same answer either way.
    const kept = fresh ? undefined : this.kept(key);
    if (kept !== undefined && (product === undefined || (await this.holds(kept, product)))) return kept;
    const underway = fresh ? undefined : this.underway.get(key);
    if (underway !== undefined) return underway;
    // The route's serializer, from its response schema, gives a string; kept as the bytes sent,
    // so that a big answer (a page of deploys is hundreds of KiB) is not encoded again each time.
    // A page bounded in bytes comes serialized already (http/answer-size.ts), as a Buffer.
    // Headers the handler did not set this time (a next page's offset on the last page) are not kept.
    const rendering = this.rendered(q.caller, async (): Promise<KeptAnswer> => {
      let shown: readonly number[] = [];
      const made = await make((ids) => {
        shown = ids;
      });
      const body = keptBytes(
        made instanceof Fingerprinted ? made.body : Buffer.isBuffer(made) ? made : (reply.serialize(made) as string),
      );
      const kept = q.headers.flatMap((name): [string, string][] =>
        reply.getHeader(name) === undefined ? [] : [[name, String(reply.getHeader(name))]],
      );
      const tagged = made instanceof Fingerprinted ? Buffer.from(made.fingerprint) : body;
      const answer: KeptAnswer = { body, etag: answerTag(tagged, kept), headers: kept };
      return byPosition ? { ...answer, made: { revision: product.revision, items: shown } } : answer;
    });
    if (!fresh) this.underway.set(key, rendering);
    try {
      const answer = await rendering;
      this.keep(key, answer);
      return answer;
    } finally {
      if (this.underway.get(key) === rendering) this.underway.delete(key);
    }
  }
}
