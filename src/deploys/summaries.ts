import type { ItemRow } from '../db/schema.js';
import { itemShortUrl, statusName } from '../items/index.js';
import { keptBytes } from '../kept-bytes.js';

/**
 * What a page of deploys embeds of each item: which one (its number, and its product, by which
 * clients key items), what it is, where it stood, its title and its link. Kept on the deploy when
 * it is written, as the bytes of a JSON array, so that a page of deploys is read from the deploys
 * alone and is made of those bytes: a page of twenty deploys holds some four hundred items, which
 * rendering whole took tens of milliseconds per page.
 *
 * What the kept bytes leave out is what may change without the deploy: the product (its name, its
 * `archived`) and the public address in front of the link, which is kept as a path. Both go in
 * where `"short_url":"` stands, as the page is served (servedSummaries).
 */
export interface KeptSummary {
  number: number;
  title: string;
  type: string;
  status: string;
  /** The path of the item's short URL; the public address goes in front when served. */
  short_url: string;
}

type Summarised = Pick<ItemRow, 'product_id' | 'number' | 'title' | 'type' | 'status'>;

const keptSummary = (item: Summarised): KeptSummary => ({
  number: item.number,
  title: item.title,
  type: item.type,
  status: statusName(item.status),
  short_url: itemShortUrl('', item),
});

/** What a deploy keeps of its items, in number order, and how many there are. */
export function keptSummaries(items: readonly Summarised[]): { item_summaries: Buffer; item_count: number } {
  const byNumber = [...items].sort((a, b) => a.number - b.number);
  return { item_summaries: keptBytes(JSON.stringify(byNumber.map(keptSummary))), item_count: items.length };
}

/**
 * Where the product and the public address go in kept bytes. Inside a JSON string every `"` is
 * written `\"`, so this text occurs only where the key itself stands, once per item.
 */
const LINK = Buffer.from('"short_url":"');

/** What goes in at LINK: the product's JSON, and the public address before the link's path. */
export const summaryInsert = (productJson: string, publicUrl: string): string =>
  `"product":${productJson},"short_url":"${publicUrl}`;

/**
 * Kept bytes as they are served, without their brackets (the items of a JSON array, DeployedItem
 * each), as pieces to be joined: views of the kept bytes with `insert` between them, none copied.
 */
export function servedSummaries(kept: Buffer, insert: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  let from = 1;
  for (let at = kept.indexOf(LINK, from); at >= 0; at = kept.indexOf(LINK, from)) {
    pieces.push(kept.subarray(from, at), insert);
    from = at + LINK.length;
  }
  pieces.push(kept.subarray(from, kept.length - 1));
  return pieces;
}

/** Each item of kept bytes served on its own, in order, with its number: to cut a deploy that cannot fit whole. */
export function servedPieces(kept: Buffer, insert: Buffer): { number: number; json: Buffer }[] {
  return (JSON.parse(kept.toString()) as KeptSummary[]).map((s) => {
    const one = Buffer.from(`[${JSON.stringify(s)}]`);
    return { number: s.number, json: Buffer.concat(servedSummaries(one, insert)) };
  });
}
