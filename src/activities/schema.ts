import { nextOffsetHeader } from '../http/answer-size.js';
import { doc, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ItemParams, ProductParams } from '../http/schemas.js';
import { ACTIVITY_PAGE, MAX_ACTIVITY_OFFSET } from './model.js';
import { ActivitiesSchema } from './present.js';

const tags = ['activities'];
const page = params({
  offset: doc.integer(`Entries to skip: at most ${MAX_ACTIVITY_OFFSET}; 0 by default.`),
  limit: doc.integer(
    `Page size: ${ACTIVITY_PAGE.default} by default, above ${ACTIVITY_PAGE.max} taken as ${ACTIVITY_PAGE.max}.`,
    1,
  ),
});
const answer = (description: string) => ({
  200: ref(ActivitiesSchema, { description, headers: nextOffsetHeader }),
});
const BAD_PAGE = { 400: `A malformed offset or limit, or an offset above ${MAX_ACTIVITY_OFFSET}.` };

export const listProductActivitiesSchema = {
  summary: "List a product's activity",
  description:
    'Every change of the items of the product (fields, status, tags, assignee, parent, archiving, ' +
    'deploys and rollbacks, comments, favorites, blocks, attachments), newest first, ' +
    'with who made it, when, and what changed (docs/INTERFACE.md §13).',
  operationId: 'listProductActivities',
  tags,
  params: ProductParams,
  querystring: page,
  response: answer("The page of the product's activities."),
  errors: errorAnswers([BAD_PAGE]),
};

export const listItemActivitiesSchema = {
  summary: "List an item's activity",
  description: "Every change of the item, newest first, as the product's activity lists them.",
  operationId: 'listItemActivities',
  tags,
  params: ItemParams,
  querystring: page,
  response: answer("The page of the item's activities."),
  errors: errorAnswers([BAD_PAGE, { 404: 'No item with that number in the product.' }]),
};
