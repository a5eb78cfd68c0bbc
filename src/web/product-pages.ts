import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { productScope, requireAdmin } from '../products/index.js';
import { attachmentFileRoutes } from './pages/attachment-file.js';
import { boardRoutes } from './pages/board.js';
import { deployRoutes } from './pages/deploy.js';
import { deploysRoutes } from './pages/deploys.js';
import { itemRoutes } from './pages/item.js';
import { itemArchiveRoutes } from './pages/item-archive.js';
import { liveRoutes } from './pages/live.js';
import { itemAttachmentRoutes } from './pages/item-attachments.js';
import { itemConversationRoutes } from './pages/item-conversation.js';
import { itemDeploysRoutes } from './pages/item-deploys.js';
import { itemEditRoutes } from './pages/item-edit.js';
import { matrixRoutes } from './pages/matrix.js';
import { newItemRoutes } from './pages/new-item.js';
import { notificationsRoutes } from './pages/notifications.js';
import { peopleRoutes } from './pages/people.js';
import { webhookDeliveriesRoutes } from './pages/webhook-deliveries.js';
import { webhooksRoutes } from './pages/webhooks.js';
import { RenderedPages } from './rendered-pages.js';

export { BOARD_PAGE } from './pages/board.js';
export { MATRIX_ENVIRONMENTS, MATRIX_PAGE } from './pages/matrix.js';

/** What board pages kept per product, revision, role and query may weigh together (see RenderedPages). */
const BOARDS_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * A product's pages (`/app/products/{id}/...`), one file each under pages/: the board, the items,
 * the deploys, what is deployed where, which deploys email the signed-in person, and for its
 * admins its webhooks. The signed-in person must be a member (403 page); an unknown product is a
 * 404 page. Every change goes through the same service operation as the API, in one transaction.
 */
export async function productPages(
  app: FastifyInstance,
  options: { signIn: (request: FastifyRequest) => string },
): Promise<void> {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.webSession) return reply.header('cache-control', 'no-store').redirect(options.signIn(request), 303);
    request.scope = await productScope(
      app.db,
      request.webSession.user,
      (request.params as { product_id: string }).product_id,
    );
  });
  const boards = new RenderedPages(BOARDS_KEPT_BYTES);
  await app.register(boardRoutes, { boards });
  await app.register(newItemRoutes, { boards });
  await app.register(itemRoutes);
  await app.register(itemEditRoutes);
  await app.register(itemArchiveRoutes);
  await app.register(itemConversationRoutes);
  await app.register(itemAttachmentRoutes);
  await app.register(itemDeploysRoutes);
  await app.register(deploysRoutes);
  await app.register(deployRoutes);
  await app.register(matrixRoutes);
  await app.register(notificationsRoutes);
  await app.register(attachmentFileRoutes);
  await app.register(liveRoutes);
  await app.register(adminPages);
}

/**
 * The pages of a product's admins (others get the 403 page): its people and invitations, its
 * webhooks and their deliveries.
 */
async function adminPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', async (request) => requireAdmin(request.scope));
  await app.register(webhooksRoutes);
  await app.register(webhookDeliveriesRoutes);
  await app.register(peopleRoutes);
}
