import type { ItemRow } from '../db/schema.js';
import { itemShortUrl, statusName } from '../items/index.js';

/**
 * What a page of deploys embeds of each item: which one (number, and its product for clients that
 * key items by both), what it is, where it stood, its title and its link. Kept on the deploy when
 * it is written, as the text of a JSON array, so that a page of deploys is read from the deploys
 * alone: a page of twenty holds some four hundred items, which rendering whole took tens of
 * milliseconds per page.
 *
 * What the kept text leaves out is what may change without the deploy: the product (its name, its
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

/** The kept text of a deploy's items, in number order, and how many there are. */
export function keptSummaries(items: readonly Summarised[]): { item_summaries: string; item_count: number } {
  const byNumber = [...items].sort((a, b) => a.number - b.number);
  return { item_summaries: JSON.stringify(byNumber.map(keptSummary)), item_count: items.length };
}

/**
 * Where the product and the public address go in kept text. Inside a JSON string every `"` is
 * written `\"`, so this text occurs only where the key itself stands, once per item.
 */
const LINK = '"short_url":"';

/** What goes in at LINK: the product's JSON, and the public address before the link's path. */
export const summaryInsert = (productJson: string, publicUrl: string): string =>
  `"product":${productJson},${LINK}${publicUrl}`;

/** Kept text as it is served: a JSON array of the items' summaries (DeployedItemSchema). */
export function servedSummaries(kept: string, insert: string): string {
  return kept.replaceAll(LINK, insert);
}

/** Each item of kept text served on its own, in order: to cut a deploy that cannot fit whole. */
export function servedPieces(kept: string, insert: string): string[] {
  return (JSON.parse(kept) as KeptSummary[]).map((s) => servedSummaries(JSON.stringify(s), insert));
}
