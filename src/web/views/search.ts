import { html, type Html } from './html.js';
import { fieldError, type FormState, invalidAttrs, itemHref, otherErrors, selectOptions } from './parts.js';

/** A piece of a text: the words a query matched are marked. */
export interface MarkedPiece {
  text: string;
  marked: boolean;
}

/** What shows why a result matched: its title, an excerpt of its description, its tags, each marked. */
export interface MatchedLine {
  title: MarkedPiece[];
  /** Around the first word matched in the description; none when the title shows every word. */
  excerpt?: MarkedPiece[];
  tags: MarkedPiece[][];
}

/** One result, compact: number and title, a line of excerpt, then type, status, product, assignee and tags. */
export interface SearchResultLine extends MatchedLine {
  productId: number;
  productName: string;
  number: number;
  type: string;
  status: string;
  assignee?: string;
}

/** A link that changes the query: a facet's value (which adds its term), a term taken out, a sort, a page. */
export interface QueryLink {
  label: string;
  href: string;
  /** The value already in the query (a facet's, a sort): the link then takes it out, or is the current one. */
  current?: boolean;
  count?: number;
}

/** A facet's value: a link adding its term, or taking it out when the query has it; none for a value no term names. */
export type FacetEntry = Omit<QueryLink, 'href'> & { href?: string };

export interface FacetGroup {
  name: string;
  entries: FacetEntry[];
}

export interface SearchPageView {
  /** `q` and `product` as typed, and their reasons when refused. */
  form: FormState;
  products: { id: number; name: string }[];
  /** Undefined when the query was refused: nothing was searched. */
  results?: {
    lines: SearchResultLine[];
    total: number;
    /** The total is the most the search counts: there may be more. */
    capped: boolean;
    offset: number;
    /** Nothing matched the words: these are the closest titles. */
    fuzzy: boolean;
    facets: FacetGroup[];
    terms: QueryLink[];
    sorts: QueryLink[];
    previous?: string;
    next?: string;
  };
}

const SHOWN_FIELDS = ['q', 'product'];

/** The search form, as typed; a refused query's reason beside the field (which forms.js focuses). */
function searchForm(view: SearchPageView): Html {
  const s = view.form;
  const products = view.products.map((p): [string, string] => [String(p.id), p.name]);
  return html`<form class="search-page" role="search" method="get" action="/app/search">
${otherErrors(s, SHOWN_FIELDS)}<p><label for="search-q">Search items</label>\
<input id="search-q" type="search" name="q" maxlength="500" value="${s.values.q ?? ''}" \
aria-keyshortcuts="/"${s.errors.q ? invalidAttrs(s, 'q', 'search-hint') : html` aria-describedby="search-hint"`}> \
<button type="submit">Search</button>${fieldError(s, 'q', 'The query')}
<small id="search-hint" class="muted">words (the last one as typed so far), "a phrase", -word, tag:ui, \
status:backlog, type:defect, assignee:me, author:ada, is:open, is:blocked, has:comments, deployed:production, \
#123 (straight to it)</small></p>
<p><label for="search-product">In</label><select id="search-product" name="product"${invalidAttrs(s, 'product')}>\
<option value="">all your products</option>${selectOptions(products, s.values.product)}</select>\
${fieldError(s, 'product', 'The product')}</p>
</form>`;
}

/** A link of the page that changes the query; the current one is said so. */
const queryLink = (l: QueryLink, extra: Html | '' = ''): Html =>
  html`<a href="${l.href}"${l.current ? html` aria-current="true"` : ''}>${l.label}${extra}</a>`;

const removeNote = html`<span class="sr-only"> (in the query: remove it)</span>`;

function facetsHtml(facets: FacetGroup[]): Html | '' {
  const shown = facets.filter((f) => f.entries.length);
  if (!shown.length) return '';
  return html`<section class="facets" aria-labelledby="facets-title"><h2 id="facets-title">Narrow</h2>\
${shown.map(
  (f) =>
    html`<h3>${f.name}</h3><ul>${f.entries.map(
      (e) =>
        html`<li>${e.href ? queryLink({ ...e, href: e.href }, e.current ? removeNote : '') : e.label} \
<span class="count">${e.count ?? ''}</span></li>`,
    )}</ul>`,
)}</section>`;
}

const marked = (pieces: MarkedPiece[]) => pieces.map((p) => (p.marked ? html`<mark>${p.text}</mark>` : p.text));

/** A result: its title, a line of its description when that shows why it matched, then what it is and its tags. */
function lineHtml(r: SearchResultLine): Html {
  const title = r.title.length ? marked(r.title) : '(untitled)';
  const tagList = r.tags.map((t) => html`<span>${marked(t)}</span>`);
  const tags = r.tags.length
    ? html` \u00b7 <span class="sr-only">tags:</span><span class="tags">${tagList}</span>`
    : '';
  return html`<li><p class="title"><a href="${itemHref(r.productId, r.number)}">#${r.number} ${title}</a></p>\
${r.excerpt ? html`<p class="excerpt">${marked(r.excerpt)}</p>` : ''}\
<p class="meta"><span class="type type-${r.type}">${r.type}</span> \u00b7 ${r.status} \u00b7 \
<a href="/app/products/${r.productId}/board">${r.productName}</a>\
${r.assignee ? html` \u00b7 <span class="who">${r.assignee}</span>` : ''}${tags}</p></li>`;
}

function resultsHtml(results: NonNullable<SearchPageView['results']>): Html {
  const { lines, total, offset } = results;
  const counted = `${total}${results.capped ? '+' : ''} item${total === 1 ? '' : 's'}`;
  const match = `${counted} match${total === 1 ? 'es' : ''}`;
  const said = lines.length
    ? `${match}; ${offset + 1}\u2013${offset + lines.length} shown.`
    : total
      ? `${match}; none past ${offset}.`
      : 'No item matches.';
  const fuzzy = results.fuzzy ? html` <span class="muted">No item has those words: these titles are close.</span>` : '';
  const terms = results.terms.length
    ? html`<p class="terms">Filters: ${results.terms.map(
        (t) =>
          html`<span class="term">${t.label} <a href="${t.href}" aria-label="Remove ${t.label}">\u00d7</a></span> `,
      )}</p>`
    : '';
  const sortLinks = results.sorts.map((l) => html`${queryLink(l)} `);
  const sorts = html`<nav class="sorts" aria-label="Sort">Sort: ${sortLinks}</nav>`;
  const pages = [
    results.previous ? html`<a href="${results.previous}" rel="prev">Previous</a>` : '',
    results.next ? html`<a href="${results.next}" rel="next">Next</a>` : '',
  ];
  const paging = results.previous || results.next ? html`<nav class="pages" aria-label="Pages">${pages}</nav>` : '';
  return html`<p class="summary" role="status">${said}${fuzzy}</p>
${terms}${sorts}
<div class="search-results">\
<section class="results" aria-labelledby="results-title"><h2 id="results-title" class="sr-only">Results</h2>\
<ol class="results">${lines.map(lineHtml)}</ol>${paging}</section>${facetsHtml(results.facets)}</div>`;
}

/** The search page: the form, then (unless the query was refused) the results, facets, sorts and pages. */
export function searchPage(view: SearchPageView): Html {
  return html`${searchForm(view)}
${view.results ? resultsHtml(view.results) : ''}`;
}
