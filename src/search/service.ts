import type { Db } from '../db/connection.js';
import type { ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { productNotFound } from '../errors.js';
import { findItemsByIds, statusName } from '../items/index.js';
import { findUsersByIds } from '../users/index.js';
import { hasText, type SearchQuery, type Tokens } from './query.js';
import { LruCache } from '../lru.js';
import * as repository from './repository.js';
import type { FacetRows, Plan, SearchStamp, SortColumn } from './repository.js';

/**
 * Matches are counted, faceted and ranked among the newest this many: past it a query is too
 * broad for its count to help anyone, and a common word at a million items would otherwise cost
 * reading most of the index on every request.
 */
export const COUNT_CAP = 1_000;
/** Tags a facet shows, most used first. */
export const TAGS_SHOWN = 50;
/**
 * Candidates the typo-tolerant fallback reads from the title index, and the share of the words'
 * three-letter pieces a title must hold.
 */
const FALLBACK_CANDIDATES = 500;
const FALLBACK_SIMILARITY = 0.5;

export interface SearchInput {
  query: SearchQuery;
  /** Only these of the caller's products (`products=`); every one of them when absent. */
  productIds?: number[];
  sort: SortColumn;
  descending: boolean;
  offset: number;
  limit: number;
  facets: boolean;
}

export interface Facets {
  status: Record<string, number>;
  type: Record<string, number>;
  tag: Record<string, number>;
  /** By the assignee's email; `none` for unassigned items. */
  assignee: Record<string, number>;
}

export interface SearchResult {
  /** The page, in order (the stamps of its items: their JSON is kept by version), and the product of each. */
  stamps: SearchStamp[];
  products: Map<number, ProductRow>;
  /** How many match, up to COUNT_CAP. */
  total: number;
  facets?: Facets;
  /** No item matched the words, and these are titles close to them (the typo-tolerant fallback). */
  fuzzy: boolean;
}

/** What a query matched, at the products' revisions: the newest COUNT_CAP matches, ranked when it has words. */
export interface MatchWindow {
  /** Newest first, or closest first for the fallback. */
  ids: number[];
  /** By relevance, when the query has words. */
  ranked?: number[];
  fuzzy: boolean;
  facets?: FacetRows;
}

/**
 * Windows kept per database, one per query, with the revisions of the products searched when it
 * was read: every change of what an item shows (its text, tags, comments, status, deploys,
 * favorites) moves its product's revision in the change's own transaction, so a search after a
 * change, on any instance, reads a product row with the new revision and never the window kept
 * before it. That window then goes: a window of past revisions can never be asked for again, and a
 * product written to every second would otherwise fill the cache with them (up to 16 KB each). A
 * minute at most, for what moves no revision (a member's email, in the assignee facet, is read
 * afresh anyway).
 */
const kept = new WeakMap<Db, KeptWindows>();
const KEPT_WINDOWS = 500;
const KEPT_MS = 60_000;

/** Windows by query; requests that ask for one being read, at the same revisions, wait for that read instead. */
export class KeptWindows {
  private readonly windows = new LruCache<string, { revisions: string; window: MatchWindow }>(KEPT_WINDOWS, KEPT_MS);
  private readonly reading = new Map<string, Promise<MatchWindow>>();

  async getOrMake(query: string, revisions: string, make: () => Promise<MatchWindow>): Promise<MatchWindow> {
    const known = this.windows.get(query);
    if (known?.revisions === revisions) return known.window;
    const key = `${revisions} ${query}`;
    const underway = this.reading.get(key);
    if (underway) return underway;
    const made = make().finally(() => this.reading.delete(key));
    this.reading.set(key, made);
    const window = await made;
    // A read that ends after one at later revisions puts its own back: the next search, seeing the
    // later revisions, reads again. Revisions are compared on every look-up, never ordered.
    this.windows.set(query, { revisions, window });
    return window;
  }

  /** Windows kept, of any revisions. */
  get size(): number {
    return this.windows.size;
  }
}

function keptOf(db: Db): KeptWindows {
  const known = kept.get(db);
  if (known) return known;
  const cache = new KeptWindows();
  kept.set(db, cache);
  return cache;
}

/**
 * Searches the items of the caller's products (INTERFACE.md "Searching items"): a page in the
 * order asked, the total and, when asked, the facets, none of which ever counts an item of a
 * product the caller is not a member of. Words nothing matches fall back to titles that share
 * most of their three-letter pieces. Throws NotFound (`products`) for a product that is not the caller's.
 */
export async function searchItems(
  db: Db,
  viewer: Pick<UserRow, 'id'>,
  input: SearchInput,
  searchable?: ProductRow[],
): Promise<SearchResult> {
  const mine = searchable ?? (await repository.searchableProducts(db, viewer.id));
  const products = new Map(mine.map((p) => [p.id, p]));
  if (input.productIds?.some((id) => !products.has(id))) throw productNotFound();
  const searched = input.productIds ?? [...products.keys()];
  const plan = await planOf(db, viewer, input, searched);
  const revisions = JSON.stringify(searched.map((id) => products.get(id)!.revision));
  const query = JSON.stringify([
    searched,
    plan.text,
    plan.prefix,
    plan.excluded,
    plan.terms,
    [...plan.people],
    plan.terms.some((t) => t.condition.kind === 'favorite') ? viewer.id : 0,
  ]);
  const cache = keptOf(db);
  const window = await cache.getOrMake(query, revisions, () => windowOf(db, plan));
  if (input.facets) window.facets ??= await repository.facetCounts(db, window.ids, TAGS_SHOWN);

  let ids: number[];
  if (input.sort === 'relevance' || window.fuzzy) {
    const ordered = window.ranked ?? window.ids;
    ids = (input.descending ? ordered : [...ordered].reverse()).slice(input.offset, input.offset + input.limit);
  } else if (window.ids.length === 0) ids = [];
  else ids = await repository.sortedPage(db, plan, { ...input, sort: input.sort });
  // A kept window may name an item archived, or moved out of reach, since: the items as they are now count.
  const stamps = (await repository.searchStamps(db, ids)).filter((s) => s.archived === 0 && products.has(s.product_id));
  const byId = new Map(stamps.map((s) => [s.id, s]));
  return {
    stamps: ids.map((id) => byId.get(id)).filter((s): s is SearchStamp => s !== undefined),
    products,
    total: window.ids.length,
    facets: window.facets ? await facetsOf(db, window.facets) : undefined,
    fuzzy: window.fuzzy,
  };
}

/** The rows of a page of results, in its order (for pages that show more than the item JSON). */
export async function resultRows(db: Db, result: SearchResult): Promise<ItemRow[]> {
  const ids = result.stamps.map((s) => s.id);
  const byId = new Map((await findItemsByIds(db, ids)).map((r) => [r.id, r]));
  return result.stamps.flatMap((s) => byId.get(s.id) ?? []);
}

/** The products a person's search reaches: those they are a member of, not archived, by id. */
export function searchableProductsOf(db: Db, viewer: Pick<UserRow, 'id'>): Promise<ProductRow[]> {
  return repository.searchableProducts(db, viewer.id);
}

/** The query with its people resolved to the members they name. */
async function planOf(db: Db, viewer: Pick<UserRow, 'id'>, input: SearchInput, productIds: number[]): Promise<Plan> {
  const people = new Map<number, number[]>();
  for (const [index, term] of input.query.terms.entries()) {
    const c = term.condition;
    if (c.kind !== 'assignee' && c.kind !== 'author') continue;
    people.set(index, 'me' in c.person ? [viewer.id] : await repository.membersNamed(db, productIds, c.person));
  }
  const { text, prefix, excluded, terms } = input.query;
  return { productIds, viewerId: viewer.id, text, prefix, excluded, terms, people };
}

/** The newest matches, ranked when the query has words; titles close to the words when nothing matches them. */
async function windowOf(db: Db, plan: Plan): Promise<MatchWindow> {
  const matched = await repository.matchWindow(db, plan, COUNT_CAP);
  const { ids } = matched;
  if (!hasText(plan)) return { ids, fuzzy: false };
  if (ids.length) return { ids, ranked: await repository.rankWindow(db, plan, matched), fuzzy: false };
  const close = await closeTitles(db, plan);
  return { ids: close, fuzzy: close.length > 0 };
}

async function facetsOf(db: Db, counted: FacetRows): Promise<Facets> {
  const facets: Facets = { status: {}, type: {}, tag: {}, assignee: {} };
  const add = (to: Record<string, number>, key: string, n: number) => {
    to[key] = (to[key] ?? 0) + n;
  };
  const assigned = new Map<number | null, number>();
  for (const g of counted.groups) {
    add(facets.status, statusName(g.status), g.n);
    add(facets.type, g.type, g.n);
    assigned.set(g.assigned_to_id, (assigned.get(g.assigned_to_id) ?? 0) + g.n);
  }
  const ids = [...assigned.keys()].filter((id): id is number => id !== null);
  const emails = new Map((await findUsersByIds(db, ids)).map((u) => [u.id, u.email]));
  for (const [id, n] of assigned) add(facets.assignee, id === null ? 'none' : (emails.get(id) ?? String(id)), n);
  for (const t of counted.tags) facets.tag[t.tag] = t.n;
  return facets;
}

/** The most three-letter pieces the typo-tolerant fallback looks for. */
const FALLBACK_PIECES = 32;

/** The three-letter pieces of the tokens of words, in the order they come. */
function trigramsOf(words: Tokens[]): string[] {
  const pieces = new Set<string>();
  for (const token of words.flat()) {
    const chars = [...token];
    for (let i = 0; i + 3 <= chars.length; i++) pieces.add(chars.slice(i, i + 3).join(''));
  }
  return [...pieces];
}

/**
 * The typo-tolerant fallback: items whose titles hold at least half of the words' three-letter
 * pieces, closest first. The index gives candidates; the share is measured here, the same way on
 * both databases.
 */
async function closeTitles(db: Db, plan: Plan): Promise<number[]> {
  // A title is a few words: the pieces of the first words are enough to find it, and what a member
  // types bounds the statement (at most FALLBACK_PIECES alternatives, however long the query).
  const wanted = trigramsOf(plan.text).slice(0, FALLBACK_PIECES);
  if (!wanted.length) return [];
  const candidates = await repository.titleCandidates(db, plan, wanted, FALLBACK_CANDIDATES);
  return candidates
    .map((c) => {
      const have = new Set(
        trigramsOf([
          c.title
            .normalize('NFC')
            .toLowerCase()
            .split(/[^\p{L}\p{N}]+/u),
        ]),
      );
      return { id: Number(c.id), share: wanted.filter((t) => have.has(t)).length / wanted.length };
    })
    .filter((c) => c.share >= FALLBACK_SIMILARITY)
    .sort((a, b) => b.share - a.share || b.id - a.id)
    .map((c) => c.id);
}

/** One step of the background merge of the index's segments (see search/merge.ts). */
export async function mergeSearchIndex(db: Db, pages: number): Promise<boolean> {
  return repository.mergeIndexStep(db, pages);
}
