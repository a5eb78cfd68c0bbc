import type { FastifyInstance, FastifyRequest } from 'fastify';
import { deployHistoryOf } from '../../deploys/index.js';
import { asPage, params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { getItem } from '../../items/index.js';
import { productOf, sessionOf } from '../pages.js';
import { presentEnvironments, presentHistory } from '../present.js';
import { environmentsOf } from '../service.js';
import { sendPage } from '../session.js';
import { itemDeploysPage, type ItemDeploysView } from '../views/where.js';
import { ItemPath, numberOf } from './common.js';
import { ITEM_PAGE_LIST } from './item.js';

/** The `offset` of a page of an item's environments or deploys (400 naming it when malformed). */
const itemListOffset = (request: FastifyRequest): number =>
  asPage({ offset: requestParams(request).offset }, { default: ITEM_PAGE_LIST, max: ITEM_PAGE_LIST }).offset;

/** A page of every environment the item went to, the latest deployed first. */
async function loadEnvironments(app: FastifyInstance, request: FastifyRequest): Promise<ItemDeploysView> {
  const scope = request.scope;
  const page = { offset: itemListOffset(request), limit: ITEM_PAGE_LIST };
  const row = await getItem(app.db, scope, numberOf(request));
  const { entries, total } = await environmentsOf(app.db, scope, row, page);
  return {
    product: productOf(scope),
    item: row,
    kind: 'environments',
    environments: presentEnvironments({ deployments: entries }),
    history: [],
    total,
    offset: page.offset,
    pageSize: page.limit,
  };
}

/** A page of every deploy of the item, oldest first. */
async function loadHistory(app: FastifyInstance, request: FastifyRequest): Promise<ItemDeploysView> {
  const scope = request.scope;
  const page = { offset: itemListOffset(request), limit: ITEM_PAGE_LIST, newest: false };
  const row = await getItem(app.db, scope, numberOf(request));
  const { deploys, total } = await deployHistoryOf(app.db, scope, row.id, page);
  return {
    product: productOf(scope),
    item: row,
    kind: 'history',
    environments: [],
    history: presentHistory(deploys),
    total,
    offset: page.offset,
    pageSize: page.limit,
  };
}

/** All of an item's environments and all of its deploys, a page at a time, beyond what its page shows. */
export async function itemDeploysRoutes(app: FastifyInstance): Promise<void> {
  const pageQuery = { ...ItemPath, querystring: params({ offset: Param }) };

  app.get('/items/:item_number/environments', { schema: pageQuery }, async (request, reply) => {
    const view = await loadEnvironments(app, request);
    const title = `Where #${view.item.number} is deployed · ${request.scope.product.name}`;
    return sendPage(reply, 200, title, itemDeploysPage(view), sessionOf(request));
  });

  app.get('/items/:item_number/deploys', { schema: pageQuery }, async (request, reply) => {
    const view = await loadHistory(app, request);
    const title = `Deploys of #${view.item.number} · ${request.scope.product.name}`;
    return sendPage(reply, 200, title, itemDeploysPage(view), sessionOf(request));
  });
}
