import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { checkStorage, type StorageState } from './db/storage.js';
import { ref } from './http/documentation.js';
import { assessDelivery, summarize } from './mail/index.js';
import { formatTimestamp } from './time.js';

const STORAGE_REASONS = {
  full: 'The database is out of space: changes are refused until space is freed.',
  'read-only': 'The database does not take writes (read-only or failing storage): changes are refused until it does.',
};

// A type list rather than anyOf: the serialiser writes it without a validator to pick the branch.
const orNull = (description?: string) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...(description ? { description } : {}) });

/** The answer of /health, in the order the handler builds it (the serialiser follows this order). */
export const HealthSchema = Type.Object(
  {
    status: Type.String({ enum: ['ok', 'stalled', 'unavailable'] }),
    database: Type.String({ enum: ['reachable', 'unreachable', 'out of space', 'read-only'] }),
    reason: Type.Optional(Type.String({ description: 'Why the service is unavailable or mail is stalled.' })),
    storage: Type.Optional(
      Type.Object(
        { free_bytes: Type.Integer() },
        { description: "The free space of the database's disk, where it can be told." },
      ),
    ),
    mail: Type.Optional(
      Type.Object(
        {
          pending: Type.Integer(),
          sending: Type.Integer(),
          sent: Type.Integer(),
          failed: Type.Integer(),
          oldest_pending_at: orNull('When the oldest undelivered message was queued.'),
          oldest_due_at: orNull('Since when the longest-waiting due message has been due.'),
          oldest_due_seconds: Type.Integer(),
          last_sent_at: orNull(),
          progressing: Type.Boolean(),
          server: Type.String({
            enum: ['reachable', 'unreachable'],
            description: "What this instance's worker saw of the mail server.",
          }),
          unreachable_since: orNull(),
          server_error: orNull(),
        },
        { description: 'The outbox: message counts by status, and whether mail is moving.' },
      ),
    ),
  },
  { $id: 'Health' },
);

/** The answer of /health/live and /health/ready. */
export const ProbeSchema = Type.Object(
  {
    status: Type.String({
      enum: ['live', 'ready', 'starting', 'draining'],
      description: 'live: the process answers; ready: it takes requests; starting or draining: it does not.',
    }),
  },
  { $id: 'Probe' },
);

/**
 * `GET /health/live` and `GET /health/ready`, the balancer's two checks. Liveness answers 200 for
 * as long as the process answers at all (restart it when it does not). Readiness answers 200 once
 * the instance listens and is done starting, 503 while it starts and from the moment it is told
 * to stop (SIGTERM), so the balancer stops sending it requests before it closes its listener. Neither
 * reads the database: an unreachable database, a full disk or stalled mail are `/health`'s, which
 * would take every instance out of rotation at once and turn the service's own clear 503s into the
 * balancer's.
 */
export async function probeRoutes(app: FastifyInstance): Promise<void> {
  const probe = (summary: string, operationId: string, description: string, failing?: string) => ({
    schema: {
      summary,
      description,
      operationId,
      tags: ['service'],
      response: {
        200: ref(ProbeSchema, { description: 'The instance answers (liveness) or takes requests (readiness).' }),
        ...(failing ? { 503: ref(ProbeSchema, { description: failing }) } : {}),
      },
    },
    config: { rateLimit: false },
  });
  app.get(
    '/health/live',
    probe('Liveness', 'healthLive', 'For load balancers and process supervisors: the process answers.'),
    async () => ({ status: 'live' }),
  );
  app.get(
    '/health/ready',
    probe(
      'Readiness',
      'healthReady',
      'For load balancers: whether this instance takes requests (not while it starts or drains).',
      'The instance is starting or draining (told to stop): send requests to another.',
    ),
    async (_request, reply) => {
      const phase = app.lifecycle.phase;
      if (phase === 'ready') return { status: 'ready' };
      return reply.code(503).send({ status: phase });
    },
  );
}

/**
 * `GET /health` for load balancers and operators: database reachability, whether it can take
 * writes, the outbox counts, and whether mail is moving. 503 when the database cannot be reached,
 * is out of space or read-only, or when due mail has stood still past `MAIL_STALL_SECONDS` (with
 * the reason). No authentication, so no personal data.
 * Never rate-limited: a probe refused with 429 would take a healthy instance out of rotation.
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  const schema = {
    summary: 'Health',
    description: 'For load balancers and operators; no credentials, no personal data.',
    operationId: 'health',
    tags: ['service'],
    response: {
      200: ref(HealthSchema, { description: 'The database is reachable and mail is moving.' }),
      503: ref(HealthSchema, {
        description:
          'The database cannot be reached, is out of space or read-only, ' +
          'or due mail has stood still past MAIL_STALL_SECONDS (with the reason).',
      }),
    },
  };
  app.get('/health', { schema, config: { rateLimit: false } }, async (request, reply) => {
    const now = new Date();
    let summary: Awaited<ReturnType<typeof summarize>>;
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
      return reply
        .code(503)
        .send({ status: 'unavailable', database, reason: STORAGE_REASONS[storage.problem], ...space, mail });
    }
    if (delivery.stalled === null) return { status: 'ok', database: 'reachable', ...space, mail };
    const reason = worker.unreachableSince
      ? `${delivery.stalled} The mail server has been unreachable since ${worker.unreachableSince} ` +
        `(${worker.lastErrorCode}).`
      : delivery.stalled;
    return reply.code(503).send({ status: 'stalled', database: 'reachable', reason, ...space, mail });
  });
}
