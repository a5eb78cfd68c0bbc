import type { Move } from '../items/index.js';
import { itemNotFound, ValidationError } from '../errors.js';
import { asEnum, asInteger, asString, collectErrors, digitsToId, invalid, type ParamValue } from '../http/params.js';
import { parseListFilters, STATUS_NAMES, type ListFilters, type Status } from '../items/index.js';
import { searchOffset, namesCaller, parseSearchQuery, SEARCH_PAGE, SORTS, type SearchQuery } from '../search/index.js';
import { validEmail } from '../users/index.js';

/** The address a sign-in link is asked for, lower case. */
export function parseSignInRequest(p: Record<string, ParamValue>): { email: string } {
  const email = asString('email', p.email)?.trim().toLowerCase();
  if (!email || !validEmail(email))
    throw new ValidationError(
      { email: 'must be an email address, such as ada@example.com' },
      'Enter an email address, such as ada@example.com.',
    );
  return { email };
}

/** Tokens of sign-in links are 43 base64url characters; anything else names no link. */
export const wellFormedToken = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token);

/** What the board shows: its filters (as they stand in the URL) and, when paging one column, which. */
export interface BoardQuery {
  /** The filters as given, non-empty ones only: what links and forms of the board carry along. */
  filters: Record<string, string>;
  /** One column, from `offset`, or every column from its start. */
  status?: Status;
  offset: number;
  /** What the filters choose of the items, read by the items' own rules (a bad one is a 400 naming it). */
  list: ListFilters;
  /** The `q` filter, read by the search language's own parser: the board shows only what it matches. */
  search?: SearchQuery;
  /** The viewer, when `q` names them (`assignee:me`, `is:favorite`): the board is then theirs alone. */
  caller?: number;
}

export const BOARD_FILTERS = ['q', 'type', 'assignee', 'creator', 'tags', 'mine'] as const;

/**
 * The board's query: filters by type, assignee, creator and tags (as items.json has them) and
 * "mine" (assigned to the viewer), and optionally one column (`status`) from an offset.
 */
export function parseBoardQuery(p: Record<string, ParamValue>, viewerId: number): BoardQuery {
  const filters: Record<string, string> = {};
  for (const name of BOARD_FILTERS) {
    const value = asString(name, p[name])?.trim();
    if (value) filters[name] = value;
  }
  const status = asString('status', p.status)?.trim() || undefined;
  if (status !== undefined && !(STATUS_NAMES as readonly string[]).includes(status))
    throw new ValidationError({ status: `must be one of ${STATUS_NAMES.join(', ')}` });
  const offset = asString('offset', p.offset)?.trim() || '0';
  if (!/^\d{1,9}$/.test(offset)) throw new ValidationError({ offset: 'must be a whole number' });
  const mine = filters.mine !== undefined && filters.mine !== '0';
  const list = parseListFilters({
    type: filters.type,
    assigned_to: mine ? undefined : filters.assignee,
    created_by: filters.creator,
    tags: filters.tags,
  });
  if (mine) list.assignedTo = { id: viewerId };
  const search = filters.q === undefined ? undefined : parseSearchQuery(filters.q);
  const caller = search && namesCaller(search) ? viewerId : undefined;
  return { filters, status: status as Status | undefined, offset: status ? Number(offset) : 0, list, search, caller };
}

/** The results page's sorts, as the search service names them. */
export type SearchSort = (typeof SORTS)[number];

/** What the search page is asked: the query as typed, the one product it is confined to, the order and page. */
export interface SearchPageQuery {
  /** As typed (read by parseSearchQuery when searched, so that its refusal goes beside the field). */
  q: string;
  product?: number;
  sort: SearchSort;
  offset: number;
  limit: number;
}

/** Results a page shows unless asked for more (at most the API's largest page). */
export const SEARCH_PAGE_SIZE = 25;

/** The search page's parameters, each checked once (a bad one is a 400 naming it); `q` is kept as typed. */
export function parseSearchPage(p: Record<string, ParamValue>): SearchPageQuery {
  return collectErrors((field) => ({
    q: field(() => asString('q', p.q)) ?? '',
    product: field(() => {
      const raw = asString('product', p.product)?.trim();
      if (!raw) return undefined;
      return digitsToId(raw) ?? invalid('product', 'must be a product id');
    }),
    sort: field(() => asEnum<SearchSort>('sort', p.sort || undefined, SORTS)) ?? 'relevance',
    offset: field(() => searchOffset(p.offset)) ?? 0,
    limit: Math.min(field(() => asInteger('limit', p.limit, 1)) ?? SEARCH_PAGE_SIZE, SEARCH_PAGE.max),
  }));
}

/** `#123` or `123` as the whole query: the item number it names, to go straight to. */
export function itemNumberQuery(q: string): number | undefined {
  const m = /^#?(\d{1,9})$/.exec(q.trim());
  return m ? Number(m[1]) : undefined;
}

/** The board's query string for these filters (and a column page), for links and redirects. */
export function boardQueryString(filters: Record<string, string>, column?: { status: string; offset: number }): string {
  const q = new URLSearchParams();
  for (const name of BOARD_FILTERS) if (filters[name]) q.set(name, filters[name]);
  if (column) {
    q.set('status', column.status);
    if (column.offset > 0) q.set('offset', String(column.offset));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const MOVES = ['up', 'down', 'top', 'status', 'place'] as const;
/**
 * A move from a card's form: up past the card above, down past the one below, to the top, or to a
 * status; or, from a drag on the board, to a place in a column. A card's menu sends only `status`
 * (one button a status), which is a move to that status.
 */
export function parseMove(p: Record<string, ParamValue>): Move {
  const to = asString('to', p.to) ?? (asString('status', p.status) !== undefined ? 'status' : undefined);
  const number = (name: string): number => {
    const n = digitsToId(asString(name, p[name]) ?? '');
    if (n === undefined)
      throw new ValidationError({ [name]: 'must be an item number' }, 'There is no card to move past.');
    return n;
  };
  switch (to) {
    case 'up':
      return { to, above: number('above') };
    case 'down':
      return { to, below: number('below') };
    case 'top':
      return { to };
    case 'status':
      return { to, status: asString('status', p.status) ?? '' };
    case 'place':
      return {
        to,
        status: asString('status', p.status) ?? '',
        above: asString('above', p.above) ? number('above') : undefined,
        below: asString('below', p.below) ? number('below') : undefined,
      };
    default:
      throw new ValidationError({ to: `must be one of ${MOVES.join(', ')}` }, 'Choose a move.');
  }
}

/** The board filters a form sends back (hidden field `back`, a query string), re-read so only filters pass. */
export function returnFilters(p: Record<string, ParamValue>): Record<string, string> {
  const back = new URLSearchParams(asString('back', p.back) ?? '');
  const filters: Record<string, string> = {};
  for (const name of BOARD_FILTERS) {
    const value = back.get(name)?.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

/** The number of an `/items/{n}` path; anything but digits names no item. */
export function pagedItemNumber(raw: string): number {
  const n = digitsToId(raw);
  if (n === undefined) throw itemNotFound(raw);
  return n;
}

/**
 * Where to go after signing in: a path of the pages (`/app/...`) on this site, or undefined. Anything
 * else (another host, `//host`, backslashes, control characters, the sign-in pages) is ignored, so
 * a link cannot send a person elsewhere.
 */
export function safeNext(raw: ParamValue): string | undefined {
  if (typeof raw !== 'string' || raw.length > 2000 || !raw.startsWith('/app/')) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses.
  if (/[\\\u0000-\u001f\u007f]/.test(raw) || raw.startsWith('/app/sign-')) return undefined;
  const url = new URL(raw, 'http://shiplog.invalid');
  if (url.origin !== 'http://shiplog.invalid' || !url.pathname.startsWith('/app/')) return undefined;
  return url.pathname + url.search;
}

/** The matrix's filters as they stand in the URL, each trimmed; empty ones are none. */
export function matrixFilters(p: Record<string, ParamValue>): { status?: string; not_deployed_to?: string } {
  const filters: { status?: string; not_deployed_to?: string } = {};
  for (const name of ['status', 'not_deployed_to'] as const) {
    const value = asString(name, p[name])?.trim();
    if (value) filters[name] = value;
  }
  return filters;
}
