import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyError } from '../http/errors.js';
import { prefersJson } from '../http/negotiate.js';
import { params, Param } from '../http/params.js';
import { bodyLimitOf, SMALL_FORM_LIMIT, tooLargeMessage } from '../http/parsers.js';
import { requestParams } from '../http/request.js';
import { TokenParams } from '../http/schemas.js';
import { formErrors } from './pages.js';
import { productPages } from './product-pages.js';
import { parseSignInRequest, safeNext, wellFormedToken } from './input.js';
import { productsRoutes } from './pages/products.js';
import { searchPageRoutes } from './pages/search.js';
import { settingsRoutes } from './pages/settings.js';
import { linkUsable, requestSignInLink, signIn, signOut, type ActiveSession } from './service.js';
import {
  clearSessionCookie,
  loadSession,
  requireFormToken,
  sameOrigin,
  securityHeaders,
  sendPage,
  setSessionCookie,
  type CookieSettings,
} from './session.js';
import { html } from './views/html.js';
import {
  confirmSignInPage,
  linkRefusedPage,
  linkSentPage,
  problemPage,
  signedOutPage,
  signInForm,
} from './views/signin.js';
import { BOARD_SCRIPT } from './views/board-script.js';
import { BOARD_KEYS_SCRIPT } from './views/board-keys-script.js';
import { LIVE_SCRIPT } from './views/live-script.js';
import { FORM_SCRIPT } from './views/form-script.js';
import { ITEM_SCRIPT } from './views/item-script.js';
import { NOTIFICATIONS_SCRIPT } from './views/notifications-script.js';
import { STYLESHEET } from './views/style.js';

export interface WebOptions {
  /** Signs the session cookie (a shared secret of the database, so every instance agrees). */
  cookieSecret: string;
  /** Makes the tokens of mailed sign-in links from their salts. */
  signinKey: string;
}

/** Where the pages live: everything under it is a page; the API stays under /api/. */
export const WEB_PREFIX = '/app';
const SIGN_IN = `${WEB_PREFIX}/sign-in`;
const HOME = `${WEB_PREFIX}/products`;
/**
 * Where a person who asked for a link from a page they were sent away from returns after signing
 * in: kept in the browser that asked (the mailed link names no page), for as long as a link works.
 */
const NEXT_COOKIE = 'shiplog_next';

/** The sign-in page for a request that needs a session: a GET of a page comes back to it afterwards. */
export function signInFor(request: FastifyRequest): string {
  const next = request.method === 'GET' ? safeNext(request.url) : undefined;
  return next ? `${SIGN_IN}?next=${encodeURIComponent(next)}` : SIGN_IN;
}

const FormBody = params({ csrf: Param });

/** The session of a page that needs one, or a redirect to the sign-in page (then undefined). */
function signedIn(request: FastifyRequest, reply: FastifyReply): ActiveSession | undefined {
  if (request.webSession) return request.webSession;
  void reply.header('cache-control', 'no-store').redirect(signInFor(request), 303);
  return undefined;
}

/**
 * The pages, registered under /app. Cookies are parsed and sessions loaded in this scope only:
 * no cookie ever reaches, let alone authenticates, a route of the API.
 */
export async function webRoutes(app: FastifyInstance, options: WebOptions): Promise<void> {
  const settings: CookieSettings = {
    secure: app.config.publicUrl.startsWith('https:'),
    idleMs: app.config.webSessionIdleMinutes * 60_000,
    lifetimeMs: app.config.webSessionLifetimeDays * 24 * 3600_000,
  };
  await app.register(cookie, { secret: options.cookieSecret, hook: 'onRequest' });
  app.decorateRequest('webSession', null);
  // Page forms are small; the few that carry more (an item's, the choice of environments) say so.
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= SMALL_FORM_LIMIT;
  });
  app.addHook('onRequest', async (_request, reply) => securityHeaders(reply));
  app.addHook('onRequest', sameOrigin(app.config.publicUrl));
  app.addHook('onRequest', loadSession(app, settings));
  registerPageErrors(app);

  app.get('/board.js', async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(BOARD_SCRIPT + BOARD_KEYS_SCRIPT),
  );
  app.get('/live.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(LIVE_SCRIPT),
  );
  app.get('/forms.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(FORM_SCRIPT),
  );
  app.get('/item.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(ITEM_SCRIPT),
  );
  app.get('/notifications.js', async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(NOTIFICATIONS_SCRIPT),
  );
  app.get('/style.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(STYLESHEET),
  );
  app.get('/', async (request, reply) => reply.redirect(request.webSession ? HOME : SIGN_IN, 303));

  await app.register(signInPages, { cookieSecret: options.cookieSecret, signinKey: options.signinKey, settings });
  await app.register(productsRoutes, { signIn: signInFor });
  await app.register(settingsRoutes, { settings, signIn: signInFor });
  await app.register(searchPageRoutes, { signIn: signInFor });
  await app.register(productPages, { prefix: '/products/:product_id', signIn: signInFor });
}

/**
 * Asking for a link, following it, signing out: one group, since its routes share the cookie
 * settings and the page to come back to, and read as the flow they are.
 */
async function signInPages(app: FastifyInstance, options: WebOptions & { settings: CookieSettings }): Promise<void> {
  const { settings } = options;
  app.get('/sign-in', { schema: { querystring: params({ next: Param }) } }, async (request, reply) => {
    const next = safeNext(requestParams(request).next);
    if (request.webSession) return reply.redirect(next ?? HOME, 303);
    return sendPage(reply, 200, 'Sign in', signInForm(undefined, next));
  });

  app.post('/sign-in', { schema: { body: params({ email: Param, next: Param }) } }, async (request, reply) => {
    let email: string;
    const next = safeNext(requestParams(request).next);
    try {
      ({ email } = parseSignInRequest(requestParams(request)));
    } catch (err) {
      const refused = formErrors(err);
      if (!refused) throw err;
      const email = requestParams(request).email;
      const values = { email: typeof email === 'string' ? email.slice(0, 254) : '' };
      return sendPage(reply, 400, 'Sign in', signInForm({ values, ...refused }, next));
    }
    if (next) keepNext(reply, next, settings);
    const queued = await app.db
      .transaction()
      .execute((trx) =>
        requestSignInLink(trx, { email, clientIp: request.ip }, options.signinKey, app.config.mailDomain, new Date()),
      );
    if (queued) app.outbox.nudge();
    return sendPage(reply, 200, 'Check your mail', linkSentPage());
  });

  const tokenOf = (request: FastifyRequest) => (request.params as { token: string }).token;

  // GET shows a button only: programs that fetch links in mail (scanners, previews) use nothing up.
  app.get('/sign-in/:token', { schema: { params: TokenParams } }, async (request, reply) => {
    const token = tokenOf(request);
    if (!wellFormedToken(token) || !(await linkUsable(app.db, token)))
      return sendPage(reply, 410, 'Sign-in link not valid', linkRefusedPage());
    return sendPage(reply, 200, 'Sign in', confirmSignInPage());
  });

  app.post('/sign-in/:token', { schema: { params: TokenParams } }, async (request, reply) => {
    const token = tokenOf(request);
    const session = wellFormedToken(token)
      ? await app.db.transaction().execute((trx) => signIn(trx, token, request.ip, settings))
      : undefined;
    if (!session) return sendPage(reply, 410, 'Sign-in link not valid', linkRefusedPage());
    setSessionCookie(reply, session, settings);
    return reply.header('cache-control', 'no-store').redirect(nextAfterSignIn(request, reply) ?? HOME, 303);
  });

  app.post('/sign-out', { schema: { body: FormBody } }, async (request, reply) => {
    const session = signedIn(request, reply);
    if (!session) return reply;
    requireFormToken(session, request);
    await signOut(app.db, session);
    clearSessionCookie(reply, settings);
    return sendPage(reply, 200, 'Signed out', signedOutPage());
  });
}

/** The page to come back to after signing in, kept in this browser for as long as a link works. */
function keepNext(reply: FastifyReply, next: string, settings: CookieSettings): void {
  reply.setCookie(NEXT_COOKIE, next, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    path: SIGN_IN,
    secure: settings.secure,
    maxAge: 15 * 60,
  });
}

/**
 * Where a followed link leads: the page it names itself (?next=, kept by the button's form), else
 * the page this browser came from, whose cookie is then cleared.
 */
function nextAfterSignIn(request: FastifyRequest, reply: FastifyReply): string | undefined {
  const kept = request.cookies[NEXT_COOKIE] ? request.unsignCookie(request.cookies[NEXT_COOKIE]) : undefined;
  const next =
    safeNext((request.query as Record<string, unknown>).next as string) ??
    (kept?.valid ? safeNext(kept.value ?? undefined) : undefined);
  if (kept) reply.clearCookie(NEXT_COOKIE, { path: SIGN_IN });
  return next;
}

/**
 * What a page says where the API's words are about its request body: a page's body is its form.
 * Every other error says on a page what it says in the API.
 */
const PAGE_WORDING = new Map<string, (request: FastifyRequest) => string>([
  ['body_too_large', (request) => tooLargeMessage(bodyLimitOf(request), 'form')],
  ['unreadable_body', () => 'The form could not be read.'],
  ['malformed_parameter', () => 'The form could not be read.'],
]);

/** Errors of pages are pages too (the API keeps its JSON errors): the status, and what happened. */
function registerPageErrors(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const answer = classifyError(error, request);
    if (answer.status >= 500) request.log.error({ err: error }, 'request failed');
    reply.headers(answer.headers);
    return pageProblem(request, reply, answer.status, PAGE_WORDING.get(answer.code)?.(request) ?? answer.message);
  });
  app.setNotFoundHandler((request, reply) => {
    securityHeaders(reply);
    return sendPage(
      reply,
      404,
      'Not found',
      html`<p>There is no page here.</p><p><a href="${WEB_PREFIX}/">Back to Shiplog</a></p>`,
      request.webSession,
    );
  });
}

/**
 * A page's error: a page saying what happened, or for the board's script (which asks for JSON and
 * shows the message itself) the usual error body. Also what a URL under /app that cannot be read
 * is answered with, before any route (or session) is reached.
 */
export function pageProblem(request: FastifyRequest, reply: FastifyReply, status: number, message: string) {
  securityHeaders(reply);
  if (prefersJson(request.headers.accept))
    return reply.code(status).header('cache-control', 'no-store').send({ code: status, message });
  const title =
    status === 403
      ? 'Not allowed'
      : status === 429
        ? 'Too many requests'
        : status === 503
          ? 'Try again later'
          : status >= 500
            ? 'Something went wrong'
            : 'Cannot do that';
  return sendPage(reply, status, title, problemPage(message), request.webSession);
}
