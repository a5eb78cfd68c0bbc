import type { Db } from '../db/connection.js';
import type { ItemRow, ProductRow, UserRow } from '../db/schema.js';
import { productNotFound } from '../errors.js';
import { findItemsByIds, statusName } from '../items/index.js';
import { findUsersByIds } from '../users/index.js';
import { hasText, type SearchQuery, type Tokens } from './query.js';
import * as repository from './repository.js';
import type { Plan, SortColumn } from './repository.js';

/** Counts (totals and facets) stop here: past it a query is too broad for its count to help anyone. */
export const COUNT_CAP = 10_000;
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
  /** The page, in order, and the product of each. */
  rows: ItemRow[];
  products: Map<number, ProductRow>;
  /** How many match, up to COUNT_CAP. */
  total: number;
  facets?: Facets;
  /** No item matched the words, and these are titles close to them (the typo-tolerant fallback). */
  fuzzy: boolean;
}

/**
 * Searches the items of the caller's products (INTERFACE.md "Searching items"): a page in the
 * order asked, the total and, when asked, the facets, none of which ever counts an item of a
 * product the caller is not a member of. Words nothing matches fall back to titles that share
 * most of their three-letter pieces. Throws NotFound (`products`) for a product that is not the caller's.
 */
export async function searchItems(db: Db, viewer: Pick<UserRow, 'id'>, input: SearchInput): Promise<SearchResult> {
  const mine = await repository.searchableProducts(db, viewer.id);
  const products = new Map(mine.map((p) => [p.id, p]));
  if (input.productIds?.some((id) => !products.has(id))) throw productNotFound();
  const plan = await planOf(db, viewer, input, input.productIds ?? [...products.keys()]);
  let result = await run(db, plan, input);
  if (result.total === 0 && hasText(input.query) && input.offset === 0) {
    const ids = await closeTitles(db, plan);
    if (ids.length) {
      const fuzzy = await run(db, { ...plan, text: [], prefix: false, ids }, { ...input, sort: 'relevance' }, ids);
      result = { ...fuzzy, fuzzy: true };
    }
  }
  const rows = await findItemsByIds(db, result.ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return {
    rows: result.ids.map((id) => byId.get(id)).filter((r): r is ItemRow => r !== undefined),
    products,
    total: result.total,
    facets: result.facets,
    fuzzy: result.fuzzy,
  };
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

interface Found {
  ids: number[];
  total: number;
  facets?: Facets;
  fuzzy: boolean;
}

/** The page, total and facets of a plan; `ranked` orders the fallback's matches (closest first). */
async function run(db: Db, plan: Plan, input: SearchInput, ranked?: number[]): Promise<Found> {
  const facets = input.facets ? await facetsOf(db, plan) : undefined;
  const total = facets ? facets.total : await repository.countMatches(db, plan, COUNT_CAP);
  let ids: number[];
  if (ranked) ids = ranked.slice(input.offset, input.offset + input.limit);
  else if (total === 0) ids = [];
  else
    ids = await repository.searchPage(db, plan, {
      sort: input.sort,
      descending: input.descending,
      offset: input.offset,
      limit: input.limit,
    });
  return { ids, total, facets: facets?.facets, fuzzy: false };
}

async function facetsOf(db: Db, plan: Plan): Promise<{ facets: Facets; total: number }> {
  const counted = await repository.facetCounts(db, plan, COUNT_CAP, TAGS_SHOWN);
  const facets: Facets = { status: {}, type: {}, tag: {}, assignee: {} };
  const add = (to: Record<string, number>, key: string, n: number) => {
    to[key] = (to[key] ?? 0) + n;
  };
  const assigned = new Map<number | null, number>();
  let total = 0;
  for (const g of counted.groups) {
    total += g.n;
    add(facets.status, statusName(g.status), g.n);
    add(facets.type, g.type, g.n);
    assigned.set(g.assigned_to_id, (assigned.get(g.assigned_to_id) ?? 0) + g.n);
  }
  const ids = [...assigned.keys()].filter((id): id is number => id !== null);
  const emails = new Map((await findUsersByIds(db, ids)).map((u) => [u.id, u.email]));
  for (const [id, n] of assigned) add(facets.assignee, id === null ? 'none' : (emails.get(id) ?? String(id)), n);
  for (const t of counted.tags) facets.tag[t.tag] = t.n;
  return { facets, total };
}

/** The three-letter pieces of the tokens of words. */
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
  const wanted = trigramsOf(plan.text);
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
