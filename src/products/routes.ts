import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { boundedPage, NEXT_OFFSET, nextOffsetHeader, serializerOf } from '../http/answer-size.js';
import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { asInteger, collectErrors, params, type ParamValue } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MemberSchema, presentMember, presentProduct, ProductSchema } from './present.js';
import { listMembers, listProductsOfUser } from './repository.js';
import { parseProductName } from './input.js';
import { createProduct } from './service.js';

const tags = ['products'];

/**
 * `offset` of a list that is whole unless it would pass the size bound of an answer (thousands of
 * products or members): such a list ends early, and X-Sprintly-Next-Offset says where it goes on.
 */
const continued = params({
  offset: doc.integer('Entries to skip, to continue a list that ended early (X-Sprintly-Next-Offset); 0 by default.'),
});
const OFFSET_ERROR = { 400: 'A malformed offset.' };
const parseOffset = (p: Record<string, ParamValue>): number =>
  collectErrors((field) => field(() => asInteger('offset', p.offset)) ?? 0);

/** `entries` from `offset`, as a JSON array within the size bound of an answer, with the next offset when some remain. */
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
const ONE_PRODUCT = ref(ProductSchema);
const ONE_MEMBER = ref(MemberSchema);

export async function productRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/api/products.json',
    {
      schema: {
        summary: 'List your products',
        operationId: 'listProducts',
        tags,
        querystring: continued,
        response: {
          200: Type.Array(ref(ProductSchema), {
            description: 'The products the caller is a member of, by id.',
            headers: nextOffsetHeader,
          }),
        },
        errors: errorAnswers([OFFSET_ERROR]),
      },
    },
    async (request, reply) => {
      const offset = parseOffset(requestParams(request));
      const rows = await listProductsOfUser(app.db, request.user.id);
      return boundedList(
        app,
        reply,
        ONE_PRODUCT,
        rows.map((row) => presentProduct(row, row.admin === 1)),
        offset,
      );
    },
  );

  app.post(
    '/api/products.json',
    {
      schema: {
        summary: 'Create a product',
        description: 'The caller becomes its admin member.',
        operationId: 'createProduct',
        tags,
        body: params({ name: doc.required(doc.text("The product's name.", 255)) }),
        response: { 200: ref(ProductSchema, { description: 'The new product.' }) },
        errors: errorAnswers([{ 400: 'name is missing, empty or too long.' }, BODY_ERRORS]),
      },
    },
    async (request) => {
      const name = parseProductName(requestParams(request));
      const product = await app.db.transaction().execute((trx) => createProduct(trx, request.user, name));
      return presentProduct(product, true);
    },
  );
}

/** Routes under `/api/products/{id}`: the caller is a member by the time a handler runs. */
export async function productMemberRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/api/products/:product_id.json',
    {
      schema: {
        summary: 'Fetch a product',
        operationId: 'getProduct',
        tags,
        params: ProductParams,
        response: { 200: ref(ProductSchema, { description: 'The product.' }) },
      },
    },
    async (request) => presentProduct(request.scope.product, request.scope.admin),
  );

  app.get(
    '/api/products/:product_id/people.json',
    {
      schema: {
        summary: "List a product's members",
        operationId: 'listPeople',
        tags: ['people'],
        params: ProductParams,
        querystring: continued,
        response: {
          200: Type.Array(ref(MemberSchema), { description: 'The members, by user id.', headers: nextOffsetHeader }),
        },
        errors: errorAnswers([OFFSET_ERROR]),
      },
    },
    async (request, reply) => {
      const offset = parseOffset(requestParams(request));
      const members = (await listMembers(app.db, request.scope.product.id)).map((u) =>
        presentMember(u, u.admin === 1, request.user.id),
      );
      return boundedList(app, reply, ONE_MEMBER, members, offset);
    },
  );
}
