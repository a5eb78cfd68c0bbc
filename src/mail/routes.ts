import type { FastifyInstance } from 'fastify';
import { answer, escapeHtml, failure } from '../http/html.js';
import { SMALL_FORM_LIMIT } from '../http/parsers.js';
import { showUnsubscribeSchema, unsubscribeSchema } from './schema.js';
import { unsubscribe, unsubscribeTarget, type UnsubscribeTarget } from './service.js';

const itemList = (t: UnsubscribeTarget) =>
  `<ul>${t.items.map((i) => `<li>#${i.number} ${escapeHtml(i.title)}</li>`).join('')}</ul>`;

/** One-click unsubscribe (RFC 8058): GET shows what the link does, POST does it. */
export async function unsubscribeRoutes(app: FastifyInstance): Promise<void> {
  // Mail programs post `List-Unsubscribe=One-Click` form- or multipart-encoded; the body says nothing else.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null, {}));

  app.get('/unsubscribe/:token', { schema: showUnsubscribeSchema }, async (request, reply) => {
    try {
      const target = await unsubscribeTarget(app.db, app.unsubscribeLinks, (request.params as { token: string }).token);
      const html = target.used
        ? '<p>This link has already been used.</p>'
        : `<p>Stop following these items (${escapeHtml(target.user.email)})?</p>${itemList(target)}
<form method="post"><button type="submit">Stop following</button></form>`;
      return answer(request, reply, 200, 'Stop following items', html, {
        email: target.user.email,
        items: target.items.map((i) => i.number),
        used: target.used,
      });
    } catch (err) {
      return failure(request, reply, err);
    }
  });

  // What mail programs post is one short field.
  app.post(
    '/unsubscribe/:token',
    { bodyLimit: SMALL_FORM_LIMIT, schema: unsubscribeSchema },
    async (request, reply) => {
      try {
        const token = (request.params as { token: string }).token;
        const target = await app.db.transaction().execute((trx) => unsubscribe(trx, app.unsubscribeLinks, token));
        return answer(request, reply, 200, 'You no longer follow these items', itemList(target), {
          email: target.user.email,
          unfollowed: target.items.map((i) => i.number),
        });
      } catch (err) {
        return failure(request, reply, err);
      }
    },
  );
}
