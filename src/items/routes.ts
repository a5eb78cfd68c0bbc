import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Trx } from '../db/connection.js';
import type { ItemRow } from '../db/schema.js';
import { productNotFound } from '../errors.js';
import { requestParams } from '../http/request.js';
import { asPage, digitsToId, params, Param, type ParamValue } from '../http/params.js';
import { ItemParams, ProductParams } from '../http/schemas.js';
import type { ProductScope } from '../scope.js';
import { pathItemNumber, parseCreateItem, parseListItems, parseResort, parseUpdateItem } from './input.js';
import { CHILDREN_PAGE, DEPLOYED_TO_PAGE } from './model.js';
import { itemPagePath } from './urls.js';
import { DeploymentListSchema, ItemListSchema, ItemSchema, presentDeployment, presentItems } from './present.js';
import {
  archiveItem,
  childrenOf,
  createItem,
  deploymentsOf,
  getItem,
  listItems,
  resortItem,
  setFollowing,
  updateItem,
} from './service.js';

const itemFields = {
  type: Param, title: Param, who: Param, what: Param, why: Param, description: Param, score: Param,
  status: Param, assigned_to: Param, created_by: Param, tags: Param, parent: Param, close_reason: Param,
};
const listFields = {
  type: Param, status: Param, offset: Param, limit: Param, order_by: Param,
  assigned_to: Param, created_by: Param, tags: Param, children: Param, deployed_to: Param, not_deployed_to: Param,
};

/** The item routes under `/api/products/{id}`: the lists, then the changes to one item. */
export async function itemRoutes(app: FastifyInstance): Promise<void> {
  await app.register(itemListRoutes);
  await app.register(itemChangeRoutes);
}

/** The caller's view of one item, as every single-item route answers. */
const presentOne = async (app: FastifyInstance, scope: ProductScope, row: ItemRow) =>
  (await presentItems(app.db, scope.product, [row], app.config, scope.user.id))[0];

/** Lists: the items of a product, a story's sub-items, an item's environments. */
async function itemListRoutes(app: FastifyInstance): Promise<void> {
  const pageParams = params({ offset: Param, limit: Param });

  app.get(
    '/api/products/:product_id/items.json',
    { schema: { params: ProductParams, querystring: params(listFields), response: { 200: ItemListSchema } } },
    async (request, reply) => {
      const input = parseListItems(requestParams(request));
      const { rows, total } = await listItems(app.db, request.scope, input, app.listCounts);
      reply.header('X-Sprintly-Item-Count', String(total));
      return presentItems(app.db, request.scope.product, rows, app.config, request.scope.user.id);
    },
  );

  app.get(
    '/api/products/:product_id/items/:item_number/children.json',
    { schema: { params: ItemParams, querystring: pageParams, response: { 200: ItemListSchema } } },
    async (request, reply) => {
      const page = asPage(requestParams(request), CHILDREN_PAGE);
      const { rows, total } = await childrenOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header('X-Sprintly-Item-Count', String(total));
      return presentItems(app.db, request.scope.product, rows, app.config, request.scope.user.id);
    },
  );

  // Every environment an item went to; the item itself shows only the latest (deployed_to).
  app.get(
    '/api/products/:product_id/items/:item_number/deployed_to.json',
    { schema: { params: ItemParams, querystring: pageParams, response: { 200: DeploymentListSchema } } },
    async (request, reply) => {
      const page = asPage(requestParams(request), DEPLOYED_TO_PAGE);
      const { deployments, total } = await deploymentsOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header('X-Sprintly-Deployed-To-Count', String(total));
      return deployments.map(presentDeployment);
    },
  );
}

/**
 * One item: fetch it, and each change, made in one transaction by its named service operation
 * and answered with the item as it is then.
 */
async function itemChangeRoutes(app: FastifyInstance): Promise<void> {
  const item = '/api/products/:product_id/items/:item_number.json';
  const answer = { 200: ItemSchema };
  const change = <T>(parse: (p: Record<string, ParamValue>) => T, run: (trx: Trx, scope: ProductScope, number: number, input: T) => Promise<ItemRow>) =>
    async (request: FastifyRequest) => {
      const input = parse(requestParams(request));
      const number = pathItemNumber(request);
      const row = await app.db.transaction().execute((trx) => run(trx, request.scope, number, input));
      return presentOne(app, request.scope, row);
    };
  const noInput = () => undefined;

  app.post(
    '/api/products/:product_id/items.json',
    { schema: { params: ProductParams, body: params(itemFields), response: answer } },
    async (request) => {
      const input = parseCreateItem(requestParams(request));
      const row = await app.db.transaction().execute((trx) => createItem(trx, request.scope, input, app.config));
      return presentOne(app, request.scope, row);
    },
  );
  app.get(item, { schema: { params: ItemParams, response: answer } }, async (request) =>
    presentOne(app, request.scope, await getItem(app.db, request.scope, pathItemNumber(request))),
  );
  app.post(
    item,
    { schema: { params: ItemParams, body: params(itemFields), response: answer } },
    change(parseUpdateItem, (trx, scope, n, input) => updateItem(trx, scope, n, input, app.config)),
  );
  app.delete(item, { schema: { params: ItemParams, response: answer } }, change(noInput, (trx, scope, n) => archiveItem(trx, scope, n, app.config)));
  app.post(
    '/api/products/:product_id/items/:item_number/resort.json',
    { schema: { params: ItemParams, body: params({ before: Param, after: Param }), response: answer } },
    change(parseResort, resortItem),
  );
  for (const [method, follow] of [['POST', true], ['DELETE', false]] as const) {
    app.route({
      method,
      url: '/api/products/:product_id/items/:item_number/follow.json',
      schema: { params: ItemParams, response: answer },
      handler: change(noInput, (trx, scope, n) => setFollowing(trx, scope, n, follow)),
    });
  }
}

/**
 * How much an Accept header wants a media type: its own q, else its type's wildcard, else `*\/*`.
 * A missing header accepts everything equally.
 */
function acceptQuality(accept: string | undefined, type: string): number {
  if (!accept) return 1;
  let best: { rank: number; q: number } = { rank: -1, q: 0 };
  for (const part of accept.split(',')) {
    const [range, ...parameters] = part.split(';').map((s) => s.trim().toLowerCase());
    const rank = range === type ? 2 : range === `${type.split('/')[0]}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (rank <= best.rank) continue;
    const q = Number(/^q=([0-9.]+)$/.exec(parameters.find((p) => p.startsWith('q=')) ?? 'q=1')?.[1] ?? 1);
    best = { rank, q: Number.isFinite(q) ? q : 0 };
  }
  return best.q;
}

/** A browser following a link: it asks for HTML by name, above JSON (`*\/*` alone, as curl sends, is not that). */
export const prefersHtml = (accept: string | undefined): boolean => acceptQuality(accept, 'text/html') > acceptQuality(accept, 'application/json');

/**
 * `short_url`s (`/i/{product}/{number}/`) lead to the item: a browser asking for HTML to its page
 * (which asks it to sign in), any other client to its API address, which asks for credentials as
 * usual. No lookup here, so the redirect tells nothing about what exists.
 */
export async function shortUrlRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/i/:product_id/:item_number/',
    { schema: { params: ItemParams } },
    async (request, reply) => {
      const productId = digitsToId((request.params as { product_id: string }).product_id);
      const number = pathItemNumber(request);
      if (productId === undefined) throw productNotFound();
      reply.header('vary', 'Accept');
      if (prefersHtml(request.headers.accept)) return reply.redirect(`${app.config.publicUrl}${itemPagePath(productId, number)}`, 302);
      return reply.redirect(`${app.config.publicUrl}/api/products/${productId}/items/${number}.json`, 302);
    },
  );
}
