import crypto from 'node:crypto';
import { MAX_CHANGE_LENGTH, MAX_EVENT_BYTES, MAX_EVENT_ITEMS, MAX_NOTES_LENGTH } from './model.js';

/** An item as events show it: enough to say which and link to it; the API has the rest. */
export interface ItemSummary {
  number: number;
  title: string;
  type: string;
  status: string;
  short_url: string;
}

/** A deploy as events show it: its first items (by number) and how many it has. */
export interface DeploySummary {
  id: number;
  environment: string;
  version: string;
  notes: string;
  created_at: string;
  rollback: boolean;
  item_count: number;
  items: ItemSummary[];
}

/** A block as events show it: which item blocks which, and whether it was lifted. */
export interface BlockSummary {
  id: number;
  created_at: string;
  unblocked: boolean;
  /** Whether the change removed it (its creator took it back). */
  removed?: boolean;
  item: ItemSummary;
  blocked: ItemSummary;
}

/** What a change tells about itself: its resource and, for updates, the previous values of what changed. */
export interface EventParts {
  item?: ItemSummary;
  /** A comment's: its body cut to MAX_NOTES_LENGTH. */
  comment?: { id: number; body: string; created_at: string };
  favorite?: { id: number; created_at: string };
  block?: BlockSummary;
  changes?: Record<string, unknown>;
  deploy?: DeploySummary;
  /** A rollback: the numbers of the items it took back (those of `deploy.items`), the deploys it undid. */
  reverted?: number[];
  reverted_deploys?: number[];
  reverted_deploy_count?: number;
}

interface Person {
  first_name: string;
  last_name: string;
  email: string;
}

/** What every event starts with. */
export interface EventHead {
  id: string;
  timestamp: string;
  type: string;
  product: { id: number; name: string };
  actor: Person & { id: number };
}

type Written = EventHead & EventParts & { truncated?: string[] };

/**
 * The first `max` code points and `…`, or the text when it is no longer (UTF-16 units never number
 * fewer than code points).
 */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const points = [...text];
  return points.length <= max ? text : `${points.slice(0, max).join('')}…`;
}

/**
 * Bounds what an event carries: at most MAX_EVENT_ITEMS items (the count says how many there
 * are), notes and previous values cut (`…`, and `truncated` names where), then, should the
 * whole still exceed MAX_EVENT_BYTES, fewer items listed.
 */
function bounded(head: EventHead, parts: EventParts): Written {
  const truncated: string[] = [];
  const written: Written = { ...head, ...parts };
  if (parts.deploy) {
    const notes = cut(parts.deploy.notes, MAX_NOTES_LENGTH);
    if (notes !== parts.deploy.notes) truncated.push('deploy.notes');
    written.deploy = { ...parts.deploy, notes, items: parts.deploy.items.slice(0, MAX_EVENT_ITEMS) };
  }
  if (parts.reverted) written.reverted = parts.reverted.slice(0, MAX_EVENT_ITEMS);
  if (parts.comment) {
    const body = cut(parts.comment.body, MAX_NOTES_LENGTH);
    if (body !== parts.comment.body) truncated.push('comment.body');
    written.comment = { ...parts.comment, body };
  }
  if (parts.reverted_deploys) {
    written.reverted_deploys = parts.reverted_deploys.slice(0, MAX_EVENT_ITEMS);
    written.reverted_deploy_count = parts.reverted_deploy_count ?? parts.reverted_deploys.length;
  }
  if (parts.changes) {
    written.changes = Object.fromEntries(
      Object.entries(parts.changes).map(([field, value]) => {
        if (typeof value !== 'string') return [field, value];
        const kept = cut(value, MAX_CHANGE_LENGTH);
        if (kept !== value) truncated.push(`changes.${field}`);
        return [field, kept];
      }),
    );
  }
  if (truncated.length) written.truncated = truncated;
  return written;
}

/**
 * The two bodies of an event, built once when it is written: the `shiplog` format (the event's
 * id, when, its type, product, actor and its own parts; no delivery's details, which go in
 * headers, so every delivery and retry sends these bytes) and the `slack` format.
 */
export function eventBodies(head: EventHead, parts: EventParts): { body: string; slack: string } {
  const written = bounded(head, parts);
  let body = JSON.stringify(written);
  while (Buffer.byteLength(body) > MAX_EVENT_BYTES && written.deploy && written.deploy.items.length > 0) {
    const keep = Math.floor(written.deploy.items.length / 2);
    written.deploy = { ...written.deploy, items: written.deploy.items.slice(0, keep) };
    if (written.reverted) written.reverted = written.reverted.slice(0, keep);
    body = JSON.stringify(written);
  }
  if (Buffer.byteLength(body) > MAX_EVENT_BYTES)
    throw new Error(`A ${head.type} event of ${Buffer.byteLength(body)} bytes, over ${MAX_EVENT_BYTES}.`);
  return { body, slack: slackMessage(written) };
}

/**
 * The `slack` body of an event written before those were kept: rendered from its stored body,
 * whose items lack `item_count` (they were all listed).
 */
export function slackOfStoredBody(body: string): string {
  return slackMessage(JSON.parse(body) as Written);
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the Shiplog-Signature header. */
export function signatureHeader(secret: string, body: Buffer, unixSeconds: number): string {
  const mac = crypto.createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** Items a deploy message links to; the rest are counted. */
const LISTED_ITEMS = 25;
/** Slack's limit on the text of a section block. */
const SECTION_TEXT = 3000;

/** Slack's escaping of message text: only these three mean something. */
const escapeText = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** A link's label cannot hold `|`, which ends the URL part. */
const link = (url: string, label: string): string => `<${url}|${escapeText(label).replace(/\|/g, '¦')}>`;
const itemLink = (item: ItemSummary): string => link(item.short_url, `#${item.number} ${item.title}`);
const nameOf = (p: Person): string => escapeText(`${p.first_name} ${p.last_name}`.trim() || p.email);
const sectionText = (text: string): string =>
  [...text].length <= SECTION_TEXT ? text : `${[...text].slice(0, SECTION_TEXT - 1).join('')}…`;

/** Links to the first items; `total` counts those not listed too. */
function itemList(items: ItemSummary[], total: number): string {
  const listed = items.slice(0, LISTED_ITEMS).map(itemLink).join(', ');
  return total > Math.min(items.length, LISTED_ITEMS)
    ? `${listed} and ${total - Math.min(items.length, LISTED_ITEMS)} more`
    : listed;
}

/** The one line a chat shows: what happened, to which items (linked), by whom. */
function messageText(w: Written): string {
  const by = nameOf(w.actor);
  const deploy = w.deploy;
  const item = w.item;
  switch (w.type) {
    case 'deploy.created': {
      const what = deploy!.version
        ? `${deploy!.version} to ${deploy!.environment}`
        : `Deploy to ${deploy!.environment}`;
      return `${escapeText(what)}: ${itemList(deploy!.items, deploy!.item_count ?? deploy!.items.length)} (by ${by})`;
    }
    case 'deploy.rolled_back': {
      const known = new Map(deploy!.items.map((i) => [i.number, i]));
      const reverted = (w.reverted ?? []).map(
        (n) => known.get(n) ?? ({ number: n, title: '', short_url: '' } as ItemSummary),
      );
      const total = Math.max(deploy!.item_count ?? 0, reverted.length);
      const target = escapeText(
        deploy!.version
          ? `${deploy!.environment} rolled back to ${deploy!.version}`
          : `${deploy!.environment} rolled back`,
      );
      const list =
        itemList(
          reverted.filter((i) => i.short_url),
          total,
        ) || reverted.map((i) => `#${i.number}`).join(', ');
      return `${target}${list ? `: ${list} reverted` : ''} (by ${by})`;
    }
    case 'item.created':
      return `${by} created ${escapeText(item!.type)} ${itemLink(item!)}`;
    case 'item.status_changed':
      return (
        `${by} moved ${itemLink(item!)} ` +
        `from ${escapeText(String(w.changes?.status ?? ''))} to ${escapeText(item!.status)}`
      );
    case 'item.updated':
      return `${by} updated ${itemLink(item!)}: ${escapeText(
        Object.keys(w.changes ?? {})
          .join(', ')
          .replace(/_/g, ' '),
      )}`;
    default:
      return conversationText(w, by);
  }
}

/** The line of an event of an item's conversation: comments, favorites, blocks. */
function conversationText(w: Written, by: string): string {
  const item = w.item;
  const block = w.block;
  switch (w.type) {
    case 'comment.created':
      return `${by} commented on ${itemLink(item!)}: ${escapeText(oneLineOf(w.comment?.body ?? ''))}`;
    case 'comment.deleted':
      return `${by} deleted a comment on ${itemLink(item!)}`;
    case 'favorite.created':
      return `${by} favorited ${itemLink(item!)}`;
    case 'block.created':
      return `${by} marked ${itemLink(block!.blocked)} as blocked by ${itemLink(block!.item)}`;
    case 'block.changed':
      return (
        `${by} ${block!.removed ? 'removed the block of' : 'unblocked'} ` +
        `${itemLink(block!.blocked)} by ${itemLink(block!.item)}`
      );
    default:
      return escapeText(w.type);
  }
}

/** A comment's first words on one line, for a chat. */
const oneLineOf = (text: string): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return [...line].length <= 200 ? line : `${[...line].slice(0, 199).join('')}…`;
};

/**
 * The `slack` format: `{text, blocks}`, which the incoming webhooks of Slack, Mattermost and
 * Rocket.Chat accept: the line of what happened, a deploy's notes, and the product's name.
 */
function slackMessage(written: Written): string {
  const text = messageText(written);
  const blocks: unknown[] = [{ type: 'section', text: { type: 'mrkdwn', text: sectionText(text) } }];
  if (written.deploy?.notes)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: sectionText(escapeText(written.deploy.notes)) } });
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeText(written.product.name) }] });
  return JSON.stringify({ text, blocks });
}
