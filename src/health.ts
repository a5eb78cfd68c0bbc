import type { FastifyInstance } from 'fastify';
import { checkStorage, type StorageState } from './db/storage.js';
import { assessDelivery, summarize } from './mail/index.js';
import { formatTimestamp } from './time.js';

const STORAGE_REASONS = {
  full: 'The database is out of space: changes are refused until space is freed.',
  'read-only': 'The database does not take writes (read-only or failing storage): changes are refused until it does.',
};

/**
 * `GET /health` for load balancers and operators: database reachability, whether it can take
 * writes, the outbox counts, and whether mail is moving. 503 when the database cannot be reached,
 * is out of space or read-only, or when due mail has stood still past `MAIL_STALL_SECONDS` (with
 * the reason). No authentication, so no personal data.
 * Never rate-limited: a probe refused with 429 would take a healthy instance out of rotation.
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/health', { config: { rateLimit: false } }, async (request, reply) => {
    const now = new Date();
    let summary;
    try {
      summary = await summarize(app.db, formatTimestamp(now), app.sentCount);
    } catch (err) {
      request.log.error({ err }, 'health check: database unreachable');
      return reply.code(503).send({ status: 'unavailable', database: 'unreachable' });
    }
    const storage: StorageState = await checkStorage(app.db, app.config).catch((err: unknown) => {
      request.log.warn({ err }, 'health check: storage could not be examined');
      return {};
    });
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
    const space = storage.freeBytes === undefined ? {} : { storage: { free_bytes: storage.freeBytes } };
    if (storage.problem) {
      const database = storage.problem === 'full' ? 'out of space' : 'read-only';
      return reply.code(503).send({ status: 'unavailable', database, reason: STORAGE_REASONS[storage.problem], ...space, mail });
    }
    if (delivery.stalled === null) return { status: 'ok', database: 'reachable', ...space, mail };
    const reason = worker.unreachableSince
      ? `${delivery.stalled} The mail server has been unreachable since ${worker.unreachableSince} (${worker.lastErrorCode}).`
      : delivery.stalled;
    return reply.code(503).send({ status: 'stalled', database: 'reachable', reason, ...space, mail });
  });
}
