/** What a webhook can be told about. `deploy.rolled_back` comes from rollbacks (a deploy that takes items back). */
export const EVENT_TYPES = ['deploy.created', 'deploy.rolled_back', 'item.created', 'item.updated', 'item.status_changed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** `shiplog`: the signed JSON event; `slack`: a message incoming webhooks of Slack, Mattermost and Rocket.Chat accept. */
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

export const eventList = (events: string): EventType[] => events.split(',').filter((e): e is EventType => (EVENT_TYPES as readonly string[]).includes(e));
