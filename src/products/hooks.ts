import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/connection.js';
import type { ScopeDocumentation } from '../http/documentation.js';
import { productScope } from './service.js';

/** What requireMember adds to each route it guards, for the API's description. */
export const requireMemberDocumentation: ScopeDocumentation = {
  errors: { 403: 'The caller is not a member of the product.', 404: 'No product with that id.' },
};

/** onRequest hook for `/api/products/{product_id}/...`: product exists (404), caller is a member (403). */
export function requireMember(db: Db) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const { product_id } = request.params as { product_id: string };
    request.scope = await productScope(db, request.user, product_id);
  };
}
