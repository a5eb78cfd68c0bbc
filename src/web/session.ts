import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ForbiddenError } from '../errors.js';
import {
  formTokenMatches,
  resumeSession,
  sessionEndsAt,
  sessionIdHash,
  type ActiveSession,
  type NewSession,
  type SessionPolicy,
} from './service.js';
import { LruCache } from '../lru.js';
import { layout, type Viewer } from './views/layout.js';
import type { Html } from './views/html.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The page session of the request's cookie, when it is active (pages only; never the API). */
    webSession: ActiveSession | null;
  }
}

export const SESSION_COOKIE = 'shiplog_session';
const SESSION_COOKIE_VALUE = new RegExp(`(?:^|;)\\s*${SESSION_COOKIE}=([^;]+)`);

/**
 * The session cookie as sent, unverified: what the rate limiter knows a page's visitor by before
 * cookies are parsed.
 */
export function sessionCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  return header === undefined ? undefined : SESSION_COOKIE_VALUE.exec(header)?.[1];
}

/**
 * Every page: scripts of Shiplog's own only (the board's), no framing, forms only to Shiplog, and
 * the URL (a link's token) told to no other site. Not `no-referrer`: under it browsers send
 * `Origin: null` with a page's own forms, which the same-origin check must refuse.
 */
export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; " +
    "form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
};

export function securityHeaders(reply: FastifyReply): void {
  reply.headers(SECURITY_HEADERS);
}

/** Who a page is shown to: the one reading of a session for the views. */
export const viewerOf = (session: ActiveSession): Viewer => ({
  email: session.user.email,
  csrfToken: session.csrfToken,
});

/** A page: HTML, never kept by a cache (pages show keys and personal data). */
export function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: Html,
  session?: ActiveSession | null,
  options?: { search?: boolean },
) {
  return sendHtml(reply, status, layout(title, body, session ? viewerOf(session) : undefined, options).text);
}

/** A whole page already rendered, layout and all (see RenderedPages). */
export function sendHtml(reply: FastifyReply, status: number, page: string | Buffer) {
  return reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page);
}

export interface CookieSettings extends SessionPolicy {
  secure: boolean;
}

/** The cookie of a session, kept by the browser for the idle time from now, and never past the session's end. */
export function setSessionCookie(
  reply: FastifyReply,
  session: NewSession,
  settings: CookieSettings,
  now = Date.now(),
): void {
  const maxAgeMs = Math.min(settings.idleMs, sessionEndsAt(session, settings) - now);
  reply.setCookie(SESSION_COOKIE, session.id, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: settings.secure,
    maxAge: Math.max(0, Math.floor(maxAgeMs / 1000)),
  });
}

export function clearSessionCookie(reply: FastifyReply, settings: CookieSettings): void {
  reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure: settings.secure });
}

/** Cookies whose signature was checked, each with its session id and that id's hash (null: not validly signed). */
const COOKIES_KEPT = 1024;

/**
 * onRequest hook of the pages: the session of a validly signed cookie, if it is still active.
 * Checking the signature and hashing the id are a cookie's own (the same cookie always gives the
 * same answer) and cost as much as reading the session: a browser sends the same cookie with every
 * page, so the answer is kept per cookie. Whether the session is still active is read every time.
 */
export function loadSession(app: FastifyInstance, settings: CookieSettings) {
  const checked = new LruCache<string, SessionKey | null>(COOKIES_KEPT);
  const keyOf = (request: FastifyRequest, raw: string): SessionKey | null => {
    let key = checked.get(raw);
    if (key === undefined) {
      const unsigned = request.unsignCookie(raw);
      key = unsigned.valid && unsigned.value ? { id: unsigned.value, idHash: sessionIdHash(unsigned.value) } : null;
      checked.set(raw, key);
    }
    return key;
  };
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    request.webSession = null;
    const raw = request.cookies[SESSION_COOKIE];
    if (!raw) return;
    const key = keyOf(request, raw);
    if (!key) return;
    request.webSession = (await resumeSession(app.db, key.idHash, settings)) ?? null;
    // An active session's cookie lives as long again as the idle time, from its last use, until the session's end.
    if (request.webSession?.touched) setSessionCookie(reply, { ...request.webSession, id: key.id }, settings);
  };
}

/** A session's id as its cookie holds it, and the hash by which the database knows it. */
interface SessionKey {
  id: string;
  idHash: string;
}

/**
 * Requests that change something come from Shiplog's own pages only: a browser's Origin (or, when
 * it sends none, its Referer), or Sec-Fetch-Site, naming another site is refused before anything
 * is read. Shiplog's own origin is PUBLIC_URL's, never the Host the request names: a name of the
 * attacker's that resolves to the server (DNS rebinding) would otherwise be its own origin.
 */
export function sameOrigin(publicUrl: string) {
  const ownOrigin = new URL(publicUrl).origin;
  return async (request: FastifyRequest): Promise<void> => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const origin = request.headers.origin ?? originOf(request.headers.referer);
    if ((origin !== undefined && origin !== ownOrigin) || request.headers['sec-fetch-site'] === 'cross-site') {
      throw new ForbiddenError('This form was sent from another site; nothing was changed.');
    }
  };
}

/** The origin of a Referer header: undefined without one, and `null` (no match) when it is no URL. */
function originOf(referer: string | undefined): string | undefined {
  if (referer === undefined) return undefined;
  return URL.canParse(referer) ? new URL(referer).origin : 'null';
}

/**
 * A POST of a page must carry the session's form token in its body: a token in the query string
 * would be in a URL, which browsers keep in history and proxies and servers log. A body the route
 * reads itself (a multipart upload) gives its fields.
 */
export function requireFormToken(
  session: ActiveSession,
  request: FastifyRequest,
  fields?: Record<string, string>,
): void {
  const body = fields ?? (request.body as Record<string, unknown> | undefined);
  const sent = typeof body?.csrf === 'string' ? body.csrf : '';
  if (!formTokenMatches(session, sent))
    throw new ForbiddenError(
      'This form has expired or did not come from Shiplog; reload the page and try again. Nothing was changed.',
    );
}
