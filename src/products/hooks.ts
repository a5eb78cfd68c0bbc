import type { FastifyReply, FastifyRequest } from 'fastify';
import { changesHandleOf, type Db } from '../db/connection.js';
import type { ScopeDocumentation } from '../http/documentation.js';
import { callerScope } from './service.js';

/** What requireMember adds to each route it guards, for the API's description. */
export const requireMemberDocumentation: ScopeDocumentation = {
  errors: { 403: 'The caller is not a member of the product.', 404: 'No product with that id.' },
};

/**
 * onRequest hook for `/api/products/{product_id}/...`: the caller, as requireUser checks it, then the
 * product exists (404) and the caller is a member (403); the caller and the product in one read.
 */
export function requireMember(db: Db) {
  // A change reads who asks where it will write (changesHandleOf): not behind the queued reads.
  const changes = changesHandleOf(db);
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const { product_id } = request.params as { product_id: string };
    const reads = request.method === 'GET' || request.method === 'HEAD';
    request.scope = await callerScope(reads ? db : changes, request.headers.authorization, product_id);
    request.user = request.scope.user;
  };
}
