/**
 * A bounded map that forgets the least recently used entry first, and optionally entries older
 * than `ttlMs`. The service's caches (prepared statements, list totals, user profiles, kept
 * answers, rate-limit windows) are all this: what differs is only the key, how long a
 * value may be trusted, and what counts against the capacity (one per entry unless `weigh` says
 * otherwise, e.g. the bytes of a kept answer).
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number; weight: number }>();
  private total = 0;

  constructor(
    private readonly capacity: number,
    private readonly ttlMs = Infinity,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  /** The value, if known and fresh; it becomes the most recently used. */
  get(key: K, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.until <= now) {
      this.total -= entry.weight;
      return undefined;
    }
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Remembers `value`, then forgets the least recently used entries until the total weight fits. */
  set(key: K, value: V, now = Date.now()): void {
    this.delete(key);
    const weight = this.weigh(value);
    this.entries.set(key, { value, until: now + this.ttlMs, weight });
    this.total += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.capacity) break;
      this.entries.delete(oldest);
      this.total -= entry.weight;
    }
  }

  /** The value, or `make()` remembered. */
  async getOrMake(key: K, make: () => Promise<V>): Promise<V> {
    const known = this.get(key);
    if (known !== undefined) return known;
    const value = await make();
    this.set(key, value);
    return value;
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.weight;
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the entries weigh together (their count when nothing else is weighed). */
  get weight(): number {
    return this.total;
  }
}
