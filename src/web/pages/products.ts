import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { createProduct, parseProductName } from '../../products/index.js';
import { checkToken, formErrors, viewerOf } from '../pages.js';
import { presentProductOverviews } from '../present.js';
import { productOverviewRows } from '../repository.js';
import type { ActiveSession } from '../service.js';
import { sendPage } from '../session.js';
import { productsPage } from '../views/products.js';
import { emptyForm, redirectAfterPost } from './common.js';

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
    const view = { products, form: emptyForm(), viewer: viewerOf(session) };
    return sendPage(reply, 200, 'Products', productsPage(view), session);
  });

  // A new product, with the signed-in person as its admin (the API's POST products.json): then its
  // people's page, to invite the team.
  app.post('/products', { schema: { body: params({ csrf: Param, name: Param }) } }, async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    checkToken(request);
    const p = requestParams(request);
    try {
      const name = parseProductName(p);
      const product = await app.db.transaction().execute((trx) => createProduct(trx, session.user, name));
      return redirectAfterPost(reply, `/app/products/${product.id}/people?done=created`);
    } catch (err) {
      const shown = formErrors(err);
      if (!shown) throw err;
      const products = presentProductOverviews(await productOverviewRows(app.db, session.user.id));
      const form = { values: { name: typeof p.name === 'string' ? p.name : '' }, ...shown };
      return sendPage(reply, 400, 'Products', productsPage({ products, form, viewer: viewerOf(session) }), session);
    }
  });
}
