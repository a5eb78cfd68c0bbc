import type { FastifyInstance, FastifyRequest } from 'fastify';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import { confirmPage } from '../views/confirm.js';
import { replaceApiKeyFromPage, signOutEverywhere } from '../service.js';
import {
  clearSessionCookie,
  requireFormToken,
  sendPage,
  setSessionCookie,
  viewerOf,
  type CookieSettings,
} from '../session.js';
import { settingsPage } from '../views/settings.js';
import { signedOutEverywherePage } from '../views/signin.js';
import { sessionOrSignIn } from './products.js';

const FormBody = params({ csrf: Param });
const ConfirmBody = params({ csrf: Param, confirm: Param });

/** The signed-in person's settings: a new API key (shown once), and signing out everywhere. */
export async function settingsRoutes(
  app: FastifyInstance,
  { settings, signIn }: { settings: CookieSettings; signIn: (request: FastifyRequest) => string },
): Promise<void> {
  app.get('/settings', async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    return sendPage(reply, 200, 'Settings', settingsPage({ viewer: viewerOf(session) }), session);
  });

  // Every session of the person ends with the old key; this browser goes on in a new one.
  // The old key stops working at once: the first post asks, the second (confirm=yes) makes the new one.
  app.post('/settings/api-key', { schema: { body: ConfirmBody } }, async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    requireFormToken(session, request);
    if (requestParams(request).confirm !== 'yes') {
      const page = confirmPage({
        question: 'Make a new API key?',
        detail:
          'Your current key stops working at once: deploy scripts and clients that use it must be given the new ' +
          'one. You are also signed out in every other browser.',
        action: '/app/settings/api-key',
        label: 'Make a new API key',
        cancel: '/app/settings',
        viewer: viewerOf(session),
      });
      return sendPage(reply, 200, 'Make a new API key', page, session);
    }
    const renewed = await app.db.transaction().execute((trx) => replaceApiKeyFromPage(trx, session));
    setSessionCookie(reply, renewed.session, settings);
    const page = settingsPage({ viewer: viewerOf(renewed.session), newKey: renewed.apiKey });
    return sendPage(reply, 200, 'Settings', page, renewed.session);
  });

  app.post('/settings/sign-out-everywhere', { schema: { body: FormBody } }, async (request, reply) => {
    const session = sessionOrSignIn(request, reply, signIn);
    if (!session) return reply;
    requireFormToken(session, request);
    await signOutEverywhere(app.db, session);
    clearSessionCookie(reply, settings);
    return sendPage(reply, 200, 'Signed out everywhere', signedOutEverywherePage());
  });
}
