import type { FastifyInstance } from 'fastify';
import { BadRequestError, ServiceUnavailableError, TooManyRequestsError } from '../../errors.js';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { LiveChanges } from '../live.js';
import { SECURITY_HEADERS } from '../session.js';
import { ProductPath } from './common.js';

const eventsQuery = params({ since: Param });

/**
 * A product's changes as server-sent events (`/app/products/{id}/events?since=<revision>`), for the
 * board and item pages' script: an event `change` with the product's new revision and the numbers
 * of the items that changed (none: reload everything). A person holds a few at most (429 past that),
 * a process a bounded number (503); streams end when the server closes. Asked without
 * `Accept: text/event-stream` it is a 400.
 */
export async function liveRoutes(app: FastifyInstance): Promise<void> {
  const live = new LiveChanges(app.db, { pollMs: app.config.livePollMs, databaseUrl: app.config.databaseUrl });
  // Before the server waits for its connections to end: open streams would hold it.
  app.addHook('preClose', async () => live.close());
  // A draining instance ends its streams once the balancer has taken it out: pages reconnect elsewhere.
  app.lifecycle.onClosing(() => live.close());
  app.get('/events', { schema: { ...ProductPath, querystring: eventsQuery } }, async (request, reply) => {
    const scope = request.scope;
    // Only an event source streams (a stream held by anything else would never end).
    if (!/\btext\/event-stream\b/.test(request.headers.accept ?? ''))
      throw new BadRequestError('This is an event stream, for pages: ask with Accept: text/event-stream.');
    const refused = live.refusal(scope.user.id);
    if (refused === 'person')
      throw new TooManyRequestsError('Too many live pages are open; this one does not follow changes.', 30);
    if (refused) throw new ServiceUnavailableError('Too many live pages are open here; try again later.', 30);
    const since = requestParams(request).since;
    const shown = Number(typeof since === 'string' && /^\d{1,15}$/.test(since) ? since : scope.product.revision);
    reply.hijack();
    reply.raw.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    await live.open({ productId: scope.product.id, userId: scope.user.id, out: reply.raw }, shown);
  });
}
