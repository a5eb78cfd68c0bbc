import type { FastifyInstance } from 'fastify';
import { params, Param } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { ProductParams } from '../http/schemas.js';
import { parseEnvironmentChoice } from './input.js';
import { EnvironmentChoiceSchema, presentEnvironmentChoice } from './present.js';
import { environmentChoice, setEnvironmentChoice } from './service.js';

/** The caller's own deploy mail choice for a product (docs/INTERFACE.md §9); members only. */
export async function notificationRoutes(app: FastifyInstance): Promise<void> {
  const path = '/api/products/:product_id/notifications.json';

  app.get(path, { schema: { params: ProductParams, response: { 200: EnvironmentChoiceSchema } } }, async (request) =>
    presentEnvironmentChoice(await environmentChoice(app.db, request.scope)),
  );

  app.post(
    path,
    { schema: { params: ProductParams, body: params({ environments: Param }), response: { 200: EnvironmentChoiceSchema } } },
    async (request) => {
      const choice = parseEnvironmentChoice(requestParams(request));
      return presentEnvironmentChoice(await app.db.transaction().execute((trx) => setEnvironmentChoice(trx, request.scope, choice)));
    },
  );
}
