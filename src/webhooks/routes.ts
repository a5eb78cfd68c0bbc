import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { asPage, params, Param } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { ProductParams } from '../http/schemas.js';
import { requireAdmin } from '../products/index.js';
import { parseCreateWebhook, parseUpdateWebhook, webhookIdOf } from './input.js';
import { DELIVERY_PAGE } from './model.js';
import { CreatedWebhookSchema, DeliverySchema, presentDelivery, presentWebhooks, WebhookSchema } from './present.js';
import { createWebhook, deleteWebhook, deliveriesOf, getWebhook, listWebhooks, updateWebhook, vetTarget } from './service.js';

const WebhookParams = Type.Object({ product_id: Type.String(), webhook_id: Type.String() });
const webhookFields = { url: Param, events: Param, format: Param, secret: Param, enabled: Param };

/**
 * A product's webhooks under `/api/products/{id}`, for its admins only (403 for other members):
 * they see where the product's changes go, and change it.
 */
export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', async (request) => requireAdmin(request.scope));
  const one = '/api/products/:product_id/webhooks/:webhook_id.json';
  const idOf = (request: FastifyRequest) => webhookIdOf((request.params as { webhook_id: string }).webhook_id);
  const present = async (request: FastifyRequest, rows: Parameters<typeof presentWebhooks>[1]) => presentWebhooks(app.db, rows, request.scope.user.id);
  const allowPrivate = app.config.webhooksAllowPrivate;

  app.get('/api/products/:product_id/webhooks.json', { schema: { params: ProductParams, response: { 200: Type.Array(WebhookSchema) } } }, async (request) =>
    present(request, await listWebhooks(app.db, request.scope)),
  );

  app.post(
    '/api/products/:product_id/webhooks.json',
    { schema: { params: ProductParams, body: params(webhookFields), response: { 200: CreatedWebhookSchema } } },
    async (request) => {
      const input = parseCreateWebhook(requestParams(request));
      await vetTarget(input.url, allowPrivate);
      const { webhook, secret } = await app.db.transaction().execute((trx) => createWebhook(trx, request.scope, input));
      return { ...(await present(request, [webhook]))[0], secret };
    },
  );

  app.get(one, { schema: { params: WebhookParams, response: { 200: WebhookSchema } } }, async (request) =>
    (await present(request, [await getWebhook(app.db, request.scope, idOf(request))]))[0],
  );

  app.post(one, { schema: { params: WebhookParams, body: params(webhookFields), response: { 200: WebhookSchema } } }, async (request) => {
    const id = idOf(request);
    const change = parseUpdateWebhook(requestParams(request));
    await vetTarget(change.url, allowPrivate);
    const webhook = await app.db.transaction().execute((trx) => updateWebhook(trx, request.scope, id, change));
    return (await present(request, [webhook]))[0];
  });

  app.delete(one, { schema: { params: WebhookParams, response: { 200: WebhookSchema } } }, async (request) => {
    const id = idOf(request);
    const webhook = await app.db.transaction().execute((trx) => deleteWebhook(trx, request.scope, id));
    return (await present(request, [webhook]))[0];
  });

  app.get(
    '/api/products/:product_id/webhooks/:webhook_id/deliveries.json',
    { schema: { params: WebhookParams, querystring: params({ offset: Param, limit: Param }), response: { 200: Type.Array(DeliverySchema) } } },
    async (request, reply) => {
      const page = asPage(requestParams(request), DELIVERY_PAGE);
      const { rows, total } = await deliveriesOf(app.db, request.scope, idOf(request), page);
      reply.header('X-Sprintly-Delivery-Count', String(total));
      return rows.map(presentDelivery);
    },
  );
}
