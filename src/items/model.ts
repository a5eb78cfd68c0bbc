import type { ItemRow } from '../db/schema.js';
import { indefiniteArticle } from './article.js';
/** The vocabulary of items (docs/INTERFACE.md §4.3, §5). */
export const ITEM_TYPES = ['story', 'task', 'defect', 'test'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/** In workflow order; the index is what the database stores, so priority order is index order. */
export const STATUSES = ['someday', 'backlog', 'in-progress', 'completed', 'accepted'] as const;
export type Status = (typeof STATUSES)[number];
/** What a client may set: `someday` only comes from imports and the admin tool. */
export const INPUT_STATUSES = ['backlog', 'in-progress', 'completed', 'accepted'] as const;
export const DEFAULT_LIST_STATUSES: Status[] = ['backlog', 'in-progress'];

export const statusCode = (s: Status): number => STATUSES.indexOf(s);
export const statusName = (code: number): Status => STATUSES[code];

export const SCORES = ['~', 'S', 'M', 'L', 'XL'] as const;
export const CLOSE_REASONS = ['fixed', 'invalid', 'duplicate', 'incomplete', 'wont-fix', 'works-for-me'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

export const ORDERS = ['priority', 'favorites', 'oldest', 'newest', 'recent', 'stale', 'active', 'abandoned'] as const;
export type Order = (typeof ORDERS)[number];

/** Gap between neighbouring positions: halved by each resort into it; when used up, the items around it are spread. */
export const SORT_STEP = 65536;

/** Lengths in characters, but `description`'s in bytes of UTF-8: it is what makes items big. */
export const LIMITS = { title: 255, who: 255, what: 255, why: 255, description: 65535, tag: 64 } as const;
/** How many tags an item may carry, and a list may filter by. */
export const MAX_TAGS = 100;
export const MAX_TAG_FILTER = 50;
/** How many environments a list may filter by (`deployed_to`, `not_deployed_to`), each as long as a deploy's. */
export const MAX_ENVIRONMENT_FILTER = 50;
export const ENVIRONMENT_LENGTH = 255;

/**
 * `deployed_to` lists an item's latest environments only, so that an item deployed to thousands
 * of them stays a small object: this many on the item itself, fewer on an item embedded in
 * another (a sub-item's `parent`, a deploy's `items`), which pages repeat hundreds of times.
 * `deployed_to_count` says how many there are; `deployed_to.json` pages through them all.
 */
export const DEPLOYED_TO_SHOWN = 10;
export const DEPLOYED_TO_SHOWN_EMBEDDED = 3;
/** Page sizes of `deployed_to.json`. */
export const DEPLOYED_TO_PAGE = { default: 100, max: 1000 } as const;

/**
 * Deepest start of a page of items. Every entry before a page is walked to, by one synchronous
 * query on the request loop: along an index that costs ~40 ms per million entries, but with a
 * filter the index does not hold (type, tags, people) every skipped row is read, ~200 ms at a
 * million. Past this bound (~20 ms at worst) the answer is a 400: narrow the list with filters.
 */
export const MAX_LIST_OFFSET = 100_000;
/**
 * With `children=true`, each entry before the page is walked to, sub-items counted: pages start no
 * deeper than this.
 */
export const MAX_CHILDREN_OFFSET = 10_000;
/** Page sizes of `children.json` (whose original form has no paging: the default shows them all, up to the maximum). */
export const CHILDREN_PAGE = { default: 500, max: 500 } as const;

export const isClosed = (s: Status): boolean => s === 'completed' || s === 'accepted';

/** `As a{n} {who}, I want {what} so that {why}.`, the article following the sound of `who`. */
export function storyTitle(who: string, what: string, why: string): string {
  return `As ${indefiniteArticle(who)} ${who}, I want ${what} so that ${why}.`;
}

export interface Progress {
  started_at: string | null;
  closed_at: string | null;
  accepted_at: string | null;
  close_reason: string | null;
}

/** How progress moves when an item enters `to` (docs/INTERFACE.md §5). */
export function progressOnEntering(to: Status, p: Progress, now: string, closeReason?: CloseReason): Progress {
  switch (to) {
    case 'someday':
    case 'backlog':
      return { started_at: p.started_at, closed_at: null, accepted_at: null, close_reason: null };
    case 'in-progress':
      return { started_at: p.started_at ?? now, closed_at: null, accepted_at: null, close_reason: null };
    case 'completed':
      return {
        started_at: p.started_at ?? now,
        closed_at: p.closed_at ?? now,
        accepted_at: null,
        close_reason: closeReason ?? p.close_reason ?? 'fixed',
      };
    case 'accepted':
      return {
        started_at: p.started_at ?? now,
        closed_at: p.closed_at ?? now,
        accepted_at: p.accepted_at ?? now,
        close_reason: closeReason ?? p.close_reason ?? 'fixed',
      };
  }
}

/**
 * The opaque part of an item's ETag (quoted in the header): the item and its version, so that the
 * tag of one item never passes for another's.
 */
export const entityTag = (item: Pick<ItemRow, 'id' | 'version'>): string => `${item.id}-${item.version}`;
