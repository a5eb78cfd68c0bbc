import type { FastifyInstance } from 'fastify';
import { summarize } from './mail/outbox.js';

/**
 * `GET /health` for load balancers and operators: database reachability and the outbox counts.
 * No authentication, so it carries no personal data.
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/health', async (request, reply) => {
    try {
      const mail = await summarize(app.db);
      return { status: 'ok', database: 'reachable', mail: { ...mail.counts, oldest_pending_at: mail.oldestPendingAt } };
    } catch (err) {
      request.log.error({ err }, 'health check: database unreachable');
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' });
    }
  });
}
