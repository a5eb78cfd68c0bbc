import crypto from 'node:crypto';
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { observeQueries } from './db/connection.js';
import { UnauthorizedError } from './errors.js';
import { errorAnswers, METRICS_SECURITY } from './http/documentation.js';
import { assessDelivery, summarize } from './mail/index.js';
import { formatTimestamp } from './time.js';

/** From a millisecond to ten seconds: API answers take a few milliseconds, slow pages seconds. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** From 50 µs: most SQLite statements take less than a millisecond, a slow one on PostgreSQL seconds. */
const QUERY_BUCKETS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

/**
 * `GET /metrics` in Prometheus' text format, for the operator's scraper; registered only when
 * `METRICS_TOKEN` is set, and answered only to `Authorization: Bearer <token>`. Labels name
 * route patterns, methods, status codes and outbox states, never a URL, a person or an item, so
 * the output holds no personal data and its size stays bounded however many products there are.
 * Each app has a registry of its own (tests build many in one process). Called before the
 * routes are registered, so its hook sees every one of them.
 */
export function registerMetrics(app: FastifyInstance, token: string): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer requests, by method, route pattern (unmatched: no route) and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: reply.statusCode },
      reply.elapsedTime / 1000,
    );
    done();
  });
  const queries = new Histogram({
    name: 'shiplog_db_query_duration_seconds',
    help: 'Time database statements took to run, failed ones included.',
    buckets: QUERY_BUCKETS,
    registers: [registry],
  });
  const stopObserving = observeQueries(app.db, (seconds) => queries.observe(seconds));
  app.addHook('onClose', async () => stopObserving());
  const outbox = outboxMetrics(app);

  const schema = {
    summary: 'Metrics',
    description: "Prometheus' text format; only when METRICS_TOKEN is set, and only with that token.",
    operationId: 'metrics',
    tags: ['service'],
    security: [{ [METRICS_SECURITY]: [] }],
    response: { 200: { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } } },
    errors: errorAnswers([{ 401: 'Without the token (`WWW-Authenticate: Bearer realm="shiplog"`).' }]),
  };
  app.get('/metrics', { onRequest: requireBearer(token), schema }, async (_request, reply) => {
    const [own, mail] = await Promise.all([registry.metrics(), outbox()]);
    return reply.type(registry.contentType).send(own + mail);
  });
}

/**
 * The outbox's figures, read when scraped with the function `/health` uses. In a registry apart,
 * so that while the database cannot be read they are left out (and the reason logged) rather
 * than shown stale, and the rest of the metrics still come.
 */
function outboxMetrics(app: FastifyInstance): () => Promise<string> {
  const registry = new Registry();
  const messages = new Gauge({
    name: 'shiplog_outbox_messages',
    help: 'Messages in the outbox by state (pending, sending, sent, failed).',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  const oldestDue = new Gauge({
    name: 'shiplog_outbox_oldest_due_seconds',
    help: 'How long the longest-waiting due message has been due (0 when none is).',
    registers: [registry],
  });
  return async () => {
    const now = new Date();
    try {
      const summary = await summarize(app.db, formatTimestamp(now), app.sentCount);
      for (const [state, count] of Object.entries(summary.counts)) messages.set({ state }, count);
      oldestDue.set(assessDelivery(summary, now, app.config.mailStallSeconds).oldestDueSeconds);
    } catch (err) {
      app.log.warn({ err }, 'metrics: the outbox could not be read');
      return '';
    }
    return registry.metrics();
  };
}

/** Refuses a request without the token, comparing digests so the time taken tells nothing of it. */
function requireBearer(token: string): onRequestAsyncHookHandler {
  const digest = (text: string) => crypto.createHash('sha256').update(text).digest();
  const expected = digest(token);
  return async (request) => {
    const given = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
    if (given === undefined || !crypto.timingSafeEqual(digest(given), expected)) {
      throw new UnauthorizedError('The metrics are given only with their token, as Authorization: Bearer <token>.');
    }
  };
}
