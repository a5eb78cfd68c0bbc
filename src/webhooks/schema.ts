import { Type } from '@sinclair/typebox';
import { BODY_ERRORS, doc, errorAnswers, ref, type Explained } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ProductParams, WebhookParams } from '../http/schemas.js';
import { DELIVERY_PAGE, EVENT_TYPES, FORMATS, MAX_URL_LENGTH, MAX_WEBHOOKS } from './model.js';
import { CreatedWebhookSchema, DeliverySchema, WebhookSchema } from './present.js';

const FORMAT =
  '`shiplog` (the signed JSON event) or `slack` ' +
  '(a message for incoming webhooks of Slack, Mattermost and Rocket.Chat).';

/**
 * What a webhook's parameters mean (docs/INTERFACE.md §10); `secret` only counts on creation,
 * `enabled` on a change.
 */
const webhookFields = {
  url: doc.text(
    'An absolute http:// or https:// URL whose host is, and resolves only to, global unicast addresses ' +
      '(unless the operator allows others); credentials in it are never shown back, ' +
      'and a URL sent back as shown (`***`) keeps them.',
    MAX_URL_LENGTH,
  ),
  events: doc.list('The event types it gets; at least one.', EVENT_TYPES),
  format: doc.choice(FORMATS, FORMAT),
  secret: doc.text("Ignored: a webhook's secret never changes.", 200),
  enabled: doc.flag(
    '`true` re-enables a disabled webhook, its failures forgotten; ' +
      '`false` disables it, and gives up its deliveries waiting then.',
  ),
};
const createFields = {
  ...webhookFields,
  url: doc.required(webhookFields.url),
  events: doc.required(webhookFields.events),
  format: doc.choice(FORMATS, `${FORMAT} \`shiplog\` unless given.`),
  secret: doc.text(
    '16 to 200 printable ASCII characters without spaces, to sign deliveries with; without it one is made.',
    200,
  ),
  enabled: doc.flag('Ignored: a new webhook is enabled.'),
};

const BAD_FIELDS =
  'url not an absolute http(s) URL, too long, or leading to an address not allowed ' +
  'or to a host name that does not resolve; events empty or naming an unknown event type; an unknown format';
const WEBHOOK_MISSING = { 404: 'No webhook with that id in the product.' };
const tags = ['webhooks'];
const answer = (description: string, ...errors: Explained[]) => ({
  response: { 200: ref(WebhookSchema, { description }) },
  errors: errorAnswers(errors),
});

/** What the admins-only hook of the webhook routes answers. */
export const ADMINS_ONLY: Explained = { 403: 'The caller is not an admin of the product.' };
/** How many deliveries a webhook has, before paging. */
export const DELIVERY_COUNT = 'X-Sprintly-Delivery-Count';

export const listWebhooksSchema = {
  summary: 'List webhooks',
  operationId: 'listWebhooks',
  tags,
  params: ProductParams,
  response: { 200: Type.Array(ref(WebhookSchema), { description: "The product's webhooks, by id." }) },
};

export const createWebhookSchema = {
  summary: 'Add a webhook',
  description: "The answer shows the webhook's secret, this once.",
  operationId: 'createWebhook',
  tags,
  params: ProductParams,
  body: params(createFields),
  response: { 200: ref(CreatedWebhookSchema, { description: 'The new webhook, with its secret.' }) },
  errors: errorAnswers([
    {
      400: `url or events missing; ${BAD_FIELDS}; a secret not of 16 to 200 printable ASCII characters without spaces.`,
      422: `The product has ${MAX_WEBHOOKS} webhooks already.`,
    },
    BODY_ERRORS,
  ]),
};

export const getWebhookSchema = {
  summary: 'Fetch a webhook',
  operationId: 'getWebhook',
  tags,
  params: WebhookParams,
  ...answer('The webhook.', WEBHOOK_MISSING),
};

export const updateWebhookSchema = {
  summary: 'Change a webhook',
  description: 'Changes what is given. A disabled webhook gets no events; those of meanwhile are not sent later.',
  operationId: 'updateWebhook',
  tags,
  params: WebhookParams,
  body: params(webhookFields),
  ...answer('The webhook as it is now.', { 400: `${BAD_FIELDS}; enabled not a flag.` }, WEBHOOK_MISSING, BODY_ERRORS),
};

export const deleteWebhookSchema = {
  summary: 'Delete a webhook',
  description: 'Its delivery log goes with it, and the events no other webhook got.',
  operationId: 'deleteWebhook',
  tags,
  params: WebhookParams,
  ...answer('The webhook as it was.', WEBHOOK_MISSING, BODY_ERRORS),
};

export const listDeliveriesSchema = {
  summary: "List a webhook's deliveries",
  description: 'Newest first.',
  operationId: 'listWebhookDeliveries',
  tags,
  params: WebhookParams,
  querystring: params({
    offset: doc.integer('Deliveries to skip; 0 by default.'),
    limit: doc.integer(
      `Page size: ${DELIVERY_PAGE.default} by default, above ${DELIVERY_PAGE.max} taken as ${DELIVERY_PAGE.max}.`,
      1,
    ),
  }),
  response: {
    200: Type.Array(ref(DeliverySchema), {
      description: 'The page of deliveries.',
      headers: {
        [DELIVERY_COUNT]: {
          type: 'integer',
          description: 'How many deliveries the webhook has, before paging.',
        },
      },
    }),
  },
  errors: errorAnswers([{ 400: 'A malformed offset or limit.' }, WEBHOOK_MISSING]),
};
