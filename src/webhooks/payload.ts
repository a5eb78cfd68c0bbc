import crypto from 'node:crypto';
import type { WebhookEventRow } from '../db/schema.js';

/**
 * The body of a delivery in the `shiplog` format: the event's id, the delivery's, when the change
 * happened, its type, then what the change wrote (product, actor, the resource, `changes`).
 */
export function eventBody(event: WebhookEventRow, deliveryUid: string): string {
  const written = JSON.parse(event.payload) as Record<string, unknown>;
  return JSON.stringify({ id: event.uid, delivery_id: deliveryUid, timestamp: event.created_at, type: event.type, ...written });
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the Shiplog-Signature header. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = crypto.createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What a Slack message reads of an event (the shapes of items.json and deploys.json). */
interface Person {
  first_name: string;
  last_name: string;
  email: string;
}
interface ItemPart {
  number: number;
  title: string;
  type: string;
  status: string;
  short_url: string;
}
interface Written {
  product: { id: number; name: string };
  actor: Person;
  item?: ItemPart;
  deploy?: { environment: string; version: string; notes: string; items: ItemPart[] };
  changes?: Record<string, unknown>;
  reverted?: number[];
}

/** Items a deploy message links to; the rest are counted. */
const LISTED_ITEMS = 25;
/** Slack's limit on the text of a section block. */
const SECTION_TEXT = 3000;

/** Slack's escaping of message text: only these three mean something. */
const escapeText = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** A link's label cannot hold `|`, which ends the URL part. */
const link = (url: string, label: string): string => `<${url}|${escapeText(label).replace(/\|/g, '¦')}>`;
const itemLink = (item: ItemPart): string => link(item.short_url, `#${item.number} ${item.title}`);
const nameOf = (p: Person): string => escapeText(`${p.first_name} ${p.last_name}`.trim() || p.email);
const cut = (text: string, max: number): string => ([...text].length <= max ? text : `${[...text].slice(0, max - 1).join('')}…`);

function itemList(items: ItemPart[]): string {
  const listed = items.slice(0, LISTED_ITEMS).map(itemLink).join(', ');
  return items.length > LISTED_ITEMS ? `${listed} and ${items.length - LISTED_ITEMS} more` : listed;
}

/** The one line a chat shows: what happened, to which items (linked), by whom. */
function messageText(type: string, w: Written): string {
  const by = nameOf(w.actor);
  const deploy = w.deploy;
  const item = w.item;
  switch (type) {
    case 'deploy.created':
      return `${escapeText(deploy!.version ? `${deploy!.version} to ${deploy!.environment}` : `Deploy to ${deploy!.environment}`)}: ${itemList(deploy!.items)} (by ${by})`;
    case 'deploy.rolled_back': {
      const known = new Map(deploy!.items.map((i) => [i.number, i]));
      const reverted = (w.reverted ?? []).map((n) => known.get(n) ?? ({ number: n, title: '', short_url: '' } as ItemPart));
      const target = escapeText(deploy!.version ? `${deploy!.environment} rolled back to ${deploy!.version}` : `${deploy!.environment} rolled back`);
      const list = itemList(reverted.filter((i) => i.short_url)) || reverted.map((i) => `#${i.number}`).join(', ');
      return `${target}${list ? `: ${list} reverted` : ''} (by ${by})`;
    }
    case 'item.created':
      return `${by} created ${escapeText(item!.type)} ${itemLink(item!)}`;
    case 'item.status_changed':
      return `${by} moved ${itemLink(item!)} from ${escapeText(String(w.changes?.status ?? ''))} to ${escapeText(item!.status)}`;
    case 'item.updated':
      return `${by} updated ${itemLink(item!)}: ${escapeText(Object.keys(w.changes ?? {}).join(', ').replace(/_/g, ' '))}`;
    default:
      return escapeText(type);
  }
}

/**
 * The body of a delivery in the `slack` format: `{text, blocks}`, which the incoming webhooks of
 * Slack, Mattermost and Rocket.Chat accept: the line of what happened, a deploy's notes, and the
 * product's name.
 */
export function slackMessage(event: WebhookEventRow): string {
  const written = JSON.parse(event.payload) as Written;
  const text = messageText(event.type, written);
  const blocks: unknown[] = [{ type: 'section', text: { type: 'mrkdwn', text: cut(text, SECTION_TEXT) } }];
  if (written.deploy?.notes) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: cut(escapeText(written.deploy.notes), SECTION_TEXT) } });
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeText(written.product.name) }] });
  return JSON.stringify({ text, blocks });
}
