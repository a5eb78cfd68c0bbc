import type { FastifyInstance } from 'fastify';
import { requestParams } from '../http/request.js';
import { parseEnvironmentChoice } from './input.js';
import { presentEnvironmentChoice } from './present.js';
import { getNotificationsSchema, setNotificationsSchema } from './schema.js';
import { environmentChoice, setEnvironmentChoice } from './service.js';

/** The caller's own deploy mail choice for a product (docs/INTERFACE.md §9); members only. */
export async function notificationRoutes(app: FastifyInstance): Promise<void> {
  const path = '/api/products/:product_id/notifications.json';

  app.get(path, { schema: getNotificationsSchema }, async (request) =>
    presentEnvironmentChoice(await environmentChoice(app.db, request.scope)),
  );

  app.post(path, { schema: setNotificationsSchema }, async (request) => {
    const choice = parseEnvironmentChoice(requestParams(request));
    return presentEnvironmentChoice(
      await app.db.transaction().execute((trx) => setEnvironmentChoice(trx, request.scope, choice)),
    );
  });
}
