import type { Db } from '../db/connection.js';
import type { ItemRow, ProductRow } from '../db/schema.js';
import { leadingWithin, type Serialize } from '../http/answer-size.js';
import { keptBytes } from '../kept-bytes.js';
import { LruCache } from '../lru.js';
import type { Urls } from '../scope.js';
import { PROFILE_TTL_MS } from '../users/index.js';
import { DEPLOYED_TO_SHOWN } from './model.js';
import { presentItems, type ItemJson } from './present.js';
import { findItemStamps, type ItemStamp, type KnownRelations } from './repository.js';

export type { ItemStamp } from './repository.js';

/** What the kept item JSON may hold in all, in bytes. */
const DEFAULT_BUDGET = 16 * 1024 * 1024;
/** An item's JSON bigger than this is not kept: a few long descriptions would push out thousands of items. */
const LARGEST_KEPT = 64 * 1024;

/**
 * A piece of JSON as the bytes sent: outside the JavaScript heap, so that what is kept (megabytes
 * of it) is neither walked nor moved by the garbage collector, and its size is its length.
 */
interface Piece {
  json: Buffer;
  bytes: number;
}

/**
 * Each item's JSON, serialized, kept by what it was rendered from: the item's version, which every
 * change of its row, tags, order and deploys moves in the change's own transaction (entityTag); its
 * parent's version, for a sub-item, which embeds its parent; the product's name and archived flag;
 * and the caller, only when the item or its parent names them (a user sees their own `created_at`
 * and `last_login`, see presentUser). So a change to one item makes only that item's JSON (and its
 * sub-items') render again: a list of a product where one item changed is assembled from the JSON
 * of the others, on every instance, since versions are read with the page.
 *
 * The names and addresses of the people an item embeds are not in the key: profiles are remembered
 * for PROFILE_TTL_MS (users/profiles.ts), and kept JSON is forgotten after as long, so how old a
 * name can be stays bounded as before. Bounded in bytes; the least recently used go first.
 */
export class KeptItems {
  private readonly pieces: LruCache<string, Piece>;
  /** Per product, what its items show of it, and a number that moves when that changes. */
  private readonly products = new Map<number, { shown: string; generation: number }>();
  private generations = 0;

  constructor(
    budget = DEFAULT_BUDGET,
    private readonly largest = LARGEST_KEPT,
  ) {
    this.pieces = new LruCache(budget, PROFILE_TTL_MS, (piece) => piece.bytes + 64);
  }

  /** How much the kept JSON holds, in bytes. */
  get held(): number {
    return this.pieces.weight;
  }

  /** A number naming what items of `product` show of it (its name, whether it is archived). */
  private productGeneration(product: ProductRow): number {
    const shown = `${product.archived}:${product.name}`;
    let known = this.products.get(product.id);
    if (known?.shown !== shown) {
      known = { shown, generation: ++this.generations };
      this.products.set(product.id, known);
    }
    return known.generation;
  }

  /** The key of an item's JSON as `viewerId` sees it, with `parent` the stamp of its parent story. */
  keyOf(product: ProductRow, item: ItemStamp, parent: ItemStamp | undefined, viewerId: number, shown: number): string {
    const names = (s: ItemStamp | undefined) =>
      s !== undefined && (s.created_by_id === viewerId || s.assigned_to_id === viewerId);
    const viewer = names(item) || names(parent) ? viewerId : 0;
    const parentPart = parent === undefined ? '' : `${parent.id}.${parent.version}`;
    return `${this.productGeneration(product)}:${item.id}.${item.version}:${parentPart}:${shown}:${viewer}`;
  }

  get(key: string): Piece | undefined {
    return this.pieces.get(key);
  }

  keep(key: string, text: string): Piece {
    const json = keptBytes(text);
    const piece = { json, bytes: json.length };
    if (piece.bytes <= this.largest) this.pieces.set(key, piece);
    return piece;
  }
}

/** An item's JSON and the stamp it was found by. */
export type ShownPiece<S extends ItemStamp> = Piece & { stamp: S };

/** What `itemPieces` needs to render the items it has not kept. */
export interface ItemPiecesOptions<S extends ItemStamp> {
  db: Db;
  kept: KeptItems;
  product: ProductRow;
  /** The items, in order: rows, or stamps with the least their JSON takes (`least`). */
  stamps: S[];
  /** The full rows of stamps not kept (any order); rows passed as stamps are used as they are. */
  rowsOf: (stamps: S[]) => Promise<ItemRow[]>;
  urls: Urls;
  viewerId: number;
  /** Relations read with the rows already (see presentItems). */
  known?: KnownRelations;
  serialize: Serialize<ItemJson>;
  /** The bytes the JSON array may take: items past it are neither rendered nor returned. */
  budget?: number;
}

/** The least an item's JSON takes: its kept size, or the bytes of its text. */
const leastOf = (stamp: ItemStamp & { least?: number; title?: string; description?: string }, kept?: Piece) =>
  kept ? kept.bytes : (stamp.least ?? (stamp.title?.length ?? 0) + (stamp.description?.length ?? 0));

/**
 * The JSON of each item of `stamps` as the caller sees it, in order: kept JSON where its key is
 * kept, the others presented together (one set of queries for them all), serialized and kept.
 * With a budget, only the leading items that may fit are returned (at least one).
 */
export async function itemPieces<S extends ItemStamp>(options: ItemPiecesOptions<S>): Promise<ShownPiece<S>[]> {
  const { kept, product, viewerId } = options;
  // Items on their own and in lists show as many environments; only embedded ones (parents) fewer.
  const shown = DEPLOYED_TO_SHOWN;
  const parents = await parentStamps(options.db, options.stamps);
  const keys = options.stamps.map((s) =>
    kept.keyOf(product, s, s.parent_id === null ? undefined : parents.get(s.parent_id), viewerId, shown),
  );
  let found = keys.map((key) => kept.get(key));
  let stamps = options.stamps;
  if (options.budget !== undefined) {
    const within = leadingWithin(
      stamps.map((s, i) => leastOf(s, found[i])),
      options.budget,
    );
    stamps = stamps.slice(0, within);
    found = found.slice(0, within);
  }
  const missing = stamps.filter((_, i) => found[i] === undefined);
  if (missing.length === 0) return (found as Piece[]).map((piece, i) => ({ ...piece, stamp: stamps[i] }));
  const rows = await options.rowsOf(missing);
  const presented = await presentItems(options.db, {
    product,
    rows,
    urls: options.urls,
    viewerId,
    known: options.known,
  });
  const made = new Map(rows.map((row, i) => [row.id, presented[i]]));
  return stamps.flatMap((s, i) => {
    if (found[i]) return [{ ...found[i], stamp: s }];
    const item = made.get(s.id);
    // Gone between the page's read and this one (archived meanwhile): left out, as a fresh read would.
    return item === undefined ? [] : [{ ...kept.keep(keys[i], options.serialize(item)), stamp: s }];
  });
}

/**
 * The stamps of the parents of `stamps`: those listed among them as they are, the others read.
 * Read after the items: a parent that changed in between is only newer than its sub-item's page.
 */
async function parentStamps(db: Db, stamps: ItemStamp[]): Promise<Map<number, ItemStamp>> {
  const listed = new Map(stamps.map((s) => [s.id, s]));
  const wanted = [...new Set(stamps.flatMap((s) => (s.parent_id === null ? [] : [s.parent_id])))];
  const read = await findItemStamps(
    db,
    wanted.filter((id) => !listed.has(id)),
  );
  const parents = new Map(read.map((s) => [s.id, s]));
  for (const id of wanted) if (listed.has(id)) parents.set(id, listed.get(id)!);
  return parents;
}
