import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ItemRow, ProductRow, UserRow } from '../../db/schema.js';
import { classifyError } from '../../http/errors.js';
import { params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { presentItems, type ItemJson } from '../../items/index.js';
import {
  COUNT_CAP,
  fieldTerm,
  matchedExcerpt,
  matchedPieces,
  matchedTag,
  parseSearchQuery,
  searchableProductsOf,
  resultRows,
  searchItems,
  showsEveryWord,
  withoutTerm,
  withTerm,
  writtenTerms,
  type Facets,
  type SearchQuery,
  type SearchResult,
} from '../../search/index.js';
import { itemNumberQuery, parseSearchPage, SEARCH_PAGE_SIZE, type SearchPageQuery, type SearchSort } from '../input.js';
import { asText, formErrors } from '../pages.js';
import { sendPage } from '../session.js';
import { itemHref, personName, type FormState } from '../views/parts.js';
import type { FacetGroup, QueryLink, MatchedLine, SearchPageView, SearchResultLine } from '../views/search.js';
import { searchPage } from '../views/search.js';
import { sessionOrSignIn } from './products.js';

const searchQuery = params({ q: Param, product: Param, sort: Param, offset: Param, limit: Param });

/** The results page's address for a query, a product, a sort and a page (defaults left out). */
export function searchHref(o: { q: string; product?: number; sort?: SearchSort; offset?: number; limit?: number }) {
  const u = new URLSearchParams({ q: o.q });
  if (o.product !== undefined) u.set('product', String(o.product));
  if (o.sort && o.sort !== 'relevance') u.set('sort', o.sort);
  if (o.offset) u.set('offset', String(o.offset));
  if (o.limit && o.limit !== SEARCH_PAGE_SIZE) u.set('limit', String(o.limit));
  return `/app/search?${u}`;
}

/**
 * Why an item matched, beyond its title: an excerpt of its description unless the title already
 * shows every word of the query, and its tags, the words matched and the tags a `tag:` term names
 * marked. Fuzzy results matched titles only: their words mark nothing, their description is not shown.
 */
function matchedLine(item: ItemJson, query: SearchQuery, fuzzy: boolean): MatchedLine {
  const words = fuzzy ? { ...query, text: [] } : query;
  return {
    title: matchedPieces(item.title, words),
    excerpt:
      fuzzy || showsEveryWord(item.title, query)
        ? undefined
        : matchedExcerpt(item.description, query, { markdown: true }),
    tags: item.tags.map((tag) => matchedTag(tag, words)),
  };
}

/** The page's items as their products present them, in the order found. */
async function presentedLines(
  app: FastifyInstance,
  viewer: Pick<UserRow, 'id'>,
  result: SearchResult,
  query: SearchQuery,
): Promise<SearchResultLine[]> {
  const rows = await resultRows(app.db, result);
  const byProduct = new Map<number, ItemRow[]>();
  for (const row of rows) byProduct.set(row.product_id, [...(byProduct.get(row.product_id) ?? []), row]);
  const json = new Map<number, ItemJson>();
  for (const [productId, rows] of byProduct) {
    const product = result.products.get(productId)!;
    const items = await presentItems(app.db, { product, rows, urls: app.config, viewerId: viewer.id });
    for (const [n, row] of rows.entries()) json.set(row.id, items[n]);
  }
  return rows.map((row) => {
    const item = json.get(row.id)!;
    return {
      productId: row.product_id,
      productName: result.products.get(row.product_id)!.name,
      number: item.number,
      type: item.type,
      status: item.status,
      ...matchedLine(item, query, result.fuzzy),
      assignee: item.assigned_to ? personName(item.assigned_to) : undefined,
    };
  });
}

const FACET_FIELDS = [
  ['status', 'Status'],
  ['type', 'Type'],
  ['tag', 'Tag'],
  ['assignee', 'Assignee'],
] as const;

/** Each facet's values as links that add their term to the query (or take it out when it is there already). */
function facetGroups(page: SearchPageQuery, facets: Facets | undefined): FacetGroup[] {
  if (!facets) return [];
  const written = writtenTerms(page.q);
  return FACET_FIELDS.map(([field, name]) => ({
    name,
    entries: Object.entries(facets[field])
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([value, count]) => {
        const label = field === 'assignee' && value === 'none' ? 'nobody' : value;
        const term = field === 'assignee' && value === 'none' ? undefined : fieldTerm(field, value);
        if (term === undefined) return { label, count };
        const there = written.find((w) => w.raw.toLowerCase() === term.toLowerCase());
        const q = there ? withoutTerm(page.q, there) : withTerm(page.q, term);
        return { label, count, current: there !== undefined, href: searchHref({ ...page, q, offset: 0 }) };
      }),
  }));
}

const SORT_LABELS: [SearchSort, string][] = [
  ['relevance', 'relevance'],
  ['last_modified', 'last modified'],
  ['created_at', 'created'],
  ['number', 'number'],
];

/** What the page shows of a search: its lines, the facets, the terms to take out, the sorts and pages. */
async function resultsView(
  app: FastifyInstance,
  viewer: Pick<UserRow, 'id'>,
  page: SearchPageQuery,
  query: SearchQuery,
): Promise<NonNullable<SearchPageView['results']>> {
  const result = await searchItems(app.db, viewer, {
    query,
    productIds: page.product === undefined ? undefined : [page.product],
    sort: page.sort,
    descending: true,
    offset: page.offset,
    limit: page.limit,
    facets: true,
  });
  const at = (offset: number) => searchHref({ ...page, offset });
  const end = page.offset + result.stamps.length;
  return {
    lines: await presentedLines(app, viewer, result, query),
    total: result.total,
    capped: result.total >= COUNT_CAP,
    offset: page.offset,
    fuzzy: result.fuzzy,
    facets: facetGroups(page, result.facets),
    terms: writtenTerms(page.q).map(
      (t): QueryLink => ({ label: t.raw, href: searchHref({ ...page, q: withoutTerm(page.q, t), offset: 0 }) }),
    ),
    sorts: SORT_LABELS.map(([sort, label]) => ({
      label,
      href: searchHref({ ...page, sort, offset: 0 }),
      current: sort === page.sort,
    })),
    previous: page.offset > 0 ? at(Math.max(0, page.offset - page.limit)) : undefined,
    next: end < result.total && result.stamps.length > 0 ? at(end) : undefined,
  };
}

/**
 * `#123` or `123` as the whole query: the one item of that number the person can see (in the
 * product asked, or in the only one of theirs that has it), or undefined (the results are shown).
 */
async function itemAsked(app: FastifyInstance, viewer: Pick<UserRow, 'id'>, page: SearchPageQuery) {
  const number = itemNumberQuery(page.q);
  if (number === undefined) return undefined;
  const found = await searchItems(app.db, viewer, {
    query: {
      text: [],
      prefix: false,
      excluded: [],
      terms: [{ negated: false, condition: { kind: 'number', number } }],
    },
    productIds: page.product === undefined ? undefined : [page.product],
    sort: 'relevance',
    descending: true,
    offset: 0,
    limit: 2,
    facets: false,
  });
  return found.stamps.length === 1 ? itemHref(found.stamps[0].product_id, number) : undefined;
}

/** The form as sent (bounded), with the reasons of what was refused. */
function refusedForm(p: Record<string, ParamValue>, errors: Record<string, string>): FormState {
  const typed = asText(p);
  return { values: { q: (typed.q ?? '').slice(0, 1000), product: (typed.product ?? '').slice(0, 20) }, errors };
}

/**
 * The search page (`/app/search`): the caller's products' items that match a query, through the
 * same service as `items/search.json`; `#123` goes straight to the item; a query the language
 * refuses comes back with its reason beside the field (400), a product not theirs beside its own (404).
 */
export async function searchPageRoutes(
  app: FastifyInstance,
  { signIn }: { signIn: (request: FastifyRequest) => string },
): Promise<void> {
  app.get('/search', { schema: { querystring: searchQuery } }, async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    const viewer = session.user;
    const p = requestParams(request);
    const mine: ProductRow[] = await searchableProductsOf(app.db, viewer);
    const products = mine.map((m) => ({ id: m.id, name: m.name }));
    const show = (status: number, view: Omit<SearchPageView, 'products'>) =>
      sendPage(reply, status, 'Search', searchPage({ ...view, products }), session, { search: false });
    let page: SearchPageQuery;
    let query: SearchQuery;
    try {
      page = parseSearchPage(p);
      query = parseSearchQuery(page.q);
    } catch (err) {
      const refused = formErrors(err);
      if (!refused) throw err;
      return show(classifyError(err).status, { form: refusedForm(p, refused.errors) });
    }
    if (page.product !== undefined && !mine.some((m) => m.id === page.product))
      return show(404, { form: refusedForm(p, { product: 'is not one of your products' }) });
    const item = await itemAsked(app, viewer, page);
    if (item) return reply.header('cache-control', 'no-store').redirect(item, 303);
    const form = { values: { q: page.q, product: page.product === undefined ? '' : String(page.product) }, errors: {} };
    return show(200, { form, results: await resultsView(app, viewer, page, query) });
  });
}
