import type { FastifyInstance } from 'fastify';
import { NEXT_OFFSET, piecesWithin, serializerOf } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { ItemSchema, type ItemJson } from '../items/index.js';
import { parseSearch } from './input.js';
import { resultPieces } from './present.js';
import { ITEM_COUNT, searchItemsSchema } from './schema.js';
import { searchItems } from './service.js';

const ONE_ITEM = ref(ItemSchema);

/** `GET /api/items/search.json`: the caller's products' items that match a query (INTERFACE.md "Searching items"). */
export async function searchRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/items/search.json', { schema: searchItemsSchema }, async (request, reply) => {
    const input = parseSearch(requestParams(request));
    const result = await searchItems(app.db, request.user, input);
    const pieces = await resultPieces({
      db: app.db,
      kept: app.keptItems,
      result,
      urls: app.config,
      viewerId: request.user.id,
      serialize: serializerOf<ItemJson>(reply, ONE_ITEM),
      budget: app.config.maxAnswerBytes,
    });
    const { body: json, count } = piecesWithin(pieces, app.config.maxAnswerBytes);
    reply.header(ITEM_COUNT, String(result.total));
    if (input.offset + count < result.total && count > 0) reply.header(NEXT_OFFSET, String(input.offset + count));
    reply.type('application/json; charset=utf-8');
    const facets = result.facets ? `,"facets":${JSON.stringify(result.facets)}` : '';
    const rest = `,"total_count":${result.total}${facets},"fuzzy":${result.fuzzy}}`;
    return Buffer.concat([Buffer.from('{"items":'), json, Buffer.from(rest)]);
  });
}
