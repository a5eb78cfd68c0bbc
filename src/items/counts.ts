import { LruCache } from '../lru.js';
import type { ItemStamp } from './repository.js';

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

/** The fewest and the most leading stamps a window holds (a power of two in between: pages ask for a few depths). */
const SMALLEST_WINDOW = 64;
const LARGEST_WINDOW = 1024;
/** Pages of a list asked per revision (recently) from which its pages are cut from windows. */
const PAGES_WORTH_A_WINDOW = 8;

/**
 * The leading stamps of lists in an order that every edit moves (by time: recent, stale, active,
 * abandoned), per product revision: their pages are slices of them. Every change of what a list
 * shows moves the product's revision in its own transaction, so the stamps read for a revision
 * are what reading any page of it then gives, as the answers kept under it are (KeptAnswers).
 *
 * While people write, each revision of a busy product made every page of these lists read again,
 * each its own statement that skipped its offset's rows: beside 5 edits a second, PostgreSQL
 * planned and ran some 400 such reads a second of hundreds of rows each. Now a revision costs
 * each order one read of the stamps down to the deepest page asked (a power of two of them, from
 * 64 to 1,024; deeper pages are read as before), shared by the pages asked meanwhile, once the
 * list's pages are asked often enough between revisions (see worthIt). Bounded by the stamps held
 * in all.
 */
export class ListWindows {
  private readonly windows: LruCache<string, { size: number; stamps: Promise<ItemStamp[]> }>;
  /** Per list, the revision last seen, the pages asked at it, and how many were asked per revision before. */
  private readonly asked = new LruCache<string, { revision: number; pages: number; perRevision: number }>(1000);

  constructor(
    stamps = 32 * 1024,
    private readonly pagesWorthAWindow = PAGES_WORTH_A_WINDOW,
  ) {
    this.windows = new LruCache(stamps, Infinity, (window) => window.size);
  }

  /**
   * Whether a list's pages are asked often enough between two revisions for a window to pay: a
   * window is up to a thousand stamps read and parsed, a page twenty. Beside 50 edits a second
   * each revision saw two or three pages of an order, and reading windows for them took the
   * process half as much time again per read as reading the pages did.
   */
  private worthIt(key: string, revision: number): boolean {
    const seen = this.asked.get(key) ?? { revision, pages: 0, perRevision: 0 };
    if (revision > seen.revision) {
      const moved = revision - seen.revision;
      seen.perRevision = (seen.perRevision + seen.pages / moved) / 2;
      seen.revision = revision;
      seen.pages = 0;
    }
    if (revision === seen.revision) seen.pages++;
    this.asked.set(key, seen);
    return seen.perRevision >= this.pagesWorthAWindow;
  }

  /**
   * Stamps `offset` to `offset + limit` of the list `question` names, of the window of its
   * leading stamps at `revision`, made by `read(size)` (the first `size` stamps) when none is kept;
   * undefined for a page deeper than the deepest window.
   */
  async page(
    productId: number,
    revision: number,
    question: unknown,
    page: { offset: number; limit: number },
    read: (size: number) => Promise<ItemStamp[]>,
  ): Promise<ItemStamp[] | undefined> {
    const end = page.offset + page.limit;
    if (end > LARGEST_WINDOW) return undefined;
    const size = Math.max(SMALLEST_WINDOW, 2 ** Math.ceil(Math.log2(end)));
    const list = `${productId}:${JSON.stringify(question)}`;
    const key = `${revision}:${size}:${list}`;
    let window = this.windows.get(key);
    const worth = this.worthIt(list, revision);
    if (!window && !worth) return undefined;
    if (!window) {
      // Kept while it is read: the pages asked meanwhile wait for the same read.
      const made = { size, stamps: read(size) };
      this.windows.set(key, made);
      made.stamps.catch(() => {
        if (this.windows.get(key) === made) this.windows.delete(key);
      });
      window = made;
    }
    return (await window.stamps).slice(page.offset, end);
  }
}
