import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, NotFoundError } from '../../errors.js';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  createWebhook,
  deleteWebhook,
  EVENT_TYPES,
  listWebhooks,
  maskedUrl,
  parseCreateWebhook,
  presentWebhooks,
  updateWebhook,
  vetTarget,
  webhookIdOf,
} from '../../webhooks/index.js';
import { asText, checkToken, formErrors, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { confirmPage } from '../views/confirm.js';
import { webhooksPage, type WebhookForm } from '../views/webhooks.js';
import { ProductPath, productPath, redirectAfterPost, strings, WebhookPath } from './common.js';

/** What the webhooks page says after a change (`?done=`). */
const DONE = { deleted: 'The webhook is deleted.', enabled: 'The webhook is enabled.' } as const;

/** The step before deleting a webhook: which one, and that its deliveries go with it. */
async function confirmDelete(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, id: number) {
  const scope = request.scope;
  const [webhook] = (await listWebhooks(app.db, scope)).filter((w) => w.id === id);
  if (!webhook) throw new NotFoundError('No such webhook.');
  const page = confirmPage({
    question: `Delete the webhook to ${maskedUrl(webhook.url)}?`,
    detail: 'Its deliveries are deleted with it, and it cannot be undone.',
    action: productPath(request, `/webhooks/${id}/delete`),
    label: 'Delete the webhook',
    cancel: productPath(request, `/webhooks#webhook-${id}`),
    viewer: viewerOf(sessionOf(request)),
  });
  return sendPage(reply, 200, `Delete a webhook · ${scope.product.name}`, page, sessionOf(request));
}

/** Every event ticked: what a new webhook most often wants. */
const blankForm = (): WebhookForm => ({ values: {}, errors: {}, chosen: [...EVENT_TYPES] });
export const webhookOf = (request: FastifyRequest) =>
  webhookIdOf((request.params as { webhook_id: string }).webhook_id);

/** The list of the product's webhooks and the form that adds one; one just added shows its secret. */
async function renderWebhooks(
  app: FastifyInstance,
  o: {
    request: FastifyRequest;
    reply: FastifyReply;
    status: number;
    form: WebhookForm;
    added?: { url: string; secret: string };
    notice?: string;
  },
) {
  const scope = o.request.scope;
  const webhooks = await presentWebhooks(app.db, await listWebhooks(app.db, scope), scope.user.id);
  const view = {
    product: productOf(scope),
    webhooks,
    form: o.form,
    eventTypes: EVENT_TYPES,
    added: o.added,
    notice: o.notice,
    viewer: viewerOf(sessionOf(o.request)),
  };
  return sendPage(o.reply, o.status, `Webhooks · ${scope.product.name}`, webhooksPage(view), sessionOf(o.request));
}

/** Adding a webhook: its target is checked as the API checks it; a full product is said above the form. */
async function addWebhook(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
  checkToken(request);
  const p = requestParams(request);
  try {
    const input = parseCreateWebhook(p);
    await vetTarget(input.url, app.config.webhooksAllowPrivate);
    const { webhook, secret } = await app.db.transaction().execute((trx) => createWebhook(trx, request.scope, input));
    const added = { url: maskedUrl(webhook.url), secret };
    return renderWebhooks(app, { request, reply, status: 200, form: blankForm(), added });
  } catch (err) {
    // A full product is said above the form; the fields' own reasons next to them.
    const shown =
      formErrors(err) ??
      (err instanceof AppError && err.statusCode === 422 ? { errors: {}, message: err.message } : undefined);
    if (!shown) throw err;
    const form = { values: asText(p), chosen: strings(p.events), ...shown };
    return renderWebhooks(app, { request, reply, status: 400, form });
  }
}

/**
 * A product's webhooks, for its admins (others get the 403 page): the list, adding one (its secret
 * shown once), deleting, enabling one that was disabled. The same service operations as the API's
 * webhooks.json.
 */
export async function webhooksRoutes(app: FastifyInstance): Promise<void> {
  app.get('/webhooks', { schema: { ...ProductPath, querystring: params({ done: Param }) } }, async (request, reply) => {
    const done = requestParams(request).done;
    const notice = typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done as keyof typeof DONE] : undefined;
    return renderWebhooks(app, { request, reply, status: 200, form: blankForm(), notice });
  });

  // A target URL of 2,000 characters fits even percent-encoded at 12 bytes a character.
  const body = params({ csrf: Param, url: Param, events: Param, format: Param, secret: Param });
  app.post('/webhooks', { bodyLimit: 32 * 1024, schema: { ...ProductPath, body } }, async (request, reply) =>
    addWebhook(app, request, reply),
  );

  const formOnly = { schema: { ...WebhookPath, body: params({ csrf: Param }) } };
  const confirmed = { schema: { ...WebhookPath, body: params({ csrf: Param, confirm: Param }) } };
  // Deleting cannot be undone: the first post asks, the second (confirm=yes) deletes.
  app.post('/webhooks/:webhook_id/delete', confirmed, async (request, reply) => {
    checkToken(request);
    const id = webhookOf(request);
    if (requestParams(request).confirm !== 'yes') return confirmDelete(app, request, reply, id);
    await app.db.transaction().execute((trx) => deleteWebhook(trx, request.scope, id));
    return redirectAfterPost(reply, productPath(request, '/webhooks?done=deleted'));
  });

  app.post('/webhooks/:webhook_id/enable', formOnly, async (request, reply) => {
    checkToken(request);
    const id = webhookOf(request);
    await app.db.transaction().execute((trx) => updateWebhook(trx, request.scope, id, { enabled: true }));
    return redirectAfterPost(reply, productPath(request, '/webhooks?done=enabled'));
  });
}
