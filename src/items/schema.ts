import { Type } from '@sinclair/typebox';
import { nextOffsetHeader } from '../http/answer-size.js';
import { conditionalHeaders, IfNoneMatchHeader, notModifiedAnswer } from '../http/conditional.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref, type Explained } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ItemParams, ProductParams } from '../http/schemas.js';
import {
  CHILDREN_PAGE,
  CLOSE_REASONS,
  DEPLOYED_TO_PAGE,
  INPUT_STATUSES,
  ITEM_TYPES,
  LIMITS,
  MAX_CHILDREN_OFFSET,
  MAX_ENVIRONMENT_FILTER,
  MAX_LIST_OFFSET,
  MAX_TAG_FILTER,
  MAX_TAGS,
  ORDERS,
  SCORES,
  STATUSES,
} from './model.js';
import { DeploymentSchema, ItemSchema } from './present.js';

/** What an item's parameters mean (docs/INTERFACE.md §7.2, §7.4); `type` only counts on creation. */
const itemFields = {
  type: doc.choice(ITEM_TYPES, "Ignored: an item's type never changes."),
  title: doc.text(
    'Required for a task, defect or test, and not empty; ' +
      'ignored for a story, whose title is built from who, what and why.',
    LIMITS.title,
  ),
  who: doc.text('A story\'s "As a …"; required for a story, and not empty.', LIMITS.who),
  what: doc.text('A story\'s "I want …"; required for a story, and not empty.', LIMITS.what),
  why: doc.text('A story\'s "so that …"; required for a story, and not empty.', LIMITS.why),
  description: doc.text(`Markdown; at most ${LIMITS.description} bytes of UTF-8.`, LIMITS.description),
  score: doc.choice(SCORES, '`~` unless given.'),
  status: doc.choice(
    INPUT_STATUSES,
    '`backlog` for a new item unless given; a change moves the item to the bottom of its new status.',
  ),
  assigned_to: doc.reference(
    'A user id, of a member of the product, who starts following the item; empty or null unassigns.',
    'id',
  ),
  created_by: doc.reference(
    'Accepted for compatibility: it must name a user, but the creator is always the caller.',
    'id',
  ),
  tags: doc.list(
    `Each at most ${LIMITS.tag} characters, at most ${MAX_TAGS}; ` +
      'on an update the whole set, and empty removes every tag.',
  ),
  parent: doc.reference(
    'The number of a story of this product, under which the item is placed (not for a story); ' +
      'empty or null detaches it.',
    'number',
  ),
  close_reason: doc.choice(CLOSE_REASONS, 'Used while the status is completed or accepted; `fixed` unless given.'),
};
const createFields = { ...itemFields, type: doc.required(doc.choice(ITEM_TYPES, 'The kind of item; never changes.')) };
const listFields = {
  type: doc.list('Only items of these types.', ITEM_TYPES),
  status: doc.list('Only items in these statuses; `backlog,in-progress` by default.', STATUSES),
  offset: doc.integer(
    `Entries to skip: at most ${MAX_LIST_OFFSET} (${MAX_CHILDREN_OFFSET} with children=true); 0 by default.`,
  ),
  limit: doc.integer('Page size: 20 by default, above 500 taken as 500.', 1),
  order_by: doc.choice(ORDERS, '`priority` by default (docs/INTERFACE.md §6).'),
  assigned_to: doc.integer('Only items assigned to this user id; empty is no filter.'),
  created_by: doc.integer('Only items this user id created; empty is no filter.'),
  tags: doc.list(`Only items that carry every one of these tags (at most ${MAX_TAG_FILTER}).`),
  children: doc.flag(
    'Also list, right after each story, its sub-items that are not archived, whatever their status; false by default.',
  ),
  deployed_to: doc.list(
    'Only items that these environments run now (their entry there is not reverted); ' +
      `at most ${MAX_ENVIRONMENT_FILTER}.`,
  ),
  not_deployed_to: doc.list(
    'Only items none of these environments runs now (never deployed there, or reverted); ' +
      `at most ${MAX_ENVIRONMENT_FILTER}.`,
  ),
};

/** One item, serialized on its own to fit a page within the size bound of an answer. */
export const ONE_ITEM = ref(ItemSchema);
/** The total of an item list, before paging. */
export const ITEM_COUNT = 'X-Sprintly-Item-Count';
/** The total of an item's environments, before paging. */
export const DEPLOYED_TO_COUNT = 'X-Sprintly-Deployed-To-Count';
const ITEM_MISSING = { 404: 'No item with that number in the product.' };
const count = (header: string, what: string) => ({
  [header]: { type: 'integer', description: `How many ${what} there are in all, before paging.` },
});
const tags = ['items'];

const page = (size: { default: number; max: number }) =>
  params({
    offset: doc.integer('Entries to skip; 0 by default.'),
    limit: doc.integer(`Page size: ${size.default} by default, above ${size.max} taken as ${size.max}.`, 1),
  });
const items = (description: string) =>
  Type.Array(ref(ItemSchema), {
    description,
    headers: {
      ...count(ITEM_COUNT, 'entries'),
      ...nextOffsetHeader,
      ...conditionalHeaders('A strong entity tag of the answer, its headers included: it changes when the page does.'),
    },
  });
/** A list's answers: the page, or a 304 when If-None-Match names it. */
const listAnswers = (description: string) => ({
  headers: IfNoneMatchHeader,
  response: { 200: items(description), 304: notModifiedAnswer },
});

export const listItemsSchema = {
  summary: 'List items',
  description:
    'Top-level items that are not archived, a page at a time, ' +
    'which ends early rather than pass the size bound of an answer (docs/INTERFACE.md §7.1).',
  operationId: 'listItems',
  tags,
  params: ProductParams,
  querystring: params(listFields),
  ...listAnswers('The page of items.'),
  errors: errorAnswers([
    {
      400:
        'An invalid type, status, order_by, offset, limit or children; ' +
        `more than ${MAX_TAG_FILTER} tags, or ${MAX_ENVIRONMENT_FILTER} environments in deployed_to or ` +
        'not_deployed_to, or one longer than 255 characters; ' +
        `offset above ${MAX_LIST_OFFSET} (${MAX_CHILDREN_OFFSET} with children=true).`,
      404: 'assigned_to or created_by names no user.',
    },
  ]),
};

export const listChildrenSchema = {
  summary: "List a story's sub-items",
  description: 'Sub-items that are not archived, in priority order, whatever their status.',
  operationId: 'listChildren',
  tags,
  params: ItemParams,
  querystring: page(CHILDREN_PAGE),
  ...listAnswers('The page of sub-items.'),
  errors: errorAnswers([{ 400: 'A malformed offset or limit; the item is not a story.' }, ITEM_MISSING]),
};

export const listDeployedToSchema = {
  summary: 'List every environment an item went to',
  description: "The item's latest deploy to each environment, newest first; the item shows only the latest few.",
  operationId: 'listDeployedTo',
  tags,
  params: ItemParams,
  querystring: page(DEPLOYED_TO_PAGE),
  response: {
    200: Type.Array(ref(DeploymentSchema), {
      description: 'The page of environments.',
      headers: count(DEPLOYED_TO_COUNT, 'environments'),
    }),
  },
  errors: errorAnswers([{ 400: 'A malformed offset or limit.' }, ITEM_MISSING]),
};

/** The header every answer of one item carries. */
const ETAG = {
  ETag: {
    type: 'string',
    description:
      "The item's version, a strong entity tag: it changes with every change to the item " +
      '(fields, status, order, tags, assignee, parent, archiving, deploys, follows). ' +
      'Send it in If-Match to change the item only as you saw it.',
  },
};

// Only documents the header: parseIfMatch reads and checks it.
const IfMatchHeader = documentAs(
  Type.Object({}),
  Type.Object({
    'If-Match': Type.Optional(
      Type.String({
        description:
          'The ETag of the item as you last read it (several may be listed), or `*` for any version: ' +
          'the change is made only if the item is still at that version, else 412. ' +
          'Without it the change is made whatever happened since.',
      }),
    ),
  }),
);
const IF_MATCH_ERRORS: Explained = {
  400: 'If-Match is neither `*` nor a list of quoted entity tags.',
  412: "If-Match names none of the item's current version: somebody changed it since; nothing was changed.",
};
const answer = (description: string, ...errors: Explained[]) => ({
  response: { 200: ref(ItemSchema, { description, headers: ETAG }) },
  errors: errorAnswers(errors),
});

export const createItemSchema = {
  summary: 'Create an item',
  description:
    "The item gets the product's next number and goes to the bottom of its status; " +
    'the creator and the assignee follow it.',
  operationId: 'createItem',
  tags,
  params: ProductParams,
  body: params(createFields),
  ...answer(
    'The new item.',
    {
      400:
        'A missing or invalid type; an invalid status, score or close_reason; ' +
        'a missing title (task, defect, test) or who, what or why (story); a value too long; too many tags; ' +
        'a parent for a story, or one that is not a story.',
      404: 'assigned_to names no member of the product, created_by no user, or parent no item of the product.',
    },
    BODY_ERRORS,
  ),
};

export const getItemSchema = {
  summary: 'Fetch an item',
  operationId: 'getItem',
  tags,
  params: ItemParams,
  headers: IfNoneMatchHeader,
  response: {
    200: ref(ItemSchema, {
      description: 'The item, archived or not.',
      headers: { ...ETAG, ...conditionalHeaders(ETAG.ETag.description) },
    }),
    304: notModifiedAnswer,
  },
  errors: errorAnswers([ITEM_MISSING]),
};

export const updateItemSchema = {
  summary: 'Update an item',
  description:
    'Only the parameters given change anything, and only when they differ from what is stored ' +
    '(docs/INTERFACE.md §7.4).',
  operationId: 'updateItem',
  tags,
  params: ItemParams,
  headers: IfMatchHeader,
  body: params(itemFields),
  ...answer(
    'The item as it now is.',
    {
      400:
        'An invalid status, score or close_reason; an empty title, who, what or why; a value too long; ' +
        'too many tags; a parent the rules do not allow.',
      404:
        'No item with that number in the product; ' +
        'assigned_to names no member of the product, or parent no item of it.',
    },
    IF_MATCH_ERRORS,
    BODY_ERRORS,
  ),
};

export const archiveItemSchema = {
  summary: 'Archive an item',
  description: 'Archived items leave every list but can still be fetched, updated and deployed.',
  operationId: 'archiveItem',
  tags,
  params: ItemParams,
  ...answer('The archived item.', ITEM_MISSING, BODY_ERRORS),
};

export const resortItemSchema = {
  summary: 'Move an item within its status',
  description: 'docs/INTERFACE.md §6: with both before and after, the item lands between them.',
  operationId: 'resortItem',
  tags,
  params: ItemParams,
  headers: IfMatchHeader,
  body: params({
    before: doc.integer('The number of the item that is to stand directly before this one.'),
    after: doc.integer('The number of the item that is to come directly after this one.'),
  }),
  ...answer(
    'The item.',
    { 400: 'Neither before nor after given; one in another status than the item, or the item itself.' },
    { 404: 'No item with that number in the product, or before or after names none.' },
    IF_MATCH_ERRORS,
    BODY_ERRORS,
  ),
};

const followSchema = (summary: string, operationId: string) => ({
  summary,
  operationId,
  tags,
  params: ItemParams,
  ...answer('The item; repeating is harmless.', ITEM_MISSING, BODY_ERRORS),
});
export const followItemSchema = followSchema('Follow an item', 'followItem');
export const unfollowItemSchema = followSchema('Stop following an item', 'unfollowItem');

export const followShortUrlSchema = {
  summary: "Follow an item's short_url",
  description: 'Needs no credentials and looks nothing up; the address it leads to asks for them as usual.',
  operationId: 'followShortUrl',
  tags: ['links'],
  params: ItemParams,
  response: {
    302: {
      type: 'null',
      description: "A browser asking for HTML goes to the item's page, any other client to the item's API address.",
      headers: { Location: { type: 'string', description: 'The absolute address of the item.' } },
    },
  },
  errors: errorAnswers([{ 404: 'The product id or the item number is not a number.' }]),
};
