import {
  asBoolean,
  asEnum,
  asInteger,
  asList,
  asString,
  collectErrors,
  digitsToId,
  invalid,
  type ParamValue,
} from '../http/params.js';
import { parseSearchQuery } from './query.js';
import type { SortColumn } from './repository.js';
import type { SearchInput } from './service.js';

/** Sizes of a page of results (Sprint.ly's default is its maximum; ours is smaller). */
export const SEARCH_PAGE = { default: 50, max: 250 } as const;
/** Deepest start of a page: past it, narrow the query. */
export const MAX_SEARCH_OFFSET = 10_000;
export const SORTS = ['relevance', 'last_modified', 'created_at', 'number'] as const;
/** Products a search may name in `products=`. */
const MAX_PRODUCTS = 100;

/**
 * The parameters of `items/search.json`, each checked once; every bad one named in one 400
 * (`q`'s naming the term it cannot read).
 */
export function parseSearch(p: Record<string, ParamValue>): SearchInput {
  return collectErrors((field) => {
    const order = field(() => asEnum('order', p.order, ['asc', 'desc'] as const));
    return {
      query: field(() => parseSearchQuery(asString('q', p.q) ?? '')) ?? parseSearchQuery(''),
      productIds: field(() => productIdsOf(p.products)),
      sort: field(() => asEnum<SortColumn>('sort', p.sort, SORTS)) ?? 'relevance',
      descending: order !== 'asc',
      offset: field(() => searchOffset(p.offset)) ?? 0,
      limit: Math.min(field(() => asInteger('limit', p.limit, 1)) ?? SEARCH_PAGE.default, SEARCH_PAGE.max),
      facets: field(() => asBoolean('facets', p.facets)) ?? false,
    };
  });
}

/** The matches a search skips: the API's and the results page's one rule (at most MAX_SEARCH_OFFSET). */
export function searchOffset(value: ParamValue): number | undefined {
  const offset = asInteger('offset', value);
  if (offset !== undefined && offset > MAX_SEARCH_OFFSET)
    invalid('offset', `must be at most ${MAX_SEARCH_OFFSET}; narrow the query instead`);
  return offset;
}

function productIdsOf(value: ParamValue): number[] | undefined {
  const list = asList('products', value);
  if (list === undefined || list.length === 0) return undefined;
  if (list.length > MAX_PRODUCTS) invalid('products', `at most ${MAX_PRODUCTS} products`);
  return [
    ...new Set(list.map((entry) => digitsToId(entry.trim()) ?? invalid('products', `"${entry}" is not a product id`))),
  ];
}
