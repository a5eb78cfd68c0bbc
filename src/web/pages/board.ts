import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ItemRow } from '../../db/schema.js';
import { digitsToId, params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  INPUT_STATUSES,
  ITEM_TYPES,
  listItems,
  listQuery,
  moveItem,
  presentItems,
  STATUS_NAMES,
  subItemCounts,
  subItemsOf,
  assignedSubItems,
  findItemsByNumbers,
  statusName,
  type ItemJson,
  type Status,
} from '../../items/index.js';
import type { ProductScope } from '../../scope.js';
import { COUNT_CAP, searchItems } from '../../search/index.js';
import { classifyError } from '../../http/errors.js';
import {
  BOARD_FILTERS,
  boardQueryString,
  parseBoardQuery,
  parseMove,
  returnFilters,
  type BoardQuery,
} from '../input.js';
import { prefersJson } from '../../http/negotiate.js';
import { checkToken, formErrors, productOf, sessionOf, viewerOf } from '../pages.js';
import type { RenderedPages } from '../rendered-pages.js';
import { membersOf } from '../service.js';
import { sendHtml } from '../session.js';
import { boardPage, type BoardCard, type BoardColumn, type BoardView } from '../views/board.js';
import { layout } from '../views/layout.js';
import type { FormState } from '../views/parts.js';
import { ItemPath, numberOf, ProductPath, productPath, redirectAfterPost } from './common.js';

/** Cards of a column page. */
export const BOARD_PAGE = 25;

const boardQuery = params({
  q: Param,
  created: Param,
  moved: Param,
  type: Param,
  assignee: Param,
  creator: Param,
  tags: Param,
  mine: Param,
  status: Param,
  offset: Param,
});

/** A column as read: its page of rows, with one row either side of it, and its person's sub-items. */
type Column = Omit<BoardColumn, 'cards' | 'subCards'> & { rows: ItemRow[]; assigned: ItemRow[] };

/** Done work is read newest first: the latest finished items are what a team looks for there. */
export const DONE: readonly Status[] = ['completed', 'accepted'];

/** One column's page of rows, with one row either side of it: the cards a card at its edge moves past. */
async function loadColumn(
  app: FastifyInstance,
  scope: ProductScope,
  query: BoardQuery,
  status: Status,
  matches: number[] | undefined,
) {
  const done = DONE.includes(status);
  const input = listQuery({
    ...query.list,
    ids: matches,
    statuses: [status],
    offset: Math.max(0, query.offset - 1),
    limit: BOARD_PAGE + 2,
    order: done ? 'recent' : 'priority',
  });
  const { rows, total } = await listItems(app.db, scope, input, app.listCounts);
  // A board filtered by assignee shows that person's sub-items too, whose stories may be another's.
  const person = query.list.assignedTo;
  const assigned =
    query.offset === 0 && person && 'id' in person && matches === undefined
      ? await assignedSubItems(app.db, scope, { status, assignedTo: person.id, limit: BOARD_PAGE })
      : [];
  return { status, total, offset: query.offset, rows, assigned, ordered: !done } satisfies Column;
}

/** The rows a column shows as cards (its neighbours either side left out). */
const shownOf = (c: Column): ItemRow[] => {
  const first = c.offset > 0 ? 1 : 0;
  return c.rows.slice(first, first + BOARD_PAGE);
};

/**
 * The columns a board shows: every status but someday, which shows only while it holds items
 * (clients cannot move items there, but items brought in may sit there), or the one asked for.
 */
async function loadColumns(app: FastifyInstance, scope: ProductScope, query: BoardQuery): Promise<Column[]> {
  const columns: Column[] = [];
  const matches = await searchMatches(app, scope, query);
  for (const s of query.status ? [query.status] : STATUS_NAMES) {
    const c = await loadColumn(app, scope, query, s, matches);
    if (s !== 'someday' || query.status || c.total > 0 || c.assigned.length > 0) columns.push(c);
  }
  return columns;
}

/**
 * The items the board's query (`q`) matches, by the search service itself (the same language,
 * rules and membership as the search page and items/search.json): its newest COUNT_CAP matches,
 * as a search counts them. Undefined when the board has no query.
 */
async function searchMatches(app: FastifyInstance, scope: ProductScope, query: BoardQuery) {
  if (!query.search) return undefined;
  const found = await searchItems(app.db, scope.user, {
    query: query.search,
    productIds: [scope.product.id],
    sort: 'relevance',
    descending: true,
    offset: 0,
    limit: COUNT_CAP,
    facets: false,
  });
  return found.stamps.map((s) => s.id);
}

/** What the board shows: each column's page of cards with their neighbours, the filters, the members. */
export async function loadBoard(
  app: FastifyInstance,
  { scope, query, newItem }: { scope: ProductScope; query: BoardQuery; newItem?: FormState },
): Promise<Omit<BoardView, 'viewer'>> {
  const columns = await loadColumns(app, scope, query);
  const shownRows = columns.flatMap(shownOf);
  const stories = shownRows.filter((r) => r.type === 'story').map((r) => r.id);
  const subRows = await subItemsOf(app.db, stories);
  const assignedRows = columns.flatMap((c) => c.assigned);
  const allRows = [...shownRows, ...subRows, ...assignedRows];
  const present = { product: scope.product, rows: allRows, urls: app.config, viewerId: scope.user.id };
  const [json, counts, members] = await Promise.all([
    presentItems(app.db, present),
    subItemCounts(
      app.db,
      shownRows.map((r) => r.id),
    ),
    membersOf(app.db, scope),
  ]);
  const byId = new Map(allRows.map((r, n) => [r.id, json[n]]));
  const subsOf = new Map<number, ItemJson[]>();
  for (const r of subRows) subsOf.set(r.parent_id!, [...(subsOf.get(r.parent_id!) ?? []), byId.get(r.id)!]);
  const cardsOf = (c: Column): BoardCard[] => {
    const first = c.offset > 0 ? 1 : 0;
    const own = shownOf(c).map((row, n) => ({
      item: byId.get(row.id)!,
      subItems: counts.get(row.id) ?? 0,
      children: subsOf.get(row.id) ?? [],
      above: c.ordered ? c.rows[first + n - 1]?.number : undefined,
      below: c.ordered ? c.rows[first + n + 1]?.number : undefined,
    }));
    return own;
  };
  return {
    product: productOf(scope),
    columns: columns.map((c) => ({
      status: c.status,
      total: c.total,
      offset: c.offset,
      ordered: c.ordered,
      cards: cardsOf(c),
      subCards: c.assigned.map((row) => ({ item: byId.get(row.id)!, subItems: 0, children: [] })),
    })),
    filters: query.filters,
    single: query.status !== undefined,
    pageSize: BOARD_PAGE,
    members,
    types: ITEM_TYPES,
    statuses: INPUT_STATUSES,
    newItem,
    revision: Number(scope.product.revision),
  };
}

/**
 * The board, or one column of it, as the query asks; a form's errors go with the new-item form.
 * Every member of the same role asking the same query of the same revision sees the same board, so it is kept.
 */
export async function renderBoard(
  app: FastifyInstance,
  o: {
    boards: RenderedPages;
    request: FastifyRequest;
    reply: FastifyReply;
    query: BoardQuery;
    status: number;
    newItem?: FormState;
    notice?: string;
    /** The filter form as sent, when its filters were refused. */
    filterForm?: FormState;
  },
) {
  const scope = o.request.scope;
  // Admins' navigation has their pages too: they share boards with admins only.
  const role = scope.admin ? 'admin' : 'member';
  const key =
    o.status === 200 && o.newItem === undefined && o.notice === undefined
      ? `${scope.product.id}:${scope.product.revision}:${role}:${JSON.stringify(o.query)}`
      : undefined;
  const title = `Board · ${scope.product.name}`;
  const page = await o.boards.render(key, viewerOf(sessionOf(o.request)), async (anybody) => {
    const view = await loadBoard(app, { scope, query: o.query, newItem: o.newItem });
    return layout(title, boardPage({ ...view, notice: o.notice, filterForm: o.filterForm, viewer: anybody }), anybody);
  });
  return sendHtml(o.reply, o.status, page);
}

/**
 * What the change that led back to the board did (`?created=12` after a new item, `?moved=12` after a
 * move), named by the item's number and title as they are now; nothing for an item not found.
 */
async function noticeOf(app: FastifyInstance, request: FastifyRequest, p: Record<string, ParamValue>) {
  const said = (['created', 'moved'] as const).find((k) => typeof p[k] === 'string');
  const number = said ? digitsToId(p[said] as string) : undefined;
  if (!said || number === undefined) return undefined;
  const [item] = await findItemsByNumbers(app.db, request.scope.product.id, [number]);
  if (!item || item.archived) return undefined;
  const title = item.title || '';
  return said === 'created'
    ? `Created #${number} ${title} in ${statusName(item.status)}.`
    : `Moved #${number} ${title} to ${statusName(item.status)}.`;
}

/** The filter form's fields, by the items.json parameter a refusal names (its filters are read as items.json's). */
const FILTER_FIELDS: Record<string, string> = {
  q: 'q',
  type: 'type',
  assigned_to: 'assignee',
  created_by: 'creator',
  tags: 'tags',
};

/**
 * The filter form as sent, with the reasons of its refused fields; undefined when the refusal
 * concerns no field of it (a column's status or offset, from a link), which is a page of its own.
 */
function refusedFilters(err: unknown, p: Record<string, ParamValue>): FormState | undefined {
  const refused = formErrors(err);
  if (!refused) return undefined;
  const errors: Record<string, string> = {};
  for (const [name, reason] of Object.entries(refused.errors)) {
    if (!FILTER_FIELDS[name]) return undefined;
    errors[FILTER_FIELDS[name]] = reason;
  }
  if (Object.keys(errors).length === 0) return undefined;
  const values: Record<string, string> = {};
  for (const name of BOARD_FILTERS) if (typeof p[name] === 'string') values[name] = (p[name] as string).slice(0, 4096);
  return { values, errors };
}

/** The board and its moves: the forms, and the board script, which posts the same forms. */
export async function boardRoutes(app: FastifyInstance, { boards }: { boards: RenderedPages }): Promise<void> {
  app.get('/board', { schema: { ...ProductPath, querystring: boardQuery } }, async (request, reply) => {
    const p = requestParams(request);
    const viewer = request.scope.user.id;
    try {
      const query = parseBoardQuery(p, viewer);
      return await renderBoard(app, {
        boards,
        request,
        reply,
        query,
        status: 200,
        notice: await noticeOf(app, request, p),
      });
    } catch (err) {
      // A refused filter (read when parsed, or a person named when listed): the board unfiltered,
      // under the filter form as it was sent, each reason beside its field.
      const filterForm = refusedFilters(err, p);
      if (!filterForm) throw err;
      const query = parseBoardQuery({}, viewer);
      return renderBoard(app, { boards, request, reply, query, status: classifyError(err).status, filterForm });
    }
  });

  const moveBody = params({ csrf: Param, to: Param, above: Param, below: Param, status: Param, back: Param });
  // The board's script asks for JSON (it reloads the board itself); a form gets the board back.
  app.post('/items/:item_number/move', { schema: { ...ItemPath, body: moveBody } }, async (request, reply) => {
    checkToken(request);
    const p = requestParams(request);
    const move = parseMove(p);
    const number = numberOf(request);
    await app.db.transaction().execute((trx) => moveItem(trx, request.scope, number, move, app.listCounts, app.config));
    if (prefersJson(request.headers.accept)) return reply.header('cache-control', 'no-store').send({ number });
    const back = new URLSearchParams(boardQueryString(returnFilters(p)));
    back.set('moved', String(number));
    return redirectAfterPost(reply, productPath(request, `/board?${back}#item-${number}`));
  });
}
