import type { FastifyInstance } from 'fastify';
import { boundedPage, NEXT_OFFSET, serializerOf } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { ItemSchema, type ItemJson } from '../items/index.js';
import { parseSearch } from './input.js';
import { presentResults } from './present.js';
import { searchItemsSchema } from './schema.js';
import { searchItems } from './service.js';

const ONE_ITEM = ref(ItemSchema);

/** `GET /api/items/search.json`: the caller's products' items that match a query (INTERFACE.md "Searching items"). */
export async function searchRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/items/search.json', { schema: searchItemsSchema }, async (request, reply) => {
    const input = parseSearch(requestParams(request));
    const result = await searchItems(app.db, request.user, input);
    const items = await presentResults(app.db, result, app.config, request.user.id);
    const { json, count } = await boundedPage(
      items,
      serializerOf<ItemJson>(reply, ONE_ITEM),
      app.config.maxAnswerBytes,
    );
    if (input.offset + count < result.total && count > 0) reply.header(NEXT_OFFSET, String(input.offset + count));
    reply.type('application/json; charset=utf-8');
    const facets = result.facets ? `,"facets":${JSON.stringify(result.facets)}` : '';
    return Buffer.from(`{"items":${json},"total_count":${result.total}${facets},"fuzzy":${result.fuzzy}}`);
  });
}
