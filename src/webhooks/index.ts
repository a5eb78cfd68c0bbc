/**
 * Webhooks: a product's admins name URLs that are told about its changes. A feature that changes
 * something queues the event here inside its own transaction (queueEvent), rendering its own
 * resource, so webhooks know no feature but products and users; a worker signs and sends it after
 * commit.
 */
export { parseCreateWebhook, webhookIdOf } from './input.js';
export { EVENT_TYPES, MAX_CHANGE_LENGTH, MAX_EVENT_ITEMS, maskedUrl, NO_VIEWER, type EventType } from './model.js';
export { cut, type BlockSummary, type DeploySummary, type EventParts, type ItemSummary } from './payload.js';
export { presentDelivery, presentWebhooks, WEBHOOK_SCHEMAS, type DeliveryJson, type WebhookJson } from './present.js';
export { webhookRoutes } from './routes.js';
export {
  createWebhook,
  deleteWebhook,
  deliveriesOf,
  deliveryLog,
  getWebhook,
  listWebhooks,
  queueEvent,
  replayDelivery,
  updateWebhook,
  vetTarget,
} from './service.js';
export { DEFAULT_WEBHOOK_WORKER_OPTIONS, WebhookWorker, type WebhookWorkerOptions } from './worker.js';
