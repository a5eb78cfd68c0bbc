import type { FastifyInstance, FastifyRequest } from 'fastify';
import { findDeploys, notesHtmlOf, parseDeployList, presentDeploys } from '../../deploys/index.js';
import { classifyError } from '../../http/errors.js';
import { params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { formErrors, productOf, sessionOf } from '../pages.js';
import { sendPage } from '../session.js';
import { deploysPage, type DeploysView } from '../views/deploys.js';
import { ProductPath } from './common.js';

/** A page of the product's deploys, newest first, to one environment or all, with their notes as HTML. */
async function loadDeploys(
  app: FastifyInstance,
  request: FastifyRequest,
  p: Record<string, ParamValue>,
): Promise<DeploysView> {
  const scope = request.scope;
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
    const p = requestParams(request);
    const title = `Deploys · ${request.scope.product.name}`;
    try {
      return sendPage(reply, 200, title, deploysPage(await loadDeploys(app, request, p)), sessionOf(request));
    } catch (err) {
      // A refused environment: every deploy, under the filter as it was sent, its reason beside it.
      const refused = formErrors(err);
      if (!refused?.errors.environment || Object.keys(refused.errors).length > 1) throw err;
      const typed = typeof p.environment === 'string' ? p.environment.slice(0, 4096) : '';
      const view = { ...(await loadDeploys(app, request, {})), form: { values: { environment: typed }, ...refused } };
      return sendPage(reply, classifyError(err).status, title, deploysPage(view), sessionOf(request));
    }
  });
}
