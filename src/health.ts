import type { FastifyInstance } from 'fastify';
import { assessDelivery, summarize } from './mail/index.js';
import { formatTimestamp } from './time.js';

/**
 * `GET /health` for load balancers and operators: database reachability, the outbox counts, and
 * whether mail is moving. 503 when the database cannot be reached, or when due mail has stood
 * still past `MAIL_STALL_SECONDS` (with the reason). No authentication, so no personal data.
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/health', async (request, reply) => {
    const now = new Date();
    let summary;
    try {
      summary = await summarize(app.db, formatTimestamp(now), app.sentCount);
    } catch (err) {
      request.log.error({ err }, 'health check: database unreachable');
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' });
    }
    const delivery = assessDelivery(summary, now, app.config.mailStallSeconds);
    const worker = app.outbox.state();
    const mail = {
      ...summary.counts,
      oldest_pending_at: summary.oldestPendingAt,
      oldest_due_at: summary.oldestDueAt,
      oldest_due_seconds: delivery.oldestDueSeconds,
      last_sent_at: summary.lastSentAt,
      progressing: delivery.progressing,
      // What this instance's worker saw of the mail server.
      server: worker.unreachableSince ? 'unreachable' : 'reachable',
      unreachable_since: worker.unreachableSince,
      server_error: worker.lastErrorCode,
    };
    if (delivery.stalled === null) return { status: 'ok', database: 'reachable', mail };
    const reason = worker.unreachableSince
      ? `${delivery.stalled} The mail server has been unreachable since ${worker.unreachableSince} (${worker.lastErrorCode}).`
      : delivery.stalled;
    return reply.code(503).send({ status: 'stalled', database: 'reachable', reason, mail });
  });
}
