/**
 * Search: items of the caller's products by words, phrases and field terms (INTERFACE.md
 * "Searching items"), over an index the database keeps in the transaction of every write.
 */
export { MAX_SEARCH_OFFSET, parseSearch, SEARCH_PAGE, searchOffset, SORTS } from './input.js';
export { MergeSearchIndex } from './merge.js';
export { SEARCH_SCHEMAS } from './present.js';
export {
  fieldTerm,
  hasText,
  markdownText,
  EXCERPT_READS,
  matchedExcerpt,
  matchedPieces,
  matchedSpans,
  matchedTag,
  namesCaller,
  parseSearchQuery,
  showsEveryWord,
  withoutTerm,
  withTerm,
  writtenTerms,
  type Condition,
  type MarkedPiece,
  type SearchQuery,
  type Term,
  type WrittenTerm,
} from './query.js';
export { searchRoutes } from './routes.js';
export {
  COUNT_CAP,
  KeptWindows,
  resultRows,
  searchableProductsOf,
  searchItems,
  type Facets,
  type SearchInput,
  type SearchResult,
} from './service.js';
