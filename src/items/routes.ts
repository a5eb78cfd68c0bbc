import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { changesHandleOf, type Trx } from '../db/connection.js';
import type { ItemRow } from '../db/schema.js';
import { productNotFound } from '../errors.js';
import { NEXT_OFFSET, piecesWithin, serializerOf } from '../http/answer-size.js';
import { prefersHtml } from '../http/negotiate.js';
import { requestParams } from '../http/request.js';
import { answeredNotModified } from '../http/conditional.js';
import { asPage, digitsToId, type ParamValue } from '../http/params.js';
import type { ProductScope } from '../scope.js';
import {
  parseIfMatch,
  pathItemNumber,
  parseCreateItem,
  parseListItems,
  parseResort,
  parseUpdateItem,
  type IfMatch,
} from './input.js';
import { CHILDREN_PAGE, DEPLOYED_TO_PAGE, entityTag } from './model.js';
import { itemPagePath } from './urls.js';
import type { ShowsItems } from '../kept-answers.js';
import { itemPieces, type ItemStamp } from './kept-items.js';
import { presentDeployment, type ItemJson } from './present.js';
import { knownDeploymentsOf, type KnownRelations } from './repository.js';
import {
  archiveItemSchema,
  createItemSchema,
  DEPLOYED_TO_COUNT,
  followItemSchema,
  followShortUrlSchema,
  getItemSchema,
  ITEM_COUNT,
  listChildrenSchema,
  listDeployedToSchema,
  listItemsSchema,
  ONE_ITEM,
  resortItemSchema,
  unfollowItemSchema,
  updateItemSchema,
} from './schema.js';
import {
  archiveItem,
  childrenOf,
  createItem,
  deploymentsOf,
  findItemsByIds,
  getItemToShow,
  isByPosition,
  listItemStamps,
  renderDescription,
  resortItem,
  setFollowing,
  updateItem,
} from './service.js';

/** The item routes under `/api/products/{id}`: the lists, then the changes to one item. */
export async function itemRoutes(app: FastifyInstance): Promise<void> {
  await app.register(itemListRoutes);
  await app.register(itemChangeRoutes);
}

/**
 * The caller's view of one item, as every single-item route answers, with its version as the ETag:
 * its JSON kept by version (KeptItems), or rendered and kept.
 */
async function presentOne(
  app: FastifyInstance,
  reply: FastifyReply,
  scope: ProductScope,
  row: ItemRow,
  known?: KnownRelations,
  db = app.db,
): Promise<Buffer> {
  reply.header('ETag', `"${entityTag(row)}"`);
  reply.type('application/json; charset=utf-8');
  const [piece] = await itemPieces({
    ...keptItemsOf(app, reply, scope),
    db,
    stamps: [row],
    rowsOf: async (rows) => rows,
    known,
  });
  return piece.json;
}

/** What itemPieces needs of the app and the caller. */
const keptItemsOf = (app: FastifyInstance, reply: FastifyReply, scope: ProductScope) => ({
  db: app.db,
  kept: app.keptItems,
  product: scope.product,
  urls: app.config,
  viewerId: scope.user.id,
  serialize: serializerOf<ItemJson>(reply, ONE_ITEM),
});

const ifMatchOf = (request: FastifyRequest): IfMatch | undefined => parseIfMatch(request.headers['if-match']);

/**
 * A page of items as JSON within the size bound of an answer, with the total and, when entries
 * remain after it, where the next page starts (it can end before `limit`). `stamps` are rows, or
 * stamps whose rows are read only for the items whose JSON is not kept.
 */
async function boundedItems(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  page: { stamps: ItemStamp[]; offset: number; total: number; shows: ShowsItems },
): Promise<Buffer> {
  const budget = app.config.maxAnswerBytes;
  const pieces = await itemPieces({
    ...keptItemsOf(app, reply, request.scope),
    stamps: page.stamps,
    rowsOf: async (missing) =>
      missing.every(isItemRow)
        ? missing
        : findItemsByIds(
            app.db,
            missing.map((m) => m.id),
          ),
    budget,
  });
  const fitted = piecesWithin(pieces, budget);
  const shown = pieces.slice(0, fitted.count).map((p) => p.stamp);
  page.shows([...shown.map((s) => s.id), ...shown.flatMap((s) => (s.parent_id === null ? [] : [s.parent_id]))]);
  reply.header(ITEM_COUNT, String(page.total));
  if (page.offset + fitted.count < page.total) reply.header(NEXT_OFFSET, String(page.offset + fitted.count));
  return fitted.body;
}

const isItemRow = (stamp: ItemStamp): stamp is ItemRow => 'description' in stamp;

/** Lists: the items of a product, a story's sub-items, an item's environments. */
async function itemListRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/products/:product_id/items.json', { schema: listItemsSchema }, async (request, reply) => {
    const input = parseListItems(requestParams(request));
    return app.keptAnswers.answer(
      request,
      reply,
      `items:${JSON.stringify(input)}`,
      [ITEM_COUNT, NEXT_OFFSET],
      async (shows) => {
        const { stamps, total } = await listItemStamps(app.db, request.scope, input, {
          counts: app.listCounts,
          pages: app.listPages,
          windows: app.listWindows,
        });
        return boundedItems(app, request, reply, { stamps, offset: input.offset, total, shows });
      },
      isByPosition(input),
    );
  });

  app.get(
    '/api/products/:product_id/items/:item_number/children.json',
    { schema: listChildrenSchema },
    async (request, reply) => {
      const page = asPage(requestParams(request), CHILDREN_PAGE);
      const number = pathItemNumber(request);
      return app.keptAnswers.answer(
        request,
        reply,
        `children:${number}:${page.offset}:${page.limit}`,
        [ITEM_COUNT, NEXT_OFFSET],
        async (shows) => {
          const { rows, total } = await childrenOf(app.db, request.scope, number, page, app.config.maxAnswerBytes);
          return boundedItems(app, request, reply, { stamps: rows, offset: page.offset, total, shows });
        },
        // A story's sub-items stand by priority.
        true,
      );
    },
  );

  // Every environment an item went to; the item itself shows only the latest (deployed_to).
  app.get(
    '/api/products/:product_id/items/:item_number/deployed_to.json',
    { schema: listDeployedToSchema },
    async (request, reply) => {
      const page = asPage(requestParams(request), DEPLOYED_TO_PAGE);
      const { deployments, total } = await deploymentsOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header(DEPLOYED_TO_COUNT, String(total));
      return deployments.map(presentDeployment);
    },
  );
}

type ChangeRun<T> = (
  trx: Trx,
  scope: ProductScope,
  number: number,
  input: T,
  ifMatch: IfMatch | undefined,
) => Promise<{ row: ItemRow; known?: KnownRelations }>;

/**
 * The handler of a change to one item: parse, (for a conditional change) read If-Match, prepare
 * what needs no transaction, run the change in one transaction, answer with the item.
 */
const change =
  <T>(
    app: FastifyInstance,
    parse: (p: Record<string, ParamValue>) => T,
    run: ChangeRun<T>,
    options: { conditional?: boolean; prepare?: (input: T) => Promise<T> } = {},
  ) =>
  async (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = parse(requestParams(request));
    const ifMatch = options.conditional ? ifMatchOf(request) : undefined;
    const number = pathItemNumber(request);
    // What is worked out before the transaction opens: the description's HTML.
    const input = options.prepare ? await options.prepare(parsed) : parsed;
    const { row, known } = await app.db.transaction().execute((trx) => run(trx, request.scope, number, input, ifMatch));
    // What is still to read goes where the change was made: the answer does not queue behind the reads.
    return presentOne(app, reply, request.scope, row, known, changesHandleOf(app.db));
  };
const noInput = () => undefined;

/**
 * One item: fetch it, and each change, made in one transaction by its named service operation
 * and answered with the item as it is then.
 */
async function itemChangeRoutes(app: FastifyInstance): Promise<void> {
  const item = '/api/products/:product_id/items/:item_number.json';

  app.post('/api/products/:product_id/items.json', { schema: createItemSchema }, async (request, reply) => {
    const input = await renderDescription(app.markdown, parseCreateItem(requestParams(request)));
    const row = await app.db.transaction().execute((trx) => createItem(trx, request.scope, input, app.config));
    // An item made just now was deployed nowhere: none of its deployments to read.
    return presentOne(app, reply, request.scope, row, knownDeploymentsOf(row.id, [], 0), changesHandleOf(app.db));
  });
  app.get(item, { schema: getItemSchema }, async (request, reply) => {
    const { row, known } = await getItemToShow(app.db, request.scope, pathItemNumber(request));
    // The client holds this version already: nothing is rendered.
    if (answeredNotModified(request, reply, `"${entityTag(row)}"`)) return reply.send();
    return presentOne(app, reply, request.scope, row, known);
  });
  app.post(
    item,
    { schema: updateItemSchema },
    change(
      app,
      parseUpdateItem,
      (trx, scope, n, input, ifMatch) => updateItem(trx, scope, n, input, app.config, ifMatch && { etags: ifMatch }),
      { conditional: true, prepare: (input) => renderDescription(app.markdown, input) },
    ),
  );
  app.delete(
    item,
    { schema: archiveItemSchema },
    change(app, noInput, async (trx, scope, n) => ({ row: await archiveItem(trx, scope, n, app.config) })),
  );
  app.post(
    '/api/products/:product_id/items/:item_number/resort.json',
    { schema: resortItemSchema },
    change(app, parseResort, async (...args) => ({ row: await resortItem(...args) }), { conditional: true }),
  );
  for (const [method, follow, schema] of [
    ['POST', true, followItemSchema],
    ['DELETE', false, unfollowItemSchema],
  ] as const) {
    app.route({
      method,
      url: '/api/products/:product_id/items/:item_number/follow.json',
      schema,
      handler: change(app, noInput, async (trx, scope, n) => ({ row: await setFollowing(trx, scope, n, follow) })),
    });
  }
}

/**
 * `short_url`s (`/i/{product}/{number}/`) lead to the item: a browser asking for HTML to its page
 * (which asks it to sign in), any other client to its API address, which asks for credentials as
 * usual. No lookup here, so the redirect tells nothing about what exists.
 */
export async function shortUrlRoutes(app: FastifyInstance): Promise<void> {
  app.get('/i/:product_id/:item_number/', { schema: followShortUrlSchema }, async (request, reply) => {
    const productId = digitsToId((request.params as { product_id: string }).product_id);
    const number = pathItemNumber(request);
    if (productId === undefined) throw productNotFound();
    reply.header('vary', 'Accept');
    if (prefersHtml(request.headers.accept))
      return reply.redirect(`${app.config.publicUrl}${itemPagePath(productId, number)}`, 302);
    return reply.redirect(`${app.config.publicUrl}/api/products/${productId}/items/${number}.json`, 302);
  });
}
