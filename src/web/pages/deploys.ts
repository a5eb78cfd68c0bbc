import type { FastifyInstance, FastifyRequest } from 'fastify';
import { findDeploys, notesHtmlOf, parseDeployList, presentDeploys } from '../../deploys/index.js';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { productOf, sessionOf } from '../pages.js';
import { sendPage } from '../session.js';
import { deploysPage, type DeploysView } from '../views/deploys.js';
import { ProductPath } from './common.js';

/** A page of the product's deploys, newest first, to one environment or all, with their notes as HTML. */
async function loadDeploys(app: FastifyInstance, request: FastifyRequest): Promise<DeploysView> {
  const scope = request.scope;
  const p = requestParams(request);
  // The page's parameters are those of deploys.json, read by its rules; the page shows the newest first.
  const { filter, page } = parseDeployList({ environment: p.environment, offset: p.offset });
  const { deploys, total } = await findDeploys(app.db, scope, { ...filter, newest: true }, page);
  const [json, notes] = await Promise.all([
    presentDeploys(app.db, { scope, urls: app.config, budget: app.config.maxAnswerBytes, deploys }),
    notesHtmlOf(app.db, deploys),
  ]);
  return {
    product: productOf(scope),
    deploys: json.map((d) => ({ ...d, notesHtml: notes.get(d.id)! })),
    total,
    offset: page.offset,
    pageSize: page.limit,
    environment: filter.environment,
  };
}

/** The product's deploys, newest first, by environment. */
export async function deploysRoutes(app: FastifyInstance): Promise<void> {
  const query = params({ environment: Param, offset: Param });
  app.get('/deploys', { schema: { ...ProductPath, querystring: query } }, async (request, reply) => {
    const view = await loadDeploys(app, request);
    return sendPage(reply, 200, `Deploys · ${request.scope.product.name}`, deploysPage(view), sessionOf(request));
  });
}
