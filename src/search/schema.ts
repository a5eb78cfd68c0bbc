import { nextOffsetHeader } from '../http/answer-size.js';
import { conditionalHeaders, IfNoneMatchHeader, notModifiedAnswer } from '../http/conditional.js';
import { doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { MAX_SEARCH_OFFSET, SEARCH_PAGE, SORTS } from './input.js';
import { SearchResultsSchema } from './present.js';

/** The header of the total, as item lists give it (INTERFACE.md §7.1). */
export const ITEM_COUNT = 'X-Sprintly-Item-Count';

export const searchItemsSchema = {
  summary: "Search the items of the caller's products",
  description:
    'Words (all must match, in any order; the last one as the start of a word), "exact phrases", ' +
    '-word, and field terms (tag:, type:, status:, assignee:, author:, product:, is:open, is:closed, ' +
    'is:blocked, is:favorite, has:comments, deployed:ENV, not-deployed:ENV, #123) over titles, tags, ' +
    'descriptions and comments, ranked by relevance; when no item matches the words, the items whose ' +
    'titles are closest to them (docs/INTERFACE.md "Searching items").',
  operationId: 'searchItems',
  tags: ['items'],
  querystring: params({
    q: doc.text('The query; an empty one matches every item of the products searched.', 500),
    products: doc.list("Only these of the caller's products (ids); all of them by default."),
    sort: doc.choice(SORTS, '`relevance` by default (most recently modified first when the query has no words).'),
    order: doc.choice(['asc', 'desc'], '`desc` by default: best, latest or highest first.'),
    offset: doc.integer(`Matches to skip: at most ${MAX_SEARCH_OFFSET}; 0 by default.`),
    limit: doc.integer(
      `Page size: ${SEARCH_PAGE.default} by default, above ${SEARCH_PAGE.max} taken as ${SEARCH_PAGE.max}.`,
      1,
    ),
    facets: doc.flag('Also count the matches by status, type, tag and assignee.'),
  }),
  headers: IfNoneMatchHeader,
  response: {
    200: ref(SearchResultsSchema, {
      description: 'A page of the matches, their total, their facets.',
      headers: {
        [ITEM_COUNT]: { type: 'integer', description: '`total_count` again, as item lists give it.' },
        ...nextOffsetHeader,
        ...conditionalHeaders(
          'A strong entity tag of the answer, its headers included: it changes when the answer does.',
        ),
      },
    }),
    304: notModifiedAnswer,
  },
  errors: errorAnswers([
    {
      400: 'A query term that cannot be read (named in the message), or a malformed parameter.',
      404: "A product of `products` that is not one of the caller's.",
    },
  ]),
};
