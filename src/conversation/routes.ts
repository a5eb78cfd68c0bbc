import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Trx } from '../db/connection.js';
import { boundedPage, NEXT_OFFSET, serializerOf } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { asPage, digitsToId } from '../http/params.js';
import { requestParams } from '../http/request.js';
import { pathItemNumber as pathItemNumberOf } from '../items/index.js';
import type { ProductScope } from '../scope.js';
import { parseAnnotation, parseBlock, parseComment } from './input.js';
import { ANNOTATION_COUNT, BLOCK_COUNT, COMMENT_COUNT, CONVERSATION_PAGE, FAVORITE_COUNT } from './model.js';
import {
  AnnotationSchema,
  BlockSchema,
  CommentSchema,
  FavoriteSchema,
  presentAnnotations,
  presentBlocks,
  presentComments,
  presentFavorites,
} from './present.js';
import * as schemas from './schema.js';
import * as service from './service.js';
import type { Listed, Page } from './service.js';

const ITEM = '/api/products/:product_id/items/:item_number';

// One entry of each list, serialized on its own to fit a page within the size bound of an answer.
// Constants: Fastify compiles a serializer once per schema object.
const ONE_COMMENT = ref(CommentSchema);
const ONE_FAVORITE = ref(FavoriteSchema);
const ONE_BLOCK = ref(BlockSchema);
const ONE_ANNOTATION = ref(AnnotationSchema);

/** The id of an entry in the path (`comments/{comment_id}.json`): digits, else the entry's 404. */
const entryId = (request: FastifyRequest, name: string): number =>
  digitsToId((request.params as Record<string, string>)[name]) ?? 0;

/**
 * A page of an item's list as a JSON array within the size bound of an answer (comments are up
 * to 64 KiB each), with its total and, when entries remain, where the next page starts.
 */
async function listAnswer<R, J>(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  o: {
    read: (db: Db, scope: ProductScope, number: number, page: Page) => Promise<Listed<R>>;
    present: (rows: R[]) => Promise<J[]>;
    schema: TSchema;
    header: string;
  },
): Promise<string> {
  const page = asPage(requestParams(request), CONVERSATION_PAGE);
  const { rows, total } = await o.read(app.db, request.scope, pathItemNumberOf(request), page);
  const { json, count } = await boundedPage(
    await o.present(rows),
    serializerOf<J>(reply, o.schema),
    app.config.maxAnswerBytes,
  );
  reply.header(o.header, String(total));
  if (page.offset + count < total) reply.header(NEXT_OFFSET, String(page.offset + count));
  reply.type('application/json; charset=utf-8');
  return json;
}

/**
 * The conversation around an item (docs/INTERFACE.md §11), in Sprint.ly's shapes: comments,
 * favorites, blocks and annotations. Members only, as every item route; each change in one
 * transaction.
 */
export async function conversationRoutes(app: FastifyInstance): Promise<void> {
  await app.register(commentRoutes);
  await app.register(favoriteRoutes);
  await app.register(blockRoutes);
  await app.register(annotationRoutes);
}

/** Runs a change in one transaction of the app's database. */
const inTransactionOf =
  (app: FastifyInstance) =>
  <T>(fn: (trx: Trx) => Promise<T>): Promise<T> =>
    app.db.transaction().execute(fn);

async function commentRoutes(app: FastifyInstance): Promise<void> {
  const inTransaction = inTransactionOf(app);
  app.get(`${ITEM}/comments.json`, { schema: schemas.listCommentsSchema }, (request, reply) =>
    listAnswer(app, request, reply, {
      read: service.listCommentsOf,
      present: (rows) => presentComments(app.db, request.scope, rows),
      schema: ONE_COMMENT,
      header: COMMENT_COUNT,
    }),
  );
  app.post(`${ITEM}/comments.json`, { schema: schemas.createCommentSchema }, async (request) => {
    const { body } = parseComment(requestParams(request));
    const row = await inTransaction((trx) =>
      service.addComment(trx, request.scope, pathItemNumberOf(request), { body, via: 'api' }, app.config),
    );
    return (await presentComments(app.db, request.scope, [row]))[0];
  });
  app.get(`${ITEM}/comments/:comment_id.json`, { schema: schemas.getCommentSchema }, async (request) => {
    const row = await service.getComment(
      app.db,
      request.scope,
      pathItemNumberOf(request),
      entryId(request, 'comment_id'),
    );
    return (await presentComments(app.db, request.scope, [row]))[0];
  });
  app.delete(`${ITEM}/comments/:comment_id.json`, { schema: schemas.deleteCommentSchema }, async (request) => {
    const row = await inTransaction((trx) =>
      service.removeComment(trx, request.scope, pathItemNumberOf(request), entryId(request, 'comment_id'), app.config),
    );
    return (await presentComments(app.db, request.scope, [row]))[0];
  });
}

async function favoriteRoutes(app: FastifyInstance): Promise<void> {
  const inTransaction = inTransactionOf(app);
  app.get(`${ITEM}/favorites.json`, { schema: schemas.listFavoritesSchema }, (request, reply) =>
    listAnswer(app, request, reply, {
      read: service.listFavoritesOf,
      present: (rows) => presentFavorites(app.db, request.scope, rows),
      schema: ONE_FAVORITE,
      header: FAVORITE_COUNT,
    }),
  );
  app.post(`${ITEM}/favorites.json`, { schema: schemas.createFavoriteSchema }, async (request) => {
    const row = await inTransaction((trx) =>
      service.addFavorite(trx, request.scope, pathItemNumberOf(request), app.config),
    );
    return (await presentFavorites(app.db, request.scope, [row]))[0];
  });
  app.get(`${ITEM}/favorites/:favorite_id.json`, { schema: schemas.getFavoriteSchema }, async (request) => {
    const row = await service.getFavorite(
      app.db,
      request.scope,
      pathItemNumberOf(request),
      entryId(request, 'favorite_id'),
    );
    return (await presentFavorites(app.db, request.scope, [row]))[0];
  });
  app.delete(`${ITEM}/favorites/:favorite_id.json`, { schema: schemas.deleteFavoriteSchema }, async (request) => {
    const row = await inTransaction((trx) =>
      service.removeFavorite(trx, request.scope, pathItemNumberOf(request), entryId(request, 'favorite_id')),
    );
    return (await presentFavorites(app.db, request.scope, [row]))[0];
  });
}

async function blockRoutes(app: FastifyInstance): Promise<void> {
  const inTransaction = inTransactionOf(app);
  for (const [path, side, schema] of [
    ['blocking.json', 'blocking', schemas.listBlockingSchema],
    ['blocked_by.json', 'blocked_by', schemas.listBlockedBySchema],
  ] as const) {
    app.get(`${ITEM}/${path}`, { schema }, (request, reply) =>
      listAnswer(app, request, reply, {
        read: (db, scope, number, page) => service.listBlocksOf(db, scope, number, side, page),
        present: (rows) => presentBlocks(app.db, request.scope, rows, app.config),
        schema: ONE_BLOCK,
        header: BLOCK_COUNT,
      }),
    );
  }
  app.post(`${ITEM}/blocking.json`, { schema: schemas.createBlockSchema }, async (request) => {
    const { blocked } = parseBlock(requestParams(request));
    const row = await inTransaction((trx) =>
      service.addBlock(trx, request.scope, pathItemNumberOf(request), blocked, app.config),
    );
    return (await presentBlocks(app.db, request.scope, [row], app.config))[0];
  });
  app.get(`${ITEM}/blocking/:block_id.json`, { schema: schemas.getBlockSchema }, async (request) => {
    const row = await service.getBlock(app.db, request.scope, pathItemNumberOf(request), entryId(request, 'block_id'));
    return (await presentBlocks(app.db, request.scope, [row], app.config))[0];
  });
  app.delete(`${ITEM}/blocking/:block_id.json`, { schema: schemas.deleteBlockSchema }, async (request) => {
    const row = await inTransaction((trx) =>
      service.removeBlock(trx, request.scope, pathItemNumberOf(request), entryId(request, 'block_id'), app.config),
    );
    return (await presentBlocks(app.db, request.scope, [row], app.config))[0];
  });
}

async function annotationRoutes(app: FastifyInstance): Promise<void> {
  const inTransaction = inTransactionOf(app);
  app.get(`${ITEM}/annotations.json`, { schema: schemas.listAnnotationsSchema }, (request, reply) =>
    listAnswer(app, request, reply, {
      read: service.listAnnotationsOf,
      present: (rows) => presentAnnotations(app.db, request.scope, rows),
      schema: ONE_ANNOTATION,
      header: ANNOTATION_COUNT,
    }),
  );
  app.post(`${ITEM}/annotations.json`, { schema: schemas.createAnnotationSchema }, async (request) => {
    const input = parseAnnotation(requestParams(request));
    const row = await inTransaction((trx) =>
      service.addAnnotation(trx, request.scope, pathItemNumberOf(request), input),
    );
    return (await presentAnnotations(app.db, request.scope, [row]))[0];
  });
}
