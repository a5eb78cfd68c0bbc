/**
 * A bounded map that forgets the least recently used entry first, and optionally entries older
 * than `ttlMs`. The service's caches (prepared statements, list totals, user profiles, rendered
 * notes) are all this: what differs is only the key and how long a value may be trusted.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();

  constructor(
    private readonly capacity: number,
    private readonly ttlMs = Infinity,
  ) {}

  /** The value, if known and fresh; it becomes the most recently used. */
  get(key: K, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (entry.until <= now) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V, now = Date.now()): void {
    this.entries.delete(key);
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, until: now + this.ttlMs });
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
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
