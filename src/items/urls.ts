/** An item's `short_url`: the one address of an item that people are given (mail, links). */
export function itemShortUrl(publicUrl: string, item: { product_id: number; number: number }): string {
  return `${publicUrl}/i/${item.product_id}/${item.number}/`;
}

/** An item's page in the browser (under the pages' /app prefix). */
export function itemPagePath(productId: number, number: number): string {
  return `/app/products/${productId}/items/${number}`;
}
