/**
 * Totals of item lists (X-Sprintly-Item-Count), remembered per product and items version. Every
 * change that can alter which items a list matches moves the product's version in the same
 * transaction, so a remembered total is exact for as long as its version is current; instances
 * sharing a database each keep their own. Counting a big product's list costs far more than the
 * page itself, and clients ask for the same lists again and again.
 */
export class ListCounts {
  private readonly totals = new Map<string, number>();

  constructor(private readonly capacity = 5000) {}

  private static key(productId: number, version: number, filter: unknown): string {
    return `${productId}:${version}:${JSON.stringify(filter)}`;
  }

  /** The remembered total, or `count()` remembered. */
  async get(productId: number, version: number, filter: unknown, count: () => Promise<number>): Promise<number> {
    const key = ListCounts.key(productId, version, filter);
    const known = this.totals.get(key);
    if (known !== undefined) {
      // Most recently used last, so the oldest entries are the first to go.
      this.totals.delete(key);
      this.totals.set(key, known);
      return known;
    }
    const total = await count();
    if (this.totals.size >= this.capacity) this.totals.delete(this.totals.keys().next().value as string);
    this.totals.set(key, total);
    return total;
  }
}
