import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  addBlock,
  addComment,
  addFavorite,
  findOwnFavorite,
  getComment,
  parseBlock,
  parseComment,
  removeBlock,
  removeComment,
  removeFavorite,
} from '../../conversation/index.js';
import { storableId } from '../../db/schema.js';
import { ValidationError } from '../../errors.js';
import { classifyError } from '../../http/errors.js';
import { params, Param, digitsToId } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { textAsHtml } from '../../markdown.js';
import { asText, checkToken, formErrors, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { confirmPage } from '../views/conversation.js';
import { html } from '../views/html.js';
import { itemHref } from '../views/parts.js';
import { ItemPath, lineBreaks, numberOf, redirectAfterPost } from './common.js';
import type { Flash } from './conversation.js';
import { renderItem, type ItemForms } from './item.js';

/**
 * A comment's form: 64 KiB of text, percent-encoded (three bytes each, CRLF for a line break),
 * with room for the token and the buttons.
 */
export const COMMENT_FORM_LIMIT = 256 * 1024;

const OnePath = (name: string) =>
  ({
    params: {
      type: 'object',
      properties: { product_id: { type: 'string' }, item_number: { type: 'string' }, [name]: { type: 'string' } },
    },
  }) as const;

/**
 * The id of a path's `name` segment: anything but digits, or past what can be stored, is 0, which
 * names nothing (the service's 404).
 */
export function pathIdOf(request: FastifyRequest, name: string): number {
  const id = digitsToId((request.params as Record<string, string>)[name]);
  return id !== undefined && storableId(id) ? id : 0;
}

/** After a change of the conversation: the item's page, saying what was done, at the part it concerns. */
export const backToItem = (request: FastifyRequest, reply: FastifyReply, number: number, done: Flash, at: string) =>
  redirectAfterPost(reply, `${itemHref(request.scope.product.id, number)}?done=${done}#${at}`);

/**
 * What a refused change of the conversation shows on the item's page: a reason about a parameter
 * next to its field (formErrors), and a refusal of the viewer (403) or of what is no longer there
 * (404) as the form's message. Anything else is the page error it always is.
 */
export function refusal(
  err: unknown,
): { status: number; errors: Record<string, string>; message?: string } | undefined {
  const answer = classifyError(err);
  const shown = formErrors(err);
  if (shown) return { status: answer.status, ...shown };
  if (answer.parameter && answer.status < 500)
    return { status: answer.status, errors: { [answer.parameter]: answer.message } };
  if (answer.status === 403 || answer.status === 404)
    return { status: answer.status, errors: {}, message: answer.message };
  return undefined;
}

/** The item's page again after a refusal, its forms as `forms` gives them from the refusal. */
export async function refused(
  app: FastifyInstance,
  o: { request: FastifyRequest; reply: FastifyReply; number: number; err: unknown },
  forms: (r: NonNullable<ReturnType<typeof refusal>>) => ItemForms,
) {
  const r = refusal(o.err);
  if (!r) throw o.err;
  return renderItem(app, { request: o.request, reply: o.reply, number: o.number, status: r.status, forms: forms(r) });
}

/** Comments: post (or preview) one, and delete one's own after a confirmation. */
async function commentRoutes(app: FastifyInstance): Promise<void> {
  const body = params({ csrf: Param, body: Param, preview: Param, post: Param });
  app.post(
    '/items/:item_number/comments',
    { bodyLimit: COMMENT_FORM_LIMIT, schema: { ...ItemPath, body } },
    async (request, reply) => {
      checkToken(request);
      const number = numberOf(request);
      const p = requestParams(request);
      const text = lineBreaks(p.body);
      const values = asText({ body: text });
      try {
        const input = parseComment({ body: text });
        if (p.preview !== undefined) {
          // The same renderer as the page's comments; a text it cannot take now is shown as it is.
          const preview = (await app.markdown.render(input.body)) ?? textAsHtml(input.body);
          const forms = { comment: { values, errors: {}, preview } };
          return renderItem(app, { request, reply, number, status: 200, forms });
        }
        const comment = await app.db
          .transaction()
          .execute((trx) => addComment(trx, request.scope, number, { ...input, via: 'page' }, app.config));
        return backToItem(request, reply, number, 'commented', `comment-${comment.id}`);
      } catch (err) {
        return refused(app, { request, reply, number, err }, (r) => ({ comment: { values, ...r } }));
      }
    },
  );

  const path = '/items/:item_number/comments/:comment_id/delete';
  app.get(path, { schema: OnePath('comment_id') }, async (request, reply) => {
    const number = numberOf(request);
    const id = pathIdOf(request, 'comment_id');
    const comment = await getComment(app.db, request.scope, number, id);
    const shown = html`<blockquote class="quoted">${comment.body}</blockquote>`;
    const page = confirmPage({
      product: productOf(request.scope),
      number,
      viewer: viewerOf(sessionOf(request)),
      what: 'this comment',
      shown,
      action: `${itemHref(request.scope.product.id, number)}/comments/${id}/delete`,
    });
    return sendPage(reply, 200, `Delete a comment on #${number}`, page, sessionOf(request));
  });

  app.post(path, { schema: { ...OnePath('comment_id'), body: params({ csrf: Param }) } }, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    const id = pathIdOf(request, 'comment_id');
    try {
      await app.db.transaction().execute((trx) => removeComment(trx, request.scope, number, id, app.config));
    } catch (err) {
      return refused(app, { request, reply, number, err }, (r) => ({
        problem: r.message ?? Object.values(r.errors)[0],
      }));
    }
    return backToItem(request, reply, number, 'uncommented', 'timeline');
  });
}

/** The star: favorite the item, or take one's own favorite back. */
async function favoriteRoutes(app: FastifyInstance): Promise<void> {
  const body = params({ csrf: Param, favorite: Param });
  app.post('/items/:item_number/favorite', { schema: { ...ItemPath, body } }, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    const scope = request.scope;
    const add = requestParams(request).favorite !== '0';
    await app.db.transaction().execute(async (trx) => {
      if (add) return addFavorite(trx, scope, number, app.config);
      const mine = await findOwnFavorite(trx, scope, number);
      return mine && removeFavorite(trx, scope, number, mine.id);
    });
    return backToItem(request, reply, number, add ? 'favorited' : 'unfavorited', 'favorite-count');
  });
}

/**
 * The block a form adds: `blocked` (this item blocks it) or `blocker` (it blocks this item), read
 * as the API reads `blocked`, its reasons put back on the field the person typed in.
 */
function blockToAdd(p: Record<string, unknown>, number: number): { from: number; to: number; field: string } {
  const field = p.blocker !== undefined && p.blocked === undefined ? 'blocker' : 'blocked';
  try {
    const other = parseBlock({ blocked: p[field] as string | undefined }).blocked;
    return field === 'blocked' ? { from: number, to: other, field } : { from: other, to: number, field };
  } catch (err) {
    if (err instanceof ValidationError && field === 'blocker')
      throw new ValidationError({ blocker: err.errors?.blocked ?? 'is invalid' });
    throw err;
  }
}

/** Blocks: add one either way by number; remove one (its creator) or mark it unblocked (the blocked one's assignee). */
async function blockRoutes(app: FastifyInstance): Promise<void> {
  const body = params({ csrf: Param, blocked: Param, blocker: Param });
  app.post('/items/:item_number/blocks', { schema: { ...ItemPath, body } }, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    const p = requestParams(request);
    let field = 'blocked';
    try {
      const block = blockToAdd(p, number);
      field = block.field;
      await app.db
        .transaction()
        .execute((trx) => addBlock(trx, request.scope, block.from, block.to, app.config).catch(onField(field)));
    } catch (err) {
      return refused(app, { request, reply, number, err }, (r) => ({ blocks: { values: asText(p), ...r } }));
    }
    return backToItem(request, reply, number, 'blocked', 'blocks-heading');
  });

  const remove = params({ csrf: Param, from: Param });
  app.post(
    '/items/:item_number/blocks/:block_id/remove',
    { schema: { ...OnePath('block_id'), body: remove } },
    async (request, reply) => {
      checkToken(request);
      const number = numberOf(request);
      // The item that blocks: this one, unless the form names the other (a block of the "Blocked by" list).
      const named = digitsToId(String(requestParams(request).from ?? ''));
      const from = named !== undefined && storableId(named) ? named : number;
      const id = pathIdOf(request, 'block_id');
      let removed: boolean;
      try {
        const block = await app.db
          .transaction()
          .execute((trx) => removeBlock(trx, request.scope, from, id, app.config));
        removed = block.user_id === request.scope.user.id;
      } catch (err) {
        return refused(app, { request, reply, number, err }, (r) => ({ blocks: { values: {}, ...r } }));
      }
      return backToItem(request, reply, number, removed ? 'block-removed' : 'unblocked', 'blocks-heading');
    },
  );
}

/**
 * The service names the other item of a block `blocked`, and a missing blocking item is a 404 of
 * no parameter: on the page, either is said next to the field the number was typed in.
 */
const onField = (field: string) => (err: unknown) => {
  const answer = classifyError(err);
  if (answer.code === 'invalid_parameter' && answer.errors?.blocked)
    throw new ValidationError({ [field]: answer.errors.blocked });
  if (
    answer.status === 404 &&
    (answer.parameter === 'blocked' || (field === 'blocker' && answer.code === 'item_not_found'))
  )
    throw new ValidationError({ [field]: 'names no item of this product' });
  throw err;
};

/** The conversation's changes from an item's page, each through the same service operation as the API. */
export async function itemConversationRoutes(app: FastifyInstance): Promise<void> {
  await app.register(commentRoutes);
  await app.register(favoriteRoutes);
  await app.register(blockRoutes);
}
