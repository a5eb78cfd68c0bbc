import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { requestParams } from '../http/request.js';
import { params, Param } from '../http/params.js';
import { ProductParams } from '../http/schemas.js';
import { MemberSchema, presentMember, presentProduct, ProductSchema } from './present.js';
import { listMembers, listProductsOfUser } from './repository.js';
import { parseProductName } from './input.js';
import { createProduct } from './service.js';

export async function productRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/products.json', { schema: { response: { 200: Type.Array(ProductSchema) } } }, async (request) => {
    const rows = await listProductsOfUser(app.db, request.user.id);
    return rows.map((row) => presentProduct(row, row.admin === 1));
  });

  app.post(
    '/api/products.json',
    { schema: { body: params({ name: Param }), response: { 200: ProductSchema } } },
    async (request) => {
      const name = parseProductName(requestParams(request));
      const product = await app.db.transaction().execute((trx) => createProduct(trx, request.user, name));
      return presentProduct(product, true);
    },
  );
}

/** Routes under `/api/products/{id}`: the caller is a member by the time a handler runs. */
export async function productMemberRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/products/:product_id.json', { schema: { params: ProductParams, response: { 200: ProductSchema } } }, async (request) =>
    presentProduct(request.scope.product, request.scope.admin),
  );

  app.get(
    '/api/products/:product_id/people.json',
    { schema: { params: ProductParams, response: { 200: Type.Array(MemberSchema) } } },
    async (request) =>
      (await listMembers(app.db, request.scope.product.id)).map((u) => presentMember(u, u.admin === 1, request.user.id)),
  );
}
