import type { FastifyInstance } from 'fastify';
import type { ItemRow } from '../db/schema.js';
import { productNotFound } from '../errors.js';
import { requestParams } from '../http/request.js';
import { asPage, digitsToId, params, Param } from '../http/params.js';
import { ItemParams, ProductParams } from '../http/schemas.js';
import type { ProductScope } from '../scope.js';
import { pathItemNumber, parseCreateItem, parseListItems, parseResort, parseUpdateItem } from './input.js';
import { CHILDREN_PAGE, DEPLOYED_TO_PAGE } from './model.js';
import { DeploymentListSchema, ItemListSchema, ItemSchema, presentItems } from './present.js';
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
  assigned_to: Param, created_by: Param, tags: Param, children: Param,
};

export async function itemRoutes(app: FastifyInstance): Promise<void> {
  const urls = app.config;
  const one = async (scope: ProductScope, row: ItemRow) => (await presentItems(app.db, scope.product, [row], urls, scope.user.id))[0];

  app.get(
    '/api/products/:product_id/items.json',
    { schema: { params: ProductParams, querystring: params(listFields), response: { 200: ItemListSchema } } },
    async (request, reply) => {
      const input = parseListItems(requestParams(request));
      const { rows, total } = await listItems(app.db, request.scope, input, app.listCounts);
      reply.header('X-Sprintly-Item-Count', String(total));
      return presentItems(app.db, request.scope.product, rows, urls, request.scope.user.id);
    },
  );

  app.post(
    '/api/products/:product_id/items.json',
    { schema: { params: ProductParams, body: params(itemFields), response: { 200: ItemSchema } } },
    async (request) => {
      const input = parseCreateItem(requestParams(request));
      const item = await app.db.transaction().execute((trx) => createItem(trx, request.scope, input));
      return one(request.scope, item);
    },
  );

  app.get(
    '/api/products/:product_id/items/:item_number.json',
    { schema: { params: ItemParams, response: { 200: ItemSchema } } },
    async (request) => one(request.scope, await getItem(app.db, request.scope, pathItemNumber(request))),
  );

  app.post(
    '/api/products/:product_id/items/:item_number.json',
    { schema: { params: ItemParams, body: params(itemFields), response: { 200: ItemSchema } } },
    async (request) => {
      const input = parseUpdateItem(requestParams(request));
      const number = pathItemNumber(request);
      const item = await app.db.transaction().execute((trx) => updateItem(trx, request.scope, number, input));
      return one(request.scope, item);
    },
  );

  app.delete(
    '/api/products/:product_id/items/:item_number.json',
    { schema: { params: ItemParams, response: { 200: ItemSchema } } },
    async (request) => {
      const number = pathItemNumber(request);
      const item = await app.db.transaction().execute((trx) => archiveItem(trx, request.scope, number));
      return one(request.scope, item);
    },
  );

  app.get(
    '/api/products/:product_id/items/:item_number/children.json',
    { schema: { params: ItemParams, querystring: params({ offset: Param, limit: Param }), response: { 200: ItemListSchema } } },
    async (request, reply) => {
      const page = asPage(requestParams(request), CHILDREN_PAGE);
      const { rows, total } = await childrenOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header('X-Sprintly-Item-Count', String(total));
      return presentItems(app.db, request.scope.product, rows, urls, request.scope.user.id);
    },
  );

  // Every environment an item went to; the item itself shows only the latest (deployed_to).
  app.get(
    '/api/products/:product_id/items/:item_number/deployed_to.json',
    { schema: { params: ItemParams, querystring: params({ offset: Param, limit: Param }), response: { 200: DeploymentListSchema } } },
    async (request, reply) => {
      const page = asPage(requestParams(request), DEPLOYED_TO_PAGE);
      const { deployments, total } = await deploymentsOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header('X-Sprintly-Deployed-To-Count', String(total));
      return deployments;
    },
  );

  app.post(
    '/api/products/:product_id/items/:item_number/resort.json',
    { schema: { params: ItemParams, body: params({ before: Param, after: Param }), response: { 200: ItemSchema } } },
    async (request) => {
      const input = parseResort(requestParams(request));
      const number = pathItemNumber(request);
      const item = await app.db.transaction().execute((trx) => resortItem(trx, request.scope, number, input));
      return one(request.scope, item);
    },
  );

  for (const [method, follow] of [['POST', true], ['DELETE', false]] as const) {
    app.route({
      method,
      url: '/api/products/:product_id/items/:item_number/follow.json',
      schema: { params: ItemParams, response: { 200: ItemSchema } },
      handler: async (request) => {
        const number = pathItemNumber(request);
        const item = await app.db.transaction().execute((trx) => setFollowing(trx, request.scope, number, follow));
        return one(request.scope, item);
      },
    });
  }
}

/**
 * `short_url`s (`/i/{product}/{number}/`) lead to the item: for now its API address, which asks
 * for credentials as usual. No lookup here, so the redirect tells nothing about what exists.
 */
export async function shortUrlRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/i/:product_id/:item_number/',
    { schema: { params: ItemParams } },
    async (request, reply) => {
      const productId = digitsToId((request.params as { product_id: string }).product_id);
      const number = pathItemNumber(request);
      if (productId === undefined) throw productNotFound();
      return reply.redirect(`${app.config.publicUrl}/api/products/${productId}/items/${number}.json`, 302);
    },
  );
}
