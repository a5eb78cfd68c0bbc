import type { FastifyInstance } from 'fastify';
import helmet from 'helmet';
import type { Config } from '../config.js';

/**
 * Hardening headers on every answer, set by helmet in the first hook of every request (so errors,
 * 404s, redirects and refusals carry them too). Helmet's middleware is built once, here: the
 * Fastify wrapper builds it again for every request, parsing the policy each time. What it sets suits JSON: no content of any
 * kind may load (`default-src 'none'`), no framing, no sniffing, no Referer. The pages replace the
 * policy and the Referrer-Policy with their own (web/session.ts) on their reply, which wins over
 * what helmet set on the raw response.
 *
 * HSTS only when PUBLIC_URL is https (browsers ignore it over http), and for this host alone:
 * whether the domain's other hosts must be https is not Shiplog's to say.
 */
export function registerSecurityHeaders(app: FastifyInstance, config: Config): void {
  const setHeaders = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: config.publicUrl.startsWith('https:') ? { maxAge: 31_536_000, includeSubDomains: false } : false,
  });
  app.addHook('onRequest', (request, reply, done) => setHeaders(request.raw, reply.raw, (err) => done(err as Error | undefined)));
}

/** The same, for the few answers written before any hook runs (an unreadable URL, refused HTTP). */
export const EARLY_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};
