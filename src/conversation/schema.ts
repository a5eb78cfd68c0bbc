import { Type, type TSchema } from '@sinclair/typebox';
import { nextOffsetHeader } from '../http/answer-size.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref, type Explained } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ItemParams } from '../http/schemas.js';
import { ANNOTATION_COUNT, BLOCK_COUNT, COMMENT_COUNT, CONVERSATION_PAGE, FAVORITE_COUNT, LIMITS } from './model.js';
import { AnnotationSchema, BlockSchema, CommentSchema, FavoriteSchema } from './present.js';

const tags = ['conversation'];
const ITEM_MISSING: Explained = { 404: 'No item with that number in the product.' };

/** The path of one entry of an item's list: the item's, and the entry's id under `name`. */
const entryParams = (name: string, what: string) =>
  documentAs(
    Type.Object({ product_id: Type.String(), item_number: Type.String(), [name]: Type.String() }),
    Type.Object({
      product_id: doc.integer("The product's id."),
      item_number: doc.integer("The item's number within the product."),
      [name]: doc.integer(`The ${what}'s id.`),
    }),
  );
export const CommentParams = entryParams('comment_id', 'comment');
export const FavoriteParams = entryParams('favorite_id', 'favorite');
export const BlockParams = entryParams('block_id', 'block');

const page = params({
  offset: doc.integer('Entries to skip; 0 by default.'),
  limit: doc.integer(
    `Page size: ${CONVERSATION_PAGE.default} by default, ` +
      `above ${CONVERSATION_PAGE.max} taken as ${CONVERSATION_PAGE.max}.`,
    1,
  ),
});

/** A list of an item's, oldest first, a page at a time, with its total in `header`. */
const listOf = (o: { summary: string; operationId: string; description: string; of: TSchema; header: string }) => ({
  summary: o.summary,
  description:
    `${o.description} Oldest first, a page at a time, ` +
    'which ends early rather than pass the size bound of an answer.',
  operationId: o.operationId,
  tags,
  params: ItemParams,
  querystring: page,
  response: {
    200: Type.Array(ref(o.of), {
      description: 'The page.',
      headers: {
        [o.header]: { type: 'integer', description: 'How many there are in all, before paging.' },
        ...nextOffsetHeader,
      },
    }),
  },
  errors: errorAnswers([{ 400: 'A malformed offset or limit.' }, ITEM_MISSING]),
});

/** One entry, fetched or changed: answered as it is (or was). */
const oneOf = (o: {
  summary: string;
  operationId: string;
  description?: string;
  params: object;
  of: TSchema;
  answer: string;
  errors: Explained[];
  body?: object;
}) => ({
  summary: o.summary,
  ...(o.description ? { description: o.description } : {}),
  operationId: o.operationId,
  tags,
  params: o.params,
  ...(o.body ? { body: o.body } : {}),
  response: { 200: ref(o.of, { description: o.answer }) },
  errors: errorAnswers(o.errors),
});

export const listCommentsSchema = listOf({
  summary: "List an item's comments",
  operationId: 'listComments',
  description: 'The comments on an item.',
  of: CommentSchema,
  header: COMMENT_COUNT,
});
export const createCommentSchema = oneOf({
  summary: 'Comment on an item',
  operationId: 'createComment',
  description:
    'The caller and the members the comment mentions (`@` and the part of their email before `@`, or a first ' +
    'name no other member has) follow the item; its other followers get it by mail, unless they said no ' +
    '(notifications.json).',
  params: ItemParams,
  body: params({
    body: doc.required(doc.text(`Markdown; at most ${LIMITS.body} bytes of UTF-8, not empty.`, LIMITS.body)),
  }),
  of: CommentSchema,
  answer: 'The comment.',
  errors: [{ 400: 'body is missing, empty, too long or holds control characters.' }, ITEM_MISSING, BODY_ERRORS],
});
const COMMENT_MISSING: Explained = { 404: 'No item with that number, or no comment with that id on it.' };
export const getCommentSchema = oneOf({
  summary: 'Fetch a comment',
  operationId: 'getComment',
  params: CommentParams,
  of: CommentSchema,
  answer: 'The comment.',
  errors: [COMMENT_MISSING],
});
export const deleteCommentSchema = oneOf({
  summary: 'Delete a comment',
  operationId: 'deleteComment',
  params: CommentParams,
  of: CommentSchema,
  answer: 'The comment as it was.',
  errors: [{ 403: "The comment is someone else's." }, COMMENT_MISSING, BODY_ERRORS],
});

export const listFavoritesSchema = listOf({
  summary: "List an item's favorites",
  operationId: 'listFavorites',
  description: 'Who favorited the item.',
  of: FavoriteSchema,
  header: FAVORITE_COUNT,
});
export const createFavoriteSchema = oneOf({
  summary: 'Favorite an item',
  operationId: 'createFavorite',
  description: 'No parameters: the caller favorites the item, and follows it. A second time answers the same favorite.',
  params: ItemParams,
  of: FavoriteSchema,
  answer: "The caller's favorite.",
  errors: [ITEM_MISSING, BODY_ERRORS],
});
const FAVORITE_MISSING: Explained = { 404: 'No item with that number, or no favorite with that id on it.' };
export const getFavoriteSchema = oneOf({
  summary: 'Fetch a favorite',
  operationId: 'getFavorite',
  params: FavoriteParams,
  of: FavoriteSchema,
  answer: 'The favorite.',
  errors: [FAVORITE_MISSING],
});
export const deleteFavoriteSchema = oneOf({
  summary: 'Remove a favorite',
  operationId: 'deleteFavorite',
  params: FavoriteParams,
  of: FavoriteSchema,
  answer: 'The favorite as it was.',
  errors: [{ 403: "The favorite is someone else's." }, FAVORITE_MISSING, BODY_ERRORS],
});

export const listBlockingSchema = listOf({
  summary: 'List the blocks an item makes',
  operationId: 'listBlocking',
  description: 'The blocks of other items by this one, those marked unblocked included.',
  of: BlockSchema,
  header: BLOCK_COUNT,
});
export const listBlockedBySchema = listOf({
  summary: 'List the blocks on an item',
  operationId: 'listBlockedBy',
  description: "Shiplog's addition: the blocks of this item by others, those marked unblocked included.",
  of: BlockSchema,
  header: BLOCK_COUNT,
});
export const createBlockSchema = oneOf({
  summary: 'Say that an item blocks another',
  operationId: 'createBlock',
  description:
    "The blocked item's assignee gets a message. A block of the same two items answers as it is, " +
    'or, marked unblocked, is in force again.',
  params: ItemParams,
  body: params({ blocked: doc.required(doc.integer('The number of the item this one blocks.', 1)) }),
  of: BlockSchema,
  answer: 'The block.',
  errors: [
    {
      400:
        'blocked is missing or not a number; names this item; or would close a loop ' +
        '(that item already blocks this one, directly or through others).',
      404: 'No item with that number, or blocked names no item of the product.',
    },
    BODY_ERRORS,
  ],
});
const BLOCK_MISSING: Explained = { 404: 'No item with that number, or no block with that id by it.' };
export const getBlockSchema = oneOf({
  summary: 'Fetch a block',
  operationId: 'getBlock',
  params: BlockParams,
  of: BlockSchema,
  answer: 'The block.',
  errors: [BLOCK_MISSING],
});
export const deleteBlockSchema = oneOf({
  summary: 'Remove a block, or mark it unblocked',
  operationId: 'deleteBlock',
  description: "Its creator removes it; the blocked item's assignee marks it unblocked.",
  params: BlockParams,
  of: BlockSchema,
  answer: 'The block as the change left it (`unblocked` true).',
  errors: [
    { 403: "The caller neither made the block nor is the blocked item's assignee." },
    BLOCK_MISSING,
    BODY_ERRORS,
  ],
});

export const listAnnotationsSchema = listOf({
  summary: "List an item's annotations",
  operationId: 'listAnnotations',
  description: 'Notes tools left on the item.',
  of: AnnotationSchema,
  header: ANNOTATION_COUNT,
});
export const createAnnotationSchema = oneOf({
  summary: 'Annotate an item',
  operationId: 'createAnnotation',
  description: 'A note from a tool (a build, a review): what it is, what it did, and a body.',
  params: ItemParams,
  body: params({
    label: doc.required(doc.text(`What the tool is, shown as verb; at most ${LIMITS.label} characters.`, LIMITS.label)),
    action: doc.required(doc.text(`What it did; at most ${LIMITS.action} characters.`, LIMITS.action)),
    body: doc.text(`At most ${LIMITS.body} bytes of UTF-8.`, LIMITS.body),
  }),
  of: AnnotationSchema,
  answer: 'The annotation.',
  errors: [
    { 400: 'label or action is missing, empty or too long; body too long; control characters.' },
    ITEM_MISSING,
    BODY_ERRORS,
  ],
});
