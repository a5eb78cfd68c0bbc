import { ValidationError } from '../errors.js';
/** What a webhook can be told about. `deploy.rolled_back` comes from rollbacks (a deploy that takes items back). */
export const EVENT_TYPES = [
  'deploy.created',
  'deploy.rolled_back',
  'item.created',
  'item.updated',
  'item.status_changed',
  'comment.created',
  'comment.deleted',
  'favorite.created',
  'block.created',
  'block.changed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * `shiplog`: the signed JSON event; `slack`: a message incoming webhooks of Slack, Mattermost and
 * Rocket.Chat accept.
 */
export const FORMATS = ['shiplog', 'slack'] as const;
export type WebhookFormat = (typeof FORMATS)[number];

/** Where a delivery stands: pending -> sending -> delivered, or failed when given up. */
export const DELIVERY_STATUSES = ['pending', 'sending', 'delivered', 'failed'] as const;

/** A product has at most this many webhooks: each event is written once per webhook. */
export const MAX_WEBHOOKS = 20;
export const MAX_URL_LENGTH = 2000;

/** How long temporary failures of a delivery are retried. */
export const RETRY_WINDOW_MS = 24 * 3600_000;
/** A webhook failing for this long (with no success in between) is disabled. */
export const FAILING_FOR_MS = 24 * 3600_000;

/** Deliveries a log page lists: by default, and at most. */
export const DELIVERY_PAGE = { default: 50, max: 200 };

/** People in events are rendered as to a member who is none of them (no user has id 0): name and address only. */
export const NO_VIEWER = 0;

export const eventList = (events: string): EventType[] =>
  events.split(',').filter((e): e is EventType => (EVENT_TYPES as readonly string[]).includes(e));

/** Items an event lists (a deploy's first, by number); `item_count` says how many there are. */
export const MAX_EVENT_ITEMS = 50;
/** The most an event's body may weigh, in bytes: what every delivery of it sends. */
export const MAX_EVENT_BYTES = 256 * 1024;
/** Characters kept of a previous value in `changes`, and of a deploy's notes; longer ones are cut, with `…`. */
export const MAX_CHANGE_LENGTH = 1000;
export const MAX_NOTES_LENGTH = 4000;
/** Events and deliveries older than the retention are deleted this many rows at a time. */
export const RETENTION_BATCH = 200;

/** What stands for a webhook URL's user name and password wherever the URL is shown. */
export const MASK = '***';

/**
 * A webhook URL as it is shown (answers, pages, the command line): credentials in it
 * (`https://user:pass@host/`) are for the receiver only, so they are masked; deliveries use them.
 */
export function maskedUrl(stored: string): string {
  const url = new URL(stored);
  if (url.username === '' && url.password === '') return stored;
  if (url.username !== '') url.username = MASK;
  if (url.password !== '') url.password = MASK;
  return url.href;
}

/**
 * A changed URL that an admin sent back as it was shown (its credentials masked, the rest the
 * same) keeps the stored credentials, so that copying the URL shown does not lose them. Only for
 * the same receiver: masked credentials sent with another scheme, host or port would carry the
 * stored ones to an address of the sender's choosing, so they are refused (400).
 */
export function unmasked(given: URL, stored: string): URL {
  if (given.username !== MASK && given.password !== MASK) return given;
  const before = new URL(stored);
  if (given.origin !== before.origin) {
    throw new ValidationError({
      url:
        `keeps the stored user name and password (${MASK}) only for the same scheme, host and port; ` +
        'give them again for another',
    });
  }
  const url = new URL(given.href);
  if (url.username === MASK) url.username = before.username;
  if (url.password === MASK) url.password = before.password;
  return url;
}
