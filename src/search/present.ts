import { Type } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { ItemRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { ItemSchema, presentItems, type ItemJson } from '../items/index.js';
import type { Urls } from '../scope.js';
import type { SearchResult } from './service.js';

const Counts = (description: string) => Type.Record(Type.String(), Type.Integer(), { description });

export const FacetsSchema = Type.Object(
  {
    status: Counts('Matches by status.'),
    type: Counts('Matches by type.'),
    tag: Counts('Matches by tag, the 50 most used.'),
    assignee: Counts("Matches by the assignee's email; `none` for unassigned items."),
  },
  { $id: 'SearchFacets', description: 'Counts of the matches, at most the first 10,000 of them.' },
);

export const SearchResultsSchema = Type.Object(
  {
    items: Type.Array(ref(ItemSchema)),
    total_count: Type.Integer({ description: 'How many items match, counted up to 10,000.' }),
    facets: Type.Optional(ref(FacetsSchema)),
    fuzzy: Type.Boolean({ description: 'Nothing matched the words; these are the titles closest to them.' }),
  },
  { $id: 'SearchResults', description: 'A page of the items that match a search.' },
);

export const SEARCH_SCHEMAS = [FacetsSchema, SearchResultsSchema];

/**
 * The page's items as the item JSON of each one's product (the same presenter as every item
 * route), in the order found.
 */
export async function presentResults(db: Db, result: SearchResult, urls: Urls, viewerId: number): Promise<ItemJson[]> {
  const byProduct = new Map<number, ItemRow[]>();
  for (const row of result.rows) byProduct.set(row.product_id, [...(byProduct.get(row.product_id) ?? []), row]);
  const json = new Map<number, ItemJson>();
  for (const [productId, rows] of byProduct) {
    const product = result.products.get(productId)!;
    const presented = await presentItems(db, { product, rows, urls, viewerId });
    for (const [i, row] of rows.entries()) json.set(row.id, presented[i]);
  }
  return result.rows.map((row) => json.get(row.id)!);
}
