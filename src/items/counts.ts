import { LruCache } from '../lru.js';

/**
 * Totals of item lists (X-Sprintly-Item-Count), remembered per product and items version. Every
 * change that can alter which items a list matches moves the product's version in the same
 * transaction, so a remembered total is exact for as long as its version is current; instances
 * sharing a database each keep their own. Counting a big product's list costs far more than the
 * page itself, and clients ask for the same lists again and again.
 */
export class ListCounts {
  private readonly totals: LruCache<string, number>;

  constructor(capacity = 5000) {
    this.totals = new LruCache(capacity);
  }

  /** The remembered total, or `count()` remembered. */
  get(productId: number, version: number, filter: unknown, count: () => Promise<number>): Promise<number> {
    return this.totals.getOrMake(`${productId}:${version}:${JSON.stringify(filter)}`, count);
  }
}

/**
 * The item ids of list pages whose order stays while only items' text changes (by priority, by
 * creation), remembered per product and order version. Every change of which items a list matches
 * or of their order by priority (a resort) moves the product's order version in the same
 * transaction, so remembered ids are the page's for as long as it is current; a change of an
 * item's title or description does not move it. A page is then its items read by id, the JSON of
 * those unchanged kept (KeptItems): a busy product's lists stay cheap while people edit.
 */
export class ListPages {
  private readonly pages: LruCache<string, number[]>;

  constructor(capacity = 5000) {
    this.pages = new LruCache(capacity);
  }

  /** The remembered ids, or those of `read()` remembered. */
  get(productId: number, version: number, question: unknown, read: () => Promise<number[]>): Promise<number[]> {
    return this.pages.getOrMake(`${productId}:${version}:${JSON.stringify(question)}`, read);
  }
}
