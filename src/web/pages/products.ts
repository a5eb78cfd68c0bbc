import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { presentProductOverviews } from '../present.js';
import { productOverviewRows } from '../repository.js';
import type { ActiveSession } from '../service.js';
import { sendPage } from '../session.js';
import { productsPage } from '../views/products.js';

/** The session of a page that needs one, or a redirect to the sign-in page `signIn` names (then undefined). */
export function sessionOrSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  signIn: (request: FastifyRequest) => string,
): ActiveSession | undefined {
  if (request.webSession) return request.webSession;
  void reply.header('cache-control', 'no-store').redirect(signIn(request), 303);
  return undefined;
}

/** The products the signed-in person belongs to, each with its items counted by status (one query). */
export async function productsRoutes(
  app: FastifyInstance,
  { signIn }: { signIn: (request: FastifyRequest) => string },
): Promise<void> {
  app.get('/products', async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    const products = presentProductOverviews(await productOverviewRows(app.db, session.user.id));
    return sendPage(reply, 200, 'Products', productsPage({ products }), session);
  });
}
