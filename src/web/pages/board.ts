import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ItemRow } from '../../db/schema.js';
import { params, Param } from '../../http/params.js';
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
  type Status,
} from '../../items/index.js';
import type { ProductScope } from '../../scope.js';
import { boardQueryString, parseBoardQuery, parseMove, returnFilters, type BoardQuery } from '../input.js';
import { prefersJson } from '../../http/negotiate.js';
import { checkToken, productOf, sessionOf, viewerOf } from '../pages.js';
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
  type: Param,
  assignee: Param,
  creator: Param,
  tags: Param,
  mine: Param,
  status: Param,
  offset: Param,
});

/** A column as read: its page of rows, with one row either side of it. */
type Column = Omit<BoardColumn, 'cards'> & { rows: ItemRow[] };

/** One column's page of rows, with one row either side of it: the cards a card at its edge moves past. */
async function loadColumn(app: FastifyInstance, scope: ProductScope, query: BoardQuery, status: Status) {
  const input = listQuery({
    ...query.list,
    statuses: [status],
    offset: Math.max(0, query.offset - 1),
    limit: BOARD_PAGE + 2,
    order: 'priority',
  });
  const { rows, total } = await listItems(app.db, scope, input, app.listCounts);
  return { status, total, offset: query.offset, rows } satisfies Column;
}

/** The rows a column shows as cards (its neighbours either side left out). */
const shownOf = (c: Column): ItemRow[] => {
  const first = c.offset > 0 ? 1 : 0;
  return c.rows.slice(first, first + BOARD_PAGE);
};

/** What the board shows: each column's page of cards with their neighbours, the filters, the members. */
export async function loadBoard(
  app: FastifyInstance,
  { scope, query, newItem }: { scope: ProductScope; query: BoardQuery; newItem?: FormState },
): Promise<Omit<BoardView, 'viewer'>> {
  const columns: Column[] = [];
  for (const s of query.status ? [query.status] : STATUS_NAMES) columns.push(await loadColumn(app, scope, query, s));
  const shownRows = columns.flatMap(shownOf);
  const [json, counts, members] = await Promise.all([
    presentItems(app.db, { product: scope.product, rows: shownRows, urls: app.config, viewerId: scope.user.id }),
    subItemCounts(
      app.db,
      shownRows.map((r) => r.id),
    ),
    membersOf(app.db, scope),
  ]);
  const byId = new Map(shownRows.map((r, n) => [r.id, json[n]]));
  const cardsOf = (c: Column): BoardCard[] => {
    const first = c.offset > 0 ? 1 : 0;
    return shownOf(c).map((row, n) => ({
      item: byId.get(row.id)!,
      subItems: counts.get(row.id) ?? 0,
      above: c.rows[first + n - 1]?.number,
      below: c.rows[first + n + 1]?.number,
    }));
  };
  return {
    product: productOf(scope),
    columns: columns.map((c) => ({ status: c.status, total: c.total, offset: c.offset, cards: cardsOf(c) })),
    filters: query.filters,
    single: query.status !== undefined,
    pageSize: BOARD_PAGE,
    members,
    types: ITEM_TYPES,
    statuses: INPUT_STATUSES,
    newItem,
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
  },
) {
  const scope = o.request.scope;
  // Admins' navigation has their pages too: they share boards with admins only.
  const role = scope.admin ? 'admin' : 'member';
  const key =
    o.status === 200 && o.newItem === undefined
      ? `${scope.product.id}:${scope.product.revision}:${role}:${JSON.stringify(o.query)}`
      : undefined;
  const title = `Board · ${scope.product.name}`;
  const page = await o.boards.render(key, viewerOf(sessionOf(o.request)), async (anybody) => {
    const view = await loadBoard(app, { scope, query: o.query, newItem: o.newItem });
    return layout(title, boardPage({ ...view, viewer: anybody }), anybody);
  });
  return sendHtml(o.reply, o.status, page);
}

/** The board and its moves: the forms, and the board script, which posts the same forms. */
export async function boardRoutes(app: FastifyInstance, { boards }: { boards: RenderedPages }): Promise<void> {
  app.get('/board', { schema: { ...ProductPath, querystring: boardQuery } }, async (request, reply) => {
    const query = parseBoardQuery(requestParams(request), request.scope.user.id);
    return renderBoard(app, { boards, request, reply, query, status: 200 });
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
    const back = boardQueryString(returnFilters(p));
    return redirectAfterPost(reply, productPath(request, `/board${back}#item-${number}`));
  });
}
