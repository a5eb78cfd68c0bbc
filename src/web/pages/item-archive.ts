import type { FastifyInstance } from 'fastify';
import { params, Param } from '../../http/params.js';
import { archiveItem, getItem } from '../../items/index.js';
import { checkToken, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { archiveConfirmPage } from '../views/item-archive.js';
import { itemHref } from '../views/parts.js';
import { ItemPath, numberOf, redirectAfterPost } from './common.js';

/**
 * Archiving an item from its page, after a confirmation (the API's DELETE on the item). The
 * interface has no way back from archiving, so neither has the page; it says so before.
 */
export async function itemArchiveRoutes(app: FastifyInstance): Promise<void> {
  app.get('/items/:item_number/archive', { schema: ItemPath }, async (request, reply) => {
    const number = numberOf(request);
    const item = await getItem(app.db, request.scope, number);
    if (item.archived === 1) return redirectAfterPost(reply, itemHref(request.scope.product.id, number));
    const page = archiveConfirmPage({
      product: productOf(request.scope),
      item: { number, title: item.title },
      viewer: viewerOf(sessionOf(request)),
    });
    return sendPage(reply, 200, `Archive #${number}`, page, sessionOf(request));
  });

  const body = params({ csrf: Param });
  app.post('/items/:item_number/archive', { schema: { ...ItemPath, body } }, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    await app.db.transaction().execute((trx) => archiveItem(trx, request.scope, number, app.config));
    return redirectAfterPost(reply, `${itemHref(request.scope.product.id, number)}?done=archived`);
  });
}
