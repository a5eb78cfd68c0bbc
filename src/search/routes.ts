import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { NEXT_OFFSET, piecesWithin, serializerOf } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { ItemSchema, type ItemJson } from '../items/index.js';
import { parseSearch } from './input.js';
import { resultPieces } from './present.js';
import { ITEM_COUNT, searchItemsSchema } from './schema.js';
import { searchableProductsOf, searchItems } from './service.js';

const ONE_ITEM = ref(ItemSchema);

/** `GET /api/items/search.json`: the caller's products' items that match a query (INTERFACE.md "Searching items"). */
export async function searchRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/items/search.json', { schema: searchItemsSchema }, async (request, reply) => {
    const input = parseSearch(requestParams(request));
    const viewer = request.user;
    // The answer is kept (as item lists are) under the revisions of every product it reads: any
    // change of what their items show, their members or their names moves one of them.
    const searchable = await searchableProductsOf(app.db, viewer);
    // A digest: a member of many products would otherwise be remembered by a key of kilobytes.
    const key = createHash('sha256')
      .update(JSON.stringify([searchable.map((p) => [p.id, p.revision, p.name]), input]))
      .digest('base64url');
    return app.keptAnswers.answerKeyed(
      request,
      reply,
      { key: `search:${viewer.id}:${key}`, caller: viewer.id, headers: [ITEM_COUNT, NEXT_OFFSET] },
      async () => {
        const result = await searchItems(app.db, viewer, input, searchable);
        const pieces = await resultPieces({
          db: app.db,
          kept: app.keptItems,
          result,
          urls: app.config,
          viewerId: viewer.id,
          serialize: serializerOf<ItemJson>(reply, ONE_ITEM),
          budget: app.config.maxAnswerBytes,
        });
        const { body: json, count } = piecesWithin(pieces, app.config.maxAnswerBytes);
        reply.header(ITEM_COUNT, String(result.total));
        if (input.offset + count < result.total && count > 0) reply.header(NEXT_OFFSET, String(input.offset + count));
        const facets = result.facets ? `,"facets":${JSON.stringify(result.facets)}` : '';
        const rest = `,"total_count":${result.total}${facets},"fuzzy":${result.fuzzy}}`;
        return Buffer.concat([Buffer.from('{"items":'), json, Buffer.from(rest)]);
      },
    );
  });
}
