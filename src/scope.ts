import type { ProductRow, UserRow } from './db/schema.js';

/** Who is acting, in which product: established by the product routes before any handler runs. */
export interface ProductScope {
  user: UserRow;
  product: ProductRow;
  admin: boolean;
}

/** What presenters need from the configuration to build absolute URLs and item addresses. */
export interface Urls {
  publicUrl: string;
  mailDomain: string;
}
