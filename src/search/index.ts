/**
 * Search: items of the caller's products by words, phrases and field terms (INTERFACE.md
 * "Searching items"), over an index the database keeps in the transaction of every write.
 */
export { parseSearch, SEARCH_PAGE } from './input.js';
export { MergeSearchIndex } from './merge.js';
export { SEARCH_SCHEMAS } from './present.js';
export { hasText, parseSearchQuery, type Condition, type SearchQuery, type Term } from './query.js';
export { searchRoutes } from './routes.js';
export { COUNT_CAP, searchItems, type Facets, type SearchInput, type SearchResult } from './service.js';
