import { Type } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import { ref } from '../http/documentation.js';
import { findItemsByIds, itemPieces, ItemSchema, type ItemJson, type KeptItems } from '../items/index.js';
import type { SearchStamp } from './repository.js';
import type { Serialize } from '../http/answer-size.js';
import type { Urls } from '../scope.js';
import { COUNT_CAP, type SearchResult } from './service.js';

const CAP = COUNT_CAP.toLocaleString('en');

const Counts = (description: string) => Type.Record(Type.String(), Type.Integer(), { description });

export const FacetsSchema = Type.Object(
  {
    status: Counts('Matches by status.'),
    type: Counts('Matches by type.'),
    tag: Counts('Matches by tag, the 50 most used.'),
    assignee: Counts("Matches by the assignee's email; `none` for unassigned items."),
  },
  { $id: 'SearchFacets', description: `Counts of the matches, at most the newest ${CAP} of them.` },
);

export const SearchResultsSchema = Type.Object(
  {
    items: Type.Array(ref(ItemSchema)),
    total_count: Type.Integer({ description: `How many items match, counted up to ${CAP}.` }),
    facets: Type.Optional(ref(FacetsSchema)),
    fuzzy: Type.Boolean({ description: 'Nothing matched the words; these are the titles closest to them.' }),
  },
  { $id: 'SearchResults', description: 'A page of the items that match a search.' },
);

export const SEARCH_SCHEMAS = [FacetsSchema, SearchResultsSchema];

/**
 * The page's items as the item JSON of each one's product (the same presenter, and the same JSON
 * kept by item version, as every item list), in the order found.
 */
export async function resultPieces(options: {
  db: Db;
  kept: KeptItems;
  result: SearchResult;
  urls: Urls;
  viewerId: number;
  serialize: Serialize<ItemJson>;
  /** Items past this many bytes (counted per product: no item past it in the whole page is within) are not rendered. */
  budget: number;
}): Promise<{ json: Buffer }[]> {
  const { result } = options;
  const byProduct = new Map<number, SearchStamp[]>();
  for (const s of result.stamps) byProduct.set(s.product_id, [...(byProduct.get(s.product_id) ?? []), s]);
  const json = new Map<number, { json: Buffer }>();
  for (const [productId, stamps] of byProduct) {
    const pieces = await itemPieces({
      ...options,
      product: result.products.get(productId)!,
      stamps,
      // Only the items whose JSON is not kept are read whole.
      rowsOf: (missing) =>
        findItemsByIds(
          options.db,
          missing.map((m) => m.id),
        ),
    });
    for (const piece of pieces) json.set(piece.stamp.id, piece);
  }
  return result.stamps.flatMap((s) => json.get(s.id) ?? []);
}
