import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { asPage, params, Param, type ParamValue } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { requireAdmin } from '../products/index.js';
import {
  createWebhook,
  deleteWebhook,
  deliveriesOf,
  EVENT_TYPES,
  getWebhook,
  listWebhooks,
  maskedUrl,
  parseCreateWebhook,
  presentDelivery,
  presentWebhooks,
  updateWebhook,
  vetTarget,
  webhookIdOf,
} from '../webhooks/index.js';
import { asText, checkToken, formErrors, productOf, sessionOf, viewerOf } from './pages.js';
import { sendPage } from './session.js';
import { deliveriesPage, webhooksPage, type WebhookForm } from './views/webhooks.js';

const ProductPath = { params: { type: 'object', properties: { product_id: { type: 'string' } } } } as const;
const WebhookPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, webhook_id: { type: 'string' } } },
} as const;
/** Deliveries a page lists. */
const DELIVERIES_SHOWN = 50;

/** Every event ticked: what a new webhook most often wants. */
const blankForm = (): WebhookForm => ({ values: {}, errors: {}, chosen: [...EVENT_TYPES] });
const strings = (v: ParamValue): string[] => [v ?? []].flat().filter((x): x is string => typeof x === 'string');
const webhookOf = (request: FastifyRequest) => webhookIdOf((request.params as { webhook_id: string }).webhook_id);
const listPath = (request: FastifyRequest) => `/app/products/${request.scope.product.id}/webhooks`;

async function renderWebhooks(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  form: WebhookForm,
  added?: { url: string; secret: string },
) {
  const scope = request.scope;
  const webhooks = await presentWebhooks(app.db, await listWebhooks(app.db, scope), scope.user.id);
  const view = { product: productOf(scope), webhooks, form, eventTypes: EVENT_TYPES, added };
  return sendPage(
    reply,
    status,
    `Webhooks · ${scope.product.name}`,
    webhooksPage(view, viewerOf(sessionOf(request))),
    sessionOf(request),
  );
}

/**
 * A product's webhooks (`/app/products/{id}/webhooks`), for its admins (others get the 403 page):
 * the list, adding one (its secret shown once), deleting, enabling one that was disabled, and each
 * one's deliveries. The same service operations as the API's webhooks.json.
 */
export async function webhookPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', async (request) => requireAdmin(request.scope));

  app.get('/webhooks', { schema: ProductPath }, async (request, reply) =>
    renderWebhooks(app, request, reply, 200, blankForm()),
  );

  // A target URL of 2,000 characters fits even percent-encoded at 12 bytes a character.
  app.post(
    '/webhooks',
    {
      bodyLimit: 32 * 1024,
      schema: {
        ...ProductPath,
        body: params({ csrf: Param, url: Param, events: Param, format: Param, secret: Param }),
      },
    },
    async (request, reply) => {
      checkToken(request);
      const p = requestParams(request);
      try {
        const input = parseCreateWebhook(p);
        await vetTarget(input.url, app.config.webhooksAllowPrivate);
        const { webhook, secret } = await app.db
          .transaction()
          .execute((trx) => createWebhook(trx, request.scope, input));
        return renderWebhooks(app, request, reply, 200, blankForm(), { url: maskedUrl(webhook.url), secret });
      } catch (err) {
        // A full product is said above the form; the fields' own reasons next to them.
        const shown =
          formErrors(err) ??
          (err instanceof AppError && err.statusCode === 422 ? { errors: {}, message: err.message } : undefined);
        if (!shown) throw err;
        return renderWebhooks(app, request, reply, 400, { values: asText(p), chosen: strings(p.events), ...shown });
      }
    },
  );

  app.post(
    '/webhooks/:webhook_id/delete',
    { schema: { ...WebhookPath, body: params({ csrf: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const id = webhookOf(request);
      await app.db.transaction().execute((trx) => deleteWebhook(trx, request.scope, id));
      return reply.header('cache-control', 'no-store').redirect(listPath(request), 303);
    },
  );

  app.post(
    '/webhooks/:webhook_id/enable',
    { schema: { ...WebhookPath, body: params({ csrf: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const id = webhookOf(request);
      await app.db.transaction().execute((trx) => updateWebhook(trx, request.scope, id, { enabled: true }));
      return reply.header('cache-control', 'no-store').redirect(listPath(request), 303);
    },
  );

  app.get(
    '/webhooks/:webhook_id',
    { schema: { ...WebhookPath, querystring: params({ offset: Param }) } },
    async (request, reply) => {
      const scope = request.scope;
      const id = webhookOf(request);
      const page = asPage(
        { offset: requestParams(request).offset, limit: String(DELIVERIES_SHOWN) },
        { default: DELIVERIES_SHOWN, max: DELIVERIES_SHOWN },
      );
      const [webhook] = await presentWebhooks(app.db, [await getWebhook(app.db, scope, id)], scope.user.id);
      const { rows, total } = await deliveriesOf(app.db, scope, id, page);
      const view = {
        product: productOf(scope),
        webhook,
        deliveries: rows.map(presentDelivery),
        total,
        offset: page.offset,
        pageSize: DELIVERIES_SHOWN,
      };
      return sendPage(
        reply,
        200,
        `Webhook deliveries · ${scope.product.name}`,
        deliveriesPage(view),
        sessionOf(request),
      );
    },
  );
}
