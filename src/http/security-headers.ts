import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet from 'helmet';
import type { Config } from '../config.js';

/**
 * Hardening headers on every answer, set in the first hook of every request (so errors, 404s,
 * redirects and refusals carry them too). Helmet decides them, once: its middleware is run here
 * against a response that only records what it sets, and the hook sets the same headers on every
 * response (the Fastify wrapper builds the middleware again for every request, parsing the policy
 * each time, then runs a dozen nested middlewares). What it sets suits JSON: no content of any
 * kind may load (`default-src 'none'`), no framing, no sniffing, no Referer. The pages replace the
 * policy and the Referrer-Policy with their own (web/session.ts) on their reply, which wins over
 * what helmet set on the raw response.
 *
 * HSTS only when PUBLIC_URL is https (browsers ignore it over http), and for this host alone:
 * whether the domain's other hosts must be https is not Shiplog's to say.
 */
export function registerSecurityHeaders(app: FastifyInstance, config: Config): void {
  const headers: [string, string][] = [];
  const recorder = {
    setHeader: (name: string, value: string) => headers.push([name, value]),
    removeHeader: () => undefined,
  };
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: config.publicUrl.startsWith('https:')
      ? { maxAge: 31_536_000, includeSubDomains: false }
      : false,
  })({} as IncomingMessage, recorder as unknown as ServerResponse, () => undefined);
  app.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    done();
  });
}

/** The same, for the few answers written before any hook runs (an unreadable URL, refused HTTP). */
export const EARLY_ANSWER_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};
