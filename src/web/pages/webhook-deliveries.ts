import type { FastifyInstance, FastifyRequest } from 'fastify';
import { asPage, params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { deliveriesOf, getWebhook, presentDelivery, presentWebhooks, replayDelivery } from '../../webhooks/index.js';
import { checkToken, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { deliveriesPage, type DeliveriesView } from '../views/webhooks.js';
import { redirectAfterPost, WebhookPath } from './common.js';
import { webhookOf } from './webhooks.js';

/** Deliveries a page lists. */
const DELIVERIES_SHOWN = 50;

/** A page of one webhook's deliveries, newest first, and the webhook. */
async function loadDeliveries(app: FastifyInstance, request: FastifyRequest): Promise<DeliveriesView> {
  const scope = request.scope;
  const id = webhookOf(request);
  const page = asPage(
    { offset: requestParams(request).offset, limit: String(DELIVERIES_SHOWN) },
    { default: DELIVERIES_SHOWN, max: DELIVERIES_SHOWN },
  );
  const [webhook] = await presentWebhooks(app.db, [await getWebhook(app.db, scope, id)], scope.user.id);
  const { rows, total } = await deliveriesOf(app.db, scope, id, page);
  return {
    product: productOf(scope),
    webhook,
    deliveries: rows.map(presentDelivery),
    total,
    offset: page.offset,
    pageSize: DELIVERIES_SHOWN,
    viewer: viewerOf(sessionOf(request)),
    replayed: requestParams(request).replayed === '1',
  };
}

/** A webhook's deliveries, with what each receiver answered (its admins only, as the list). */
export async function webhookDeliveriesRoutes(app: FastifyInstance): Promise<void> {
  const query = params({ offset: Param, replayed: Param });
  app.get('/webhooks/:webhook_id', { schema: { ...WebhookPath, querystring: query } }, async (request, reply) => {
    const view = await loadDeliveries(app, request);
    const title = `Webhook deliveries · ${request.scope.product.name}`;
    return sendPage(reply, 200, title, deliveriesPage(view), sessionOf(request));
  });

  // Sends a delivery's event again, as a new delivery (`shiplog webhooks replay`): the list then shows it.
  const replayPath = {
    params: {
      type: 'object',
      properties: { product_id: { type: 'string' }, webhook_id: { type: 'string' }, delivery_id: { type: 'string' } },
    },
  } as const;
  const body = params({ csrf: Param });
  app.post(
    '/webhooks/:webhook_id/deliveries/:delivery_id/replay',
    { schema: { ...replayPath, body } },
    async (request, reply) => {
      checkToken(request);
      const webhook = await getWebhook(app.db, request.scope, webhookOf(request));
      const uid = (request.params as { delivery_id: string }).delivery_id;
      await app.db.transaction().execute((trx) => replayDelivery(trx, uid, { webhookId: webhook.id }));
      app.webhooks.nudge();
      return redirectAfterPost(reply, `/app/products/${request.scope.product.id}/webhooks/${webhook.id}?replayed=1`);
    },
  );
}
