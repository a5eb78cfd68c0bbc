import type { FastifyInstance, FastifyRequest } from 'fastify';
import { getDeploy, notesHtmlOf, presentDeploys } from '../../deploys/index.js';
import { digitsToId } from '../../http/params.js';
import { productOf, sessionOf } from '../pages.js';
import { sendPage } from '../session.js';
import { deployPage, type DeployView } from '../views/deploys.js';
import { DeployPath } from './common.js';

/** One deploy of the product (a 404 page for any other id), with its notes as HTML. */
async function loadDeploy(app: FastifyInstance, request: FastifyRequest): Promise<DeployView> {
  const scope = request.scope;
  const raw = (request.params as { deploy_id: string }).deploy_id;
  const deploy = await getDeploy(app.db, scope, digitsToId(raw) ?? -1);
  const [[json], notes] = await Promise.all([
    presentDeploys(app.db, { scope, urls: app.config, budget: app.config.maxAnswerBytes, deploys: [deploy] }),
    notesHtmlOf(app.db, [deploy]),
  ]);
  return { product: productOf(scope), deploy: { ...json, notesHtml: notes.get(deploy.id)! } };
}

/** One deploy, where the matrix's cells and the items' timelines link to. */
export async function deployRoutes(app: FastifyInstance): Promise<void> {
  app.get('/deploys/:deploy_id', { schema: DeployPath }, async (request, reply) => {
    const view = await loadDeploy(app, request);
    const d = view.deploy;
    const title = `${d.rollback ? 'Rollback' : 'Deploy'} to ${d.environment} · ${request.scope.product.name}`;
    return sendPage(reply, 200, title, deployPage(view), sessionOf(request));
  });
}
