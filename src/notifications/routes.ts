import type { FastifyInstance } from 'fastify';
import { requestParams } from '../http/request.js';
import { parseNotificationChoice } from './input.js';
import { presentNotificationChoice } from './present.js';
import { getNotificationsSchema, setNotificationsSchema } from './schema.js';
import { notificationChoice, setNotificationChoice } from './service.js';

/** The caller's own mail choices for a product (docs/INTERFACE.md §9); members only. */
export async function notificationRoutes(app: FastifyInstance): Promise<void> {
  const path = '/api/products/:product_id/notifications.json';

  app.get(path, { schema: getNotificationsSchema }, async (request) =>
    presentNotificationChoice(await notificationChoice(app.db, request.scope)),
  );

  app.post(path, { schema: setNotificationsSchema }, async (request) => {
    const change = parseNotificationChoice(requestParams(request));
    return presentNotificationChoice(
      await app.db.transaction().execute((trx) => setNotificationChoice(trx, request.scope, change)),
    );
  });
}
