import { createHash } from 'node:crypto';
import type { Db } from '../db/connection.js';
import type { Serialize } from '../http/answer-size.js';
import { keptBytes } from '../kept-bytes.js';
import { LruCache } from '../lru.js';
import { presentProductSummary } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { findProfiles, presentUser, type UserProfile } from '../users/index.js';
import { presentDeploy, type DeployedItemJson, type ListedDeployJson } from './present.js';
import type { DeployOfPage, ListedDeployRow } from './repository.js';
import { servedPieces, servedSummaries, summaryInsert } from './summaries.js';

/**
 * A deploy's JSON as pages of deploys.json show it, whole (its own fields, its deployer, its
 * items' kept summaries with the product and the public address in them), and what it was made
 * of that may change: the rest (its number, environment, version, notes, date and items) never
 * does once it is written. A page is then its deploys' ids and these bytes: rendering twenty
 * deploys of four hundred items again for every page asked (CI dashboards page through an
 * environment's history) cost more than reading them.
 */
interface KeptDeploy {
  revertedAt: string | null;
  revertedBy: number | null;
  /** The deployer's JSON as the viewer sees them (presentUser). */
  user: string;
  /** What went into every item (summaryInsert): a string, not bytes cut from a shared slab (see keptBytes). */
  insert: string;
  bytes: Buffer;
  /** A digest of the bytes, of which the ETag of a page is made. */
  tag: string;
}

/** What an entry weighs besides its bytes. */
const ENTRY_BYTES = 200;
const keyOf = (deploy: { id: number; user_id: number }, viewerId: number) =>
  deploy.user_id === viewerId ? -deploy.id : deploy.id;

/** Profiles as others see them, as JSON: the same for every viewer but the user themselves. */
const seenByOthers = new WeakMap<UserProfile, string>();
function userJson(profile: UserProfile, viewerId: number): string {
  if (profile.id === viewerId) return JSON.stringify(presentUser(profile, viewerId));
  let json = seenByOthers.get(profile);
  if (json === undefined) {
    json = JSON.stringify(presentUser(profile, viewerId));
    seenByOthers.set(profile, json);
  }
  return json;
}

const digest = (bytes: Buffer) => createHash('sha1').update(bytes).digest('base64url');

const ITEMS = '"items":[';
const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

/**
 * A deploy's JSON (`items` empty) around the items it is to hold, `[` and `]` included. The first
 * `"items":[` is the deploy's own key: inside any string before it every `"` is written `\"`, and
 * the user before it has no such key.
 */
function around(serialized: string, items: readonly Buffer[]): Buffer {
  const at = serialized.indexOf(ITEMS) + ITEMS.length;
  return Buffer.concat([Buffer.from(serialized.slice(0, at)), ...items, Buffer.from(serialized.slice(at))]);
}

/** What a page's deploys are made of besides their rows: who asks, and what goes into every item. */
interface Making {
  serialize: Serialize<ListedDeployJson>;
  viewerId: number;
  profiles: Map<number, UserProfile>;
  /** What goes into every item (summaryInsert), and its bytes. */
  insertText: string;
  insert: Buffer;
}

const shellOf = (row: ListedDeployRow, m: Making): ListedDeployJson =>
  presentDeploy<DeployedItemJson>({ row, user: m.profiles.get(row.user_id)!, viewerId: m.viewerId, items: [] });

/** A deploy's JSON whole, to be kept. */
function keptDeploy(row: ListedDeployRow, m: Making): KeptDeploy {
  const bytes = keptBytes(around(m.serialize(shellOf(row, m)), servedSummaries(row.item_summaries, m.insert)));
  const user = userJson(m.profiles.get(row.user_id)!, m.viewerId);
  return {
    revertedAt: row.reverted_at,
    revertedBy: row.reverted_by,
    user,
    insert: m.insertText,
    bytes,
    tag: digest(bytes),
  };
}

/** Whether a kept deploy is what the deploy, as its page was read, shows now. */
const holds = (kept: KeptDeploy, deploy: DeployOfPage, m: Making): boolean =>
  kept.revertedAt === deploy.reverted_at &&
  kept.revertedBy === deploy.reverted_by &&
  kept.user === userJson(m.profiles.get(deploy.user_id)!, m.viewerId) &&
  kept.insert === m.insertText;

/**
 * A deploy too big for the `room` left, cut: the leading items that fit and the numbers of the
 * others in `omitted_numbers` (room is kept for every number left out, then the items that fit go in).
 */
function cutToFit(row: ListedDeployRow, m: Making, room: number): Buffer {
  const shell = shellOf(row, m);
  const pieces = servedPieces(row.item_summaries, m.insert);
  const numbers = pieces.map((p) => p.number);
  let bytes = Buffer.byteLength(m.serialize({ ...shell, omitted_numbers: numbers }));
  let shown = 0;
  for (const piece of pieces) {
    bytes += piece.json.length + (shown > 0 ? 1 : 0);
    if (bytes > room) break;
    shown++;
  }
  const items = pieces.slice(0, shown).flatMap((p, i) => (i > 0 ? [COMMA, p.json] : [p.json]));
  return around(m.serialize({ ...shell, omitted_numbers: numbers.slice(shown) }), items);
}

/** A page of deploys (findDeployPage), and how to read whole those whose JSON is not kept (listedDeploys). */
export interface DeployPage {
  deploys: DeployOfPage[];
  read: (deploys: DeployOfPage[]) => Promise<ListedDeployRow[]>;
}

/**
 * Deploys' JSON as pages of deploys.json show them, each kept whole (KeptDeploy) by its id and
 * whether the viewer is its deployer (who sees their own `created_at` and `last_login`), and
 * bounded in bytes: the least recently used go first. A deploy's JSON bigger than an eighth of the
 * budget is not kept: one deploy of a thousand long titles would push out all the others. Nothing
 * is kept with a budget of 0.
 */
export class KeptDeploys {
  private readonly kept: LruCache<number, KeptDeploy>;

  constructor(private readonly budget: number) {
    this.kept = new LruCache(budget, Infinity, (k) => k.bytes.length + ENTRY_BYTES);
  }

  /** How much the kept JSON holds, in bytes. */
  get held(): number {
    return this.kept.weight;
  }

  /**
   * A page of deploys as deploys.json shows them to the caller, as a JSON array of at most
   * `budget` bytes, and how many deploys it holds: it ends before the deploy that would not fit
   * whole, and its first deploy is cut to fit if need be. Only the deploys whose JSON is not kept,
   * or changed since, are read whole and made again. The fingerprint decides the bytes (their
   * digests), for the page's ETag.
   */
  async page(
    db: Db,
    o: DeployPage & { scope: ProductScope; serialize: Serialize<ListedDeployJson>; publicUrl: string; budget: number },
  ): Promise<{ body: Buffer; count: number; fingerprint: string }> {
    const { scope } = o;
    const viewerId = scope.user.id;
    const insertText = summaryInsert(JSON.stringify(presentProductSummary(scope.product)), o.publicUrl);
    // Deployers as item JSON embeds people: remembered for a while (a page of twenty names a dozen).
    const profiles = await findProfiles(
      db,
      o.deploys.map((d) => d.user_id),
    );
    const m: Making = { serialize: o.serialize, viewerId, profiles, insertText, insert: Buffer.from(insertText) };
    const found = new Map<number, KeptDeploy>();
    const missing = o.deploys.filter((d) => {
      const known = this.kept.get(keyOf(d, viewerId));
      if (known && holds(known, d, m)) found.set(d.id, known);
      return !found.has(d.id);
    });
    const rows = new Map(missing.length ? (await o.read(missing)).map((row) => [row.id, row]) : []);
    for (const row of rows.values()) {
      const made = keptDeploy(row, m);
      if (made.bytes.length + ENTRY_BYTES <= this.budget / 8) this.kept.set(keyOf(row, viewerId), made);
      found.set(row.id, made);
    }
    return withinBudget(o, found, rows, m);
  }
}

/** The page's deploys as one JSON array within `o.budget` (see KeptDeploys.page). */
async function withinBudget(
  o: DeployPage & { budget: number },
  found: Map<number, KeptDeploy>,
  rows: Map<number, ListedDeployRow>,
  m: Making,
): Promise<{ body: Buffer; count: number; fingerprint: string }> {
  const shown: Buffer[] = [];
  const tags: string[] = [];
  let bytes = 2;
  for (const deploy of o.deploys) {
    const made = found.get(deploy.id);
    // Deleted since the page was read.
    if (!made) continue;
    const comma = tags.length > 0 ? 1 : 0;
    let json = made.bytes;
    if (json.length > o.budget - bytes - comma) {
      if (tags.length > 0) break;
      const [row] = rows.has(deploy.id) ? [rows.get(deploy.id)!] : await o.read([deploy]);
      if (!row) continue;
      json = cutToFit(row, m, o.budget - bytes);
    }
    if (comma) shown.push(COMMA);
    shown.push(json);
    tags.push(json === made.bytes ? made.tag : digest(json));
    bytes += json.length + comma;
  }
  return { body: Buffer.concat([OPEN, ...shown, CLOSE], bytes), count: tags.length, fingerprint: tags.join(',') };
}
