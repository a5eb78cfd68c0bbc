import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { params, Param } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { ProductParams } from '../http/schemas.js';
import { parseDeploy, parseDeployList, parseIdempotencyKey } from './input.js';
import { DeployReceiptSchema, DeploySchema, presentDeploys, presentDryRun, presentReceipt } from './present.js';
import { findDeploys, planDeploy, recordDeploy } from './service.js';

export async function deployRoutes(app: FastifyInstance): Promise<void> {
  const urls = app.config;

  app.get(
    '/api/products/:product_id/deploys.json',
    {
      schema: {
        params: ProductParams,
        querystring: params({ environment: Param, offset: Param, limit: Param, order_by: Param }),
        response: { 200: Type.Array(DeploySchema) },
      },
    },
    async (request, reply) => {
      const { filter, page } = parseDeployList(requestParams(request));
      const { deploys, total } = await findDeploys(app.db, request.scope, filter, page);
      reply.header('X-Sprintly-Deploy-Count', String(total));
      return presentDeploys(app.db, request.scope, deploys, urls);
    },
  );

  app.post(
    '/api/products/:product_id/deploys.json',
    {
      schema: {
        params: ProductParams,
        body: params({ environment: Param, numbers: Param, version: Param, notes: Param, rollback: Param, dry_run: Param }),
        response: { 200: DeployReceiptSchema },
      },
    },
    async (request) => {
      const input = parseDeploy(requestParams(request));
      // A dry run reads what is stored now, outside any transaction: it takes no lock and writes
      // nothing, so its Idempotency-Key is neither looked up nor used up.
      if (input.dryRun) return presentDryRun(app.db, request.scope, input, await planDeploy(app.db, request.scope, input), urls);
      const key = parseIdempotencyKey(request.headers['idempotency-key']);
      const recorded = await app.db.transaction().execute((trx) => recordDeploy(trx, request.scope, input, key, urls));
      if (recorded.created) app.outbox.nudge();
      return presentReceipt(app.db, request.scope, recorded.deploy, recorded.created ? recorded.items : undefined, urls);
    },
  );
}
