import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { escapeHtml } from './deploy-email.js';
import { unsubscribe, unsubscribeTarget, type UnsubscribeTarget } from './service.js';

const TokenParams = Type.Object({ token: Type.String() });

export function page(title: string, body: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:36em;margin:3em auto;padding:0 1em;color:#222">
<h1 style="font-size:1.3em">${escapeHtml(title)}</h1>
${body}
</body></html>
`;
}

const itemList = (t: UnsubscribeTarget) =>
  `<ul>${t.items.map((i) => `<li>#${i.number} ${escapeHtml(i.title)}</li>`).join('')}</ul>`;

/** People click these links, mail programs POST them: HTML for browsers, the usual JSON otherwise. */
export function answer(request: FastifyRequest, reply: FastifyReply, status: number, title: string, html: string, json: object) {
  reply.code(status);
  if (/text\/html/.test(request.headers.accept ?? '')) return reply.type('text/html; charset=utf-8').send(page(title, html));
  return reply.send(json);
}

export function failure(request: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (!(err instanceof AppError)) throw err;
  return answer(request, reply, err.statusCode, err.message, '', { code: err.statusCode, message: err.message });
}

/** One-click unsubscribe (RFC 8058): GET shows what the link does, POST does it. */
export async function unsubscribeRoutes(app: FastifyInstance): Promise<void> {
  // Mail programs post `List-Unsubscribe=One-Click` form- or multipart-encoded; the body says nothing else.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null, {}));

  app.get('/unsubscribe/:token', { schema: { params: TokenParams } }, async (request, reply) => {
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

  app.post('/unsubscribe/:token', { schema: { params: TokenParams } }, async (request, reply) => {
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
  });
}
