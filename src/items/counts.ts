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
