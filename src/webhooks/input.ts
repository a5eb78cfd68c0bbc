import { webhookNotFound } from '../errors.js';
import {
  asBoolean,
  asEnum,
  asEnumList,
  asText,
  collectErrors,
  digitsToId,
  invalid,
  type ParamValue,
} from '../http/params.js';
import { EVENT_TYPES, FORMATS, MAX_URL_LENGTH, type EventType, type WebhookFormat } from './model.js';

export interface WebhookInput {
  url: URL;
  events: EventType[];
  format: WebhookFormat;
  /** Absent: one is generated. */
  secret?: string;
}

/** What an update may change; absent fields stay. `enabled: true` re-enables a disabled webhook. */
export interface WebhookChange {
  url?: URL;
  events?: EventType[];
  format?: WebhookFormat;
  enabled?: boolean;
}

/** An absolute http(s) URL with a host; no other scheme reaches a receiver. */
function asTarget(value: ParamValue): URL | undefined {
  const text = asText('url', value, MAX_URL_LENGTH)?.trim();
  if (text === undefined || text === '') return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return invalid('url', 'must be an absolute http:// or https:// URL');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '')
    invalid('url', 'must be an absolute http:// or https:// URL');
  return url;
}

function asEvents(value: ParamValue): EventType[] | undefined {
  const events = asEnumList('events', value, EVENT_TYPES);
  if (events !== undefined && events.length === 0)
    invalid('events', `must name at least one of ${EVENT_TYPES.join(', ')}`);
  return events;
}

/** A secret the receiver chose: long enough to sign with, and printable so it can be pasted. */
function asSecret(value: ParamValue): string | undefined {
  const secret = asText('secret', value, 200)?.trim();
  if (secret === undefined || secret === '') return undefined;
  if ([...secret].length < 16 || !/^[\x21-\x7e]+$/.test(secret))
    invalid('secret', 'must be 16 to 200 printable ASCII characters without spaces');
  return secret;
}

export function parseCreateWebhook(p: Record<string, ParamValue>): WebhookInput {
  return collectErrors((field) => {
    const url = field(() => asTarget(p.url) ?? invalid('url', 'is required'));
    const events = field(
      () => asEvents(p.events) ?? invalid('events', `is required: a list of ${EVENT_TYPES.join(', ')}`),
    );
    const format = field(() => asEnum('format', p.format, FORMATS)) ?? 'shiplog';
    const secret = field(() => asSecret(p.secret));
    return { url: url!, events: events!, format, secret };
  });
}

export function parseUpdateWebhook(p: Record<string, ParamValue>): WebhookChange {
  return collectErrors((field) => ({
    url: field(() => asTarget(p.url)),
    events: field(() => asEvents(p.events)),
    format: field(() => asEnum('format', p.format, FORMATS)),
    enabled: field(() => asBoolean('enabled', p.enabled)),
  }));
}

/** The webhook id of a path; anything but digits names none. */
export function webhookIdOf(raw: string): number {
  const id = digitsToId(raw);
  if (id === undefined) throw webhookNotFound();
  return id;
}
