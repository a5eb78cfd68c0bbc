import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BODY_ERRORS, doc, errorAnswers, ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { params } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MemberSchema, presentMember, presentProduct, ProductSchema } from './present.js';
import { listMembers, listProductsOfUser } from './repository.js';
import { parseProductName } from './input.js';
import { createProduct } from './service.js';

const tags = ['products'];

export async function productRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/api/products.json',
    {
      schema: {
        summary: 'List your products',
        operationId: 'listProducts',
        tags,
        response: { 200: Type.Array(ref(ProductSchema), { description: 'The products the caller is a member of, by id.' }) },
      },
    },
    async (request) => {
      const rows = await listProductsOfUser(app.db, request.user.id);
      return rows.map((row) => presentProduct(row, row.admin === 1));
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
    { schema: { summary: 'Fetch a product', operationId: 'getProduct', tags, params: ProductParams, response: { 200: ref(ProductSchema, { description: 'The product.' }) } } },
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
        response: { 200: Type.Array(ref(MemberSchema), { description: 'The members, by user id.' }) },
      },
    },
    async (request) =>
      (await listMembers(app.db, request.scope.product.id)).map((u) => presentMember(u, u.admin === 1, request.user.id)),
  );
}
