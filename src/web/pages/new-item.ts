import type { FastifyInstance } from 'fastify';
import type { ItemRow } from '../../db/schema.js';
import { digitsToId, params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { createItem, findItemsByNumbers, parseCreateItem, renderDescription } from '../../items/index.js';
import type { ProductScope } from '../../scope.js';
import { parseBoardQuery } from '../input.js';
import { asText, checkToken, formErrors } from '../pages.js';
import type { RenderedPages } from '../rendered-pages.js';
import { itemHref } from '../views/parts.js';
import { renderBoard } from './board.js';
import { lineBreaks, ProductPath, redirectAfterPost } from './common.js';
import { renderItem } from './item.js';

/**
 * An item's form, twice over (the edit form sends the values it was opened with beside the new
 * ones): a description of 65,535 bytes at its widest once sent (line breaks, which browsers send
 * as CRLF percent-encoded, six bytes each: 384 KiB), title, who, what and why of 255 characters of
 * four bytes (3 KiB each), 100 tags of 64 such characters (75 KiB): about 950 KiB, with room.
 */
export const ITEM_FORM_LIMIT = 1280 * 1024;

const itemFields = params({
  csrf: Param,
  type: Param,
  title: Param,
  who: Param,
  what: Param,
  why: Param,
  description: Param,
  status: Param,
  score: Param,
  tags: Param,
  assigned_to: Param,
  parent: Param,
  from: Param,
});

/**
 * Where a refused new item's form is shown again: the page of its parent when that is a story
 * (the page with the sub-item form), else the board, whose form shows what is wrong with `parent`.
 */
async function storyPageOf(app: FastifyInstance, scope: ProductScope, raw: ParamValue): Promise<number | undefined> {
  const number = typeof raw === 'string' ? digitsToId(raw) : undefined;
  if (number === undefined) return undefined;
  const [item] = await findItemsByNumbers(app.db, scope.product.id, [number]);
  return item?.type === 'story' ? number : undefined;
}

/** A new item, from the board's form or a story's (a sub-item); a refused one comes back in its form. */
export async function newItemRoutes(app: FastifyInstance, { boards }: { boards: RenderedPages }): Promise<void> {
  app.post(
    '/items',
    { bodyLimit: ITEM_FORM_LIMIT, schema: { ...ProductPath, body: itemFields } },
    async (request, reply) => {
      checkToken(request);
      const p = requestParams(request);
      const scope = request.scope;
      let row: ItemRow;
      try {
        const input = await renderDescription(
          app.markdown,
          parseCreateItem({ ...p, description: lineBreaks(p.description) }),
        );
        row = await app.db.transaction().execute((trx) => createItem(trx, scope, input, app.config));
      } catch (err) {
        const shown = formErrors(err);
        if (!shown) throw err;
        const state = { values: asText(p), ...shown };
        const story = await storyPageOf(app, scope, p.parent);
        if (story !== undefined)
          return renderItem(app, { request, reply, number: story, status: 400, forms: { newSubItem: state } });
        const query = parseBoardQuery({}, scope.user.id);
        return renderBoard(app, { boards, request, reply, query, status: 400, newItem: state });
      }
      // Made on the board, it is said there (by number and title) and the board stays where it was.
      if (p.from === 'board' && p.parent === undefined)
        return redirectAfterPost(
          reply,
          `/app/products/${scope.product.id}/board?created=${row.number}#item-${row.number}`,
        );
      return redirectAfterPost(reply, itemHref(scope.product.id, row.number));
    },
  );
}
