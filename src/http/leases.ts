import { LruCache } from '../lru.js';
import type { Window } from './repository.js';

/**
 * Reserves `amount` requests of `key` in its shared window (every instance's): gives the key's
 * shared count once they are added, and when the window ends.
 */
export type Claim = (key: string, amount: number, now: number) => Promise<Window>;

/** The most requests one claim reserves: one statement per this many requests at most. */
const MOST_A_CLAIM = 64;
/** A claim reserves this share of what is left of the limit, so that little is left unused near it. */
const SHARE_OF_WHAT_IS_LEFT = 1 / 16;

/** What this instance holds of a key's window: the counts from `next` to `last`, not yet given. */
interface Lease {
  next: number;
  last: number;
  endsAt: number;
  claiming?: Promise<unknown>;
}

/** What counts while the shared store cannot: the process alone, and who to tell when that begins and ends. */
export interface Outage {
  alone: (key: string, now: number) => Window;
  /** Called once when claims start failing (with the error), and once when one succeeds again. */
  told: (failing: boolean, err?: unknown) => void;
  /** How long after a failed claim the next is tried; requests meanwhile are counted alone. */
  retryMs: number;
}

/**
 * Counts requests in a shared store a block at a time. A claim adds a block of counts to the
 * key's shared count (one statement) and the instance hands them to its requests one by one, in
 * memory, with no statement: counts are never given twice, across instances too, so no more than
 * the limit is ever allowed through N instances. A block is a sixteenth of what is left of the
 * limit (64 at most, 1 at least), so near the limit every request is claimed alone, and counts an
 * instance claimed but did not use (at most that share, per instance) are all it may under-allow.
 * A key whose window is used up is refused here until it ends, with no statement.
 *
 * When a claim fails (the store is down or slow), the requests that waited for it and every
 * request after it are counted by the process alone, and one claim is tried again `retryMs`
 * later: an outage costs each request nothing more than the one claim that found it.
 */
export class LeasedCounts {
  private readonly leases: LruCache<string, Lease>;
  private retryAt = 0;
  private failing = false;

  constructor(
    private readonly claim: Claim,
    capacity: number,
    windowMs: number,
    private readonly outage: Outage,
  ) {
    this.leases = new LruCache(capacity, windowMs);
  }

  /** Counts a request of `key`, whose limit is `max`: at once from a held block, else after a claim. */
  count(key: string, max: number, now: number): Window | Promise<Window> {
    const lease = this.leases.get(key, now);
    if (lease !== undefined && lease.endsAt > now && lease.claiming === undefined) {
      if (lease.next <= lease.last) return { count: lease.next++, endsAt: lease.endsAt };
      if (lease.last >= max) return { count: lease.last + 1, endsAt: lease.endsAt };
    }
    if (this.failing && now < this.retryAt && lease?.claiming === undefined) return this.outage.alone(key, now);
    return this.claimFor(key, max, now, lease);
  }

  private async claimFor(key: string, max: number, now: number, held: Lease | undefined): Promise<Window> {
    if (held?.claiming !== undefined) {
      // A claim for this key is on its way: its block is shared with the requests that wait for it.
      const failed = await held.claiming.then(
        () => false,
        () => true,
      );
      return failed ? this.outage.alone(key, now) : this.count(key, max, now);
    }
    const lease = held !== undefined && held.endsAt > now ? held : { next: 1, last: 0, endsAt: 0 };
    const amount = Math.min(MOST_A_CLAIM, Math.max(1, Math.floor((max - lease.last) * SHARE_OF_WHAT_IS_LEFT)));
    // While failing, this is the one claim tried this second: other keys' requests meanwhile count alone.
    if (this.failing) this.retryAt = now + this.outage.retryMs;
    const claiming = this.claim(key, amount, now);
    lease.claiming = claiming;
    this.leases.set(key, lease, now);
    try {
      const window = await claiming;
      lease.next = window.count - amount + 1;
      lease.last = window.count;
      lease.endsAt = window.endsAt;
    } catch (err) {
      this.retryAt = now + this.outage.retryMs;
      if (!this.failing) this.outage.told(true, err);
      this.failing = true;
      return this.outage.alone(key, now);
    } finally {
      lease.claiming = undefined;
    }
    if (this.failing) this.outage.told(false);
    this.failing = false;
    return this.count(key, max, now);
  }
}
