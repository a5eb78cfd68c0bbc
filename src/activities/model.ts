import { cut, MAX_CHANGE_LENGTH } from '../webhooks/index.js';

/**
 * What an activity says happened (docs/INTERFACE.md §13), and what its `meta` holds:
 *
 * - `created`, `updated`, `status_changed`, `archived`: `changes`, each changed field's `before` and
 *   `after` (a new item: every field it was given, before null). An update that moves the status is
 *   `status_changed`, any other `updated`, as webhook events tell them.
 * - `deployed`: `deploy_id`, `environment`, `version`; `rolled_back` adds the deploy the item's
 *   entry went back to (`restored_deploy_id`, `restored_version`), both null when it was reverted.
 * - `commented`, `comment_deleted`: `comment_id`, `body`. `favorited`, `unfavorited`: `favorite_id`.
 *   `blocked`, `unblocked`, `block_removed`: `block_id`, `blocking` and `blocked` (item numbers).
 *   `attached`: `attachment_id`, `name`.
 */
export const ACTIVITY_ACTIONS = [
  'created',
  'updated',
  'status_changed',
  'archived',
  'deployed',
  'rolled_back',
  'commented',
  'comment_deleted',
  'favorited',
  'unfavorited',
  'blocked',
  'unblocked',
  'block_removed',
  'attached',
] as const;
export type ActivityAction = (typeof ACTIVITY_ACTIONS)[number];

/** Activities per page: without `limit`, and at most. */
export const ACTIVITY_PAGE = { default: 20, max: 100 } as const;
/** The deepest page asked by offset: a deeper one walks that many entries of the index first. */
export const MAX_ACTIVITY_OFFSET = 100_000;

/** Characters kept of a text in `meta` (a description before and after), as webhook events keep them. */
export const MAX_META_TEXT = MAX_CHANGE_LENGTH;
/** Entries kept of a list in `meta` (an item's tags: at most 100), and keys of an object. */
export const MAX_META_LIST = 100;
/** How deep `meta` may nest. */
const MAX_META_DEPTH = 4;
/**
 * The most one activity's `meta` may weigh, in bytes of JSON: an update of every text field and a
 * hundred tags, cut as above, stays below it; past it texts are cut to a tenth.
 */
export const MAX_META_BYTES = 128 * 1024;

/**
 * `meta` as stored: texts cut to `MAX_META_TEXT` characters and `…`, lists and objects to
 * `MAX_META_LIST` entries, nesting to a few levels, and `truncated` naming where (as webhook
 * events do: `["changes.description.before"]`). Bounded in bytes whatever it is given.
 */
export function boundedMeta(meta: Record<string, unknown>): string {
  for (const max of [MAX_META_TEXT, MAX_META_TEXT / 10]) {
    const truncated = new Set<string>();
    const kept = boundValue(meta, '', 0, max, truncated) as Record<string, unknown>;
    if (truncated.size) kept.truncated = [...truncated];
    const json = JSON.stringify(kept);
    if (Buffer.byteLength(json) <= MAX_META_BYTES) return json;
  }
  return JSON.stringify({ truncated: ['meta'] });
}

function boundValue(value: unknown, path: string, depth: number, max: number, truncated: Set<string>): unknown {
  if (typeof value === 'string') {
    const kept = cut(value, max);
    if (kept !== value) truncated.add(path);
    return kept;
  }
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  if (value === null || typeof value !== 'object' || depth >= MAX_META_DEPTH) {
    if (value !== null && value !== undefined) truncated.add(path);
    return null;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  if (entries.length > MAX_META_LIST) truncated.add(path);
  const bound = (key: string, v: unknown) =>
    boundValue(v, Array.isArray(value) ? path : path ? `${path}.${key}` : key, depth + 1, max, truncated);
  const kept = entries.slice(0, MAX_META_LIST);
  if (Array.isArray(value)) return kept.map(([k, v]) => bound(k, v));
  return Object.fromEntries(kept.filter(([, v]) => v !== undefined).map(([k, v]) => [k, bound(k, v)]));
}

/** How fields are named in labels. */
const FIELD_NAMES: Record<string, string> = { close_reason: 'close reason', assigned_to: 'assignee' };

/** `a`, `a and b`, `a, b and c`. */
const spoken = (words: string[]) =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;

type Meta = Record<string, unknown>;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const numbered = (value: unknown, otherwise: string): string => (typeof value === 'number' ? `#${value}` : otherwise);

/** The changes an update names, as `{field: {before, after}}`. */
function changesOf(meta: Meta): Record<string, { before?: unknown; after?: unknown }> {
  const changes = meta.changes;
  return changes && typeof changes === 'object' ? (changes as Record<string, { before?: unknown }>) : {};
}

function updatedLabel(n: string, meta: Meta): string {
  const changes = changesOf(meta);
  const status = changes.status;
  const others = Object.keys(changes)
    .filter((f) => f !== 'status')
    .map((f) => FIELD_NAMES[f] ?? f);
  const changed = others.length ? `changed the ${spoken(others)} of ${n}` : `changed ${n}`;
  if (!status) return capital(changed);
  const moved = `Moved ${n} from ${text(status.before) ?? 'nowhere'} to ${text(status.after) ?? 'nowhere'}`;
  return others.length ? `${moved} and changed the ${spoken(others)}` : moved;
}

function rollbackLabel(n: string, meta: Meta): string {
  const environment = text(meta.environment) ?? 'an environment';
  if (typeof meta.restored_version === 'string')
    return `Rolled ${n} in ${environment} back to ${meta.restored_version || 'an earlier deploy'}`;
  return `Rolled ${n} out of ${environment}`;
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const version = (meta: Meta) => (text(meta.version) ? ` (${meta.version})` : '');

/** A short text of what happened, made from the action and `meta` whenever an activity is shown. */
const LABELS: Record<ActivityAction, (n: string, meta: Meta) => string> = {
  created: (n, meta) => `Created ${text(changesOf(meta).type?.after) ?? 'item'} ${n}`,
  updated: updatedLabel,
  status_changed: updatedLabel,
  archived: (n) => `Archived ${n}`,
  deployed: (n, meta) => `Deployed ${n} to ${text(meta.environment) ?? 'an environment'}${version(meta)}`,
  rolled_back: rollbackLabel,
  commented: (n) => `Commented on ${n}`,
  comment_deleted: (n) => `Deleted a comment on ${n}`,
  favorited: (n) => `Favorited ${n}`,
  unfavorited: (n) => `Unfavorited ${n}`,
  blocked: (n, meta) => `Marked ${numbered(meta.blocked, 'an item')} as blocked by ${numbered(meta.blocking, n)}`,
  unblocked: (n, meta) =>
    `Marked ${numbered(meta.blocked, 'an item')} as no longer blocked by ${numbered(meta.blocking, n)}`,
  block_removed: (n, meta) =>
    `Removed the block of ${numbered(meta.blocked, 'an item')} by ${numbered(meta.blocking, n)}`,
  attached: (n, meta) => `Attached ${text(meta.name) ?? 'a file'} to ${n}`,
};

/** The label of an activity of item `itemNumber` (an action unknown here, written by a newer version: the action). */
export function labelOf(action: string, itemNumber: number, meta: Meta): string {
  const label = LABELS[action as ActivityAction];
  return label ? label(`#${itemNumber}`, meta) : `${capital(action.replace(/_/g, ' '))} #${itemNumber}`;
}
