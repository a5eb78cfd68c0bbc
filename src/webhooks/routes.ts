import type { FastifyInstance, FastifyRequest } from 'fastify';
import { documentScope } from '../http/documentation.js';
import { asPage } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { requireAdmin } from '../products/index.js';
import { parseCreateWebhook, parseUpdateWebhook, webhookIdOf } from './input.js';
import { DELIVERY_PAGE } from './model.js';
import { presentDelivery, presentWebhooks } from './present.js';
import {
  ADMINS_ONLY,
  createWebhookSchema,
  DELIVERY_COUNT,
  deleteWebhookSchema,
  getWebhookSchema,
  listDeliveriesSchema,
  listWebhooksSchema,
  updateWebhookSchema,
} from './schema.js';
import {
  createWebhook,
  deleteWebhook,
  deliveriesOf,
  getWebhook,
  listWebhooks,
  updateWebhook,
  vetTarget,
} from './service.js';

const ALL = '/api/products/:product_id/webhooks.json';
const ONE = '/api/products/:product_id/webhooks/:webhook_id.json';

const idOf = (request: FastifyRequest) => webhookIdOf((request.params as { webhook_id: string }).webhook_id);
const present = async (app: FastifyInstance, request: FastifyRequest, rows: Parameters<typeof presentWebhooks>[1]) =>
  presentWebhooks(app.db, rows, request.scope.user.id);

/**
 * A product's webhooks under `/api/products/{id}`, for its admins only (403 for other members):
 * they see where the product's changes go, and change it.
 */
export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', async (request) => requireAdmin(request.scope));
  documentScope(app, { errors: ADMINS_ONLY });
  listAndCreateRoutes(app);
  oneWebhookRoutes(app);
  deliveryRoutes(app);
}

/** The product's webhooks, and a new one (whose secret the answer shows, this once). */
function listAndCreateRoutes(app: FastifyInstance): void {
  app.get(ALL, { schema: listWebhooksSchema }, async (request) =>
    present(app, request, await listWebhooks(app.db, request.scope)),
  );

  app.post(ALL, { schema: createWebhookSchema }, async (request) => {
    const input = parseCreateWebhook(requestParams(request));
    await vetTarget(input.url, app.config.webhooksAllowPrivate);
    const { webhook, secret } = await app.db.transaction().execute((trx) => createWebhook(trx, request.scope, input));
    return { ...(await present(app, request, [webhook]))[0], secret };
  });
}

/** One webhook: fetch it, change it, delete it. */
function oneWebhookRoutes(app: FastifyInstance): void {
  app.get(
    ONE,
    { schema: getWebhookSchema },
    async (request) => (await present(app, request, [await getWebhook(app.db, request.scope, idOf(request))]))[0],
  );

  app.post(ONE, { schema: updateWebhookSchema }, async (request) => {
    const id = idOf(request);
    const change = parseUpdateWebhook(requestParams(request));
    await vetTarget(change.url, app.config.webhooksAllowPrivate);
    const webhook = await app.db.transaction().execute((trx) => updateWebhook(trx, request.scope, id, change));
    return (await present(app, request, [webhook]))[0];
  });

  app.delete(ONE, { schema: deleteWebhookSchema }, async (request) => {
    const id = idOf(request);
    const webhook = await app.db.transaction().execute((trx) => deleteWebhook(trx, request.scope, id));
    return (await present(app, request, [webhook]))[0];
  });
}

/** A webhook's delivery log, a page at a time, newest first. */
function deliveryRoutes(app: FastifyInstance): void {
  app.get(
    '/api/products/:product_id/webhooks/:webhook_id/deliveries.json',
    { schema: listDeliveriesSchema },
    async (request, reply) => {
      const page = asPage(requestParams(request), DELIVERY_PAGE);
      const { rows, total } = await deliveriesOf(app.db, request.scope, idOf(request), page);
      reply.header(DELIVERY_COUNT, String(total));
      return rows.map(presentDelivery);
    },
  );
}
