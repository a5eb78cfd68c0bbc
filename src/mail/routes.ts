import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorAnswers, jsonOrPage, ref, UNAVAILABLE } from '../http/documentation.js';
import { answer, escapeHtml, failure } from '../http/html.js';
import { SMALL_FORM_LIMIT, tooLargeMessage } from '../http/parsers.js';
import { TokenParams } from '../http/schemas.js';
import { unsubscribe, unsubscribeTarget, type UnsubscribeTarget } from './service.js';

const UnsubscribeLinkSchema = Type.Object(
  {
    email: Type.String({ description: 'The recipient of the message.' }),
    items: Type.Array(Type.Integer(), { description: 'The numbers of the items the link stops following.' }),
    used: Type.Boolean(),
  },
  { $id: 'UnsubscribeLink', description: 'What following the link would do.' },
);
const UnsubscribedSchema = Type.Object(
  {
    email: Type.String(),
    unfollowed: Type.Array(Type.Integer(), { description: 'The numbers of the items no longer followed.' }),
  },
  { $id: 'Unsubscribed' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const MAIL_SCHEMAS = [UnsubscribeLinkSchema, UnsubscribedSchema];

const linkErrors = [
  { 404: 'The link was not signed by this installation.', 410: 'The link was used already.' },
  UNAVAILABLE,
];
const html = { html: [404, 410] as const };
const tags = ['links'];

const itemList = (t: UnsubscribeTarget) =>
  `<ul>${t.items.map((i) => `<li>#${i.number} ${escapeHtml(i.title)}</li>`).join('')}</ul>`;

/** One-click unsubscribe (RFC 8058): GET shows what the link does, POST does it. */
export async function unsubscribeRoutes(app: FastifyInstance): Promise<void> {
  // Mail programs post `List-Unsubscribe=One-Click` form- or multipart-encoded; the body says nothing else.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null, {}));

  const showSchema = {
    summary: 'Show an unsubscribe link',
    description: "A deploy email's List-Unsubscribe link; GET changes nothing.",
    operationId: 'showUnsubscribe',
    tags,
    params: TokenParams,
    response: { 200: jsonOrPage(ref(UnsubscribeLinkSchema), 'What the link does.') },
    errors: errorAnswers(linkErrors, html),
  };
  app.get('/unsubscribe/:token', { schema: showSchema }, async (request, reply) => {
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

  const unsubscribeSchema = {
    summary: 'Unsubscribe (one click, RFC 8058)',
    description: "The recipient stops following the message's items. Any body is accepted and ignored.",
    operationId: 'unsubscribe',
    tags,
    params: TokenParams,
    response: { 200: jsonOrPage(ref(UnsubscribedSchema), 'The items are no longer followed.') },
    errors: errorAnswers([...linkErrors, { 413: tooLargeMessage(SMALL_FORM_LIMIT, 'body') }], html),
  };
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
