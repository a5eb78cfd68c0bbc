import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { boundedPage, NEXT_OFFSET, serializerOf } from '../http/answer-size.js';
import { requestParams } from '../http/request.js';
import { asInteger, collectErrors, type ParamValue } from '../http/params.js';
import { presentMember, presentProduct } from './present.js';
import { listMembers, listProductsOfUser } from './repository.js';
import { parseProductName } from './input.js';
import {
  createProductSchema,
  getProductSchema,
  listPeopleSchema,
  listProductsSchema,
  ONE_MEMBER,
  ONE_PRODUCT,
} from './schema.js';
import { createProduct } from './service.js';

/** Where a list that ended early goes on: 0 unless given. */
const parseOffset = (p: Record<string, ParamValue>): number =>
  collectErrors((field) => field(() => asInteger('offset', p.offset)) ?? 0);

/**
 * `entries` from `offset`, as a JSON array within the size bound of an answer, with the next offset
 * when some remain.
 */
async function boundedList<T>(
  app: FastifyInstance,
  reply: FastifyReply,
  schema: TSchema,
  entries: T[],
  offset: number,
): Promise<Buffer> {
  const page = await boundedPage(entries.slice(offset), serializerOf<T>(reply, schema), app.config.maxAnswerBytes);
  if (offset + page.count < entries.length) reply.header(NEXT_OFFSET, String(offset + page.count));
  reply.type('application/json; charset=utf-8');
  return Buffer.from(page.json);
}

/** `/api/products.json`: the caller's products, and a new one. */
export async function productRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/products.json', { schema: listProductsSchema }, async (request, reply) => {
    const offset = parseOffset(requestParams(request));
    const rows = await listProductsOfUser(app.db, request.user.id);
    return boundedList(
      app,
      reply,
      ONE_PRODUCT,
      rows.map((row) => presentProduct(row, row.admin === 1)),
      offset,
    );
  });

  app.post('/api/products.json', { schema: createProductSchema }, async (request) => {
    const name = parseProductName(requestParams(request));
    const product = await app.db.transaction().execute((trx) => createProduct(trx, request.user, name));
    return presentProduct(product, true);
  });
}

/** Routes under `/api/products/{id}`: the caller is a member by the time a handler runs. */
export async function productMemberRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/products/:product_id.json', { schema: getProductSchema }, async (request) =>
    presentProduct(request.scope.product, request.scope.admin),
  );

  app.get('/api/products/:product_id/people.json', { schema: listPeopleSchema }, async (request, reply) => {
    const offset = parseOffset(requestParams(request));
    const members = (await listMembers(app.db, request.scope.product.id)).map((u) =>
      presentMember(u, u.admin === 1, request.user.id),
    );
    return boundedList(app, reply, ONE_MEMBER, members, offset);
  });
}
