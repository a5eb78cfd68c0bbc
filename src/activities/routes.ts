import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { boundedPage, NEXT_OFFSET, serializerOf } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { parseActivityPage } from './input.js';
import { ActivitySchema, presentActivities, type ActivityJson } from './present.js';
import { listItemActivitiesSchema, listProductActivitiesSchema } from './schema.js';
import { activitiesOf } from './service.js';

export interface ActivityRouteOptions {
  /**
   * The item the path names, by the items' own rules (404 when there is none): the log knows
   * items only by what its rows keep of them, since every change of an item writes to it.
   */
  itemOf: (request: FastifyRequest) => Promise<{ id: number }>;
}

const ONE_ACTIVITY = ref(ActivitySchema);

/** The activity log under `/api/products/{id}`: the product's, and one item's; not kept, as a page is a few reads. */
export async function activityRoutes(app: FastifyInstance, options: ActivityRouteOptions): Promise<void> {
  app.get(
    '/api/products/:product_id/activities.json',
    { schema: listProductActivitiesSchema },
    async (request, reply) => {
      const page = parseActivityPage(requestParams(request));
      return answerPage(app, request, reply, undefined, page);
    },
  );
  app.get(
    '/api/products/:product_id/items/:item_number/activities.json',
    { schema: listItemActivitiesSchema },
    async (request, reply) => {
      // Parameters first, then the item, as every item route checks them (docs/INTERFACE.md §2).
      const page = parseActivityPage(requestParams(request));
      const item = await options.itemOf(request);
      return answerPage(app, request, reply, item.id, page);
    },
  );
}

/**
 * `{"activities": [...], "total_count": [N]}` for a page of the product's activities (or the
 * item's), which ends early rather than pass the size bound of an answer; where the next page
 * starts, when entries remain, in X-Sprintly-Next-Offset.
 */
async function answerPage(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  itemId: number | undefined,
  page: { offset: number; limit: number },
): Promise<Buffer> {
  const { scope } = request;
  const { rows, total } = await activitiesOf(app.db, { productId: scope.product.id, itemId }, page);
  const { json, count } = await boundedPage(
    await presentActivities(app.db, rows, scope.user.id),
    serializerOf<ActivityJson>(reply, ONE_ACTIVITY),
    app.config.maxAnswerBytes,
  );
  if (page.offset + count < total) reply.header(NEXT_OFFSET, String(page.offset + count));
  reply.type('application/json; charset=utf-8');
  return Buffer.from(`{"activities":${json},"total_count":[${total}]}`);
}
