import crypto from 'node:crypto';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { TooManyRequestsError } from '../errors.js';
import { LruCache } from '../lru.js';
import { documentScope } from './documentation.js';

/** How the limiter tells who a request is; given by the app, which knows the features' credentials. */
export interface RequestIdentity {
  /** What the request proves itself with (an Authorization header, a session cookie), read from its headers alone. */
  credentialOf(request: FastifyRequest): string | undefined;
  /** The user the request was authenticated as once it has been answered, if any. */
  userOf(request: FastifyRequest): number | undefined;
}

/** Credentials remembered as proven, and for how long: enough for every active client of an instance. */
const KNOWN_CREDENTIALS = 10_000;
const KNOWN_FOR_MS = 3_600_000;
/** Counters the store keeps; beyond it the least recently seen key starts afresh. */
const COUNTERS = 10_000;

/** The headers of the IETF draft, which every counted answer carries; the 429's tell when to come back. */
const LIMIT_HEADERS = {
  'RateLimit-Limit': { type: 'integer', description: 'The requests this user or client address may make in the window.' },
  'RateLimit-Remaining': { type: 'integer', description: 'The requests left in the window: 0.' },
  'RateLimit-Reset': { type: 'integer', description: 'Seconds until the window starts again.' },
};

const digest = (credential: string): string => crypto.createHash('sha256').update(credential).digest('base64url');

/**
 * Limits requests per user and per client address with @fastify/rate-limit, as the first hook of
 * every request, so a flood is refused before any credential is checked or the database read.
 *
 * Who a request is must be known before authentication runs, and without a database lookup that
 * a flood could make expensive. So the limiter counts a request against its user only when its
 * credential (the Authorization header, or the page session cookie) authenticated that user on an
 * earlier request of this process; it remembers a hash of the credential then, and forgets it when
 * a request with it is refused unauthenticated (a replaced key). Everything else (no credential, a
 * new, wrong or expired one) counts against the client address: made-up credentials cannot buy
 * fresh counters, and a new key's first request costs one request of its address. Counters are
 * per process.
 */
export async function registerRateLimits(app: FastifyInstance, config: Config, identity: RequestIdentity): Promise<void> {
  const { rateLimitPerKey: perKey, rateLimitPerAddress: perAddress, rateLimitWindowSeconds: windowSeconds } = config;
  if (perKey === 0 && perAddress === 0) return;
  const known = new LruCache<string, number>(KNOWN_CREDENTIALS, KNOWN_FOR_MS);
  // Each request's credential is hashed once, when it is counted, and looked at again when answered.
  const digests = new WeakMap<FastifyRequest, string>();
  const digestOf = (request: FastifyRequest): string | undefined => {
    let hash = digests.get(request);
    if (hash === undefined) {
      const credential = identity.credentialOf(request);
      if (credential === undefined) return undefined;
      hash = digest(credential);
      digests.set(request, hash);
    }
    return hash;
  };
  const knownUser = (request: FastifyRequest): number | undefined => {
    const hash = digestOf(request);
    return hash === undefined ? undefined : known.get(hash);
  };
  const maxFor = (key: string) => (key.startsWith('user ') ? perKey : perAddress);
  await app.register(rateLimit, {
    // Not per route: route hooks run after the scopes' own, authentication among them.
    global: false,
    // The IETF draft's RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, with Retry-After.
    enableDraftSpec: true,
    timeWindow: windowSeconds * 1000,
    cache: COUNTERS,
    keyGenerator: (request) => {
      const user = knownUser(request);
      return user === undefined ? `address ${normalizeIP(request.ip)}` : `user ${user}`;
    },
    max: (_request, key) => maxFor(key),
    // Probes (`config: { rateLimit: false }`) are never limited, nor anything whose limit is 0.
    allowList: (request, key) => request.routeOptions.config.rateLimit === false || maxFor(key) === 0,
    errorResponseBuilder: (_request, context) => {
      const seconds = Math.max(1, Math.ceil(context.ttl / 1000));
      return new TooManyRequestsError(`Too many requests: at most ${context.max} in ${windowSeconds} s. Try again in ${seconds} s.`, seconds);
    },
  });
  app.addHook('onRequest', app.rateLimit());
  // Here, beside the hook, so that every route counted (those registered from now on) documents
  // its 429, and a route exempted from the limit does not.
  const limits = [perKey && `${perKey} from one user`, perAddress && `${perAddress} from one client address`].filter(Boolean).join(', or ');
  documentScope(app, {
    errors: {
      429: `More than ${limits} in ${windowSeconds} s; a request counts against its user once its credentials have authenticated them on this instance, against its address until then. Checked before anything else, credentials included.`,
    },
    headers: { 429: LIMIT_HEADERS },
    exempt: (route) => route.config?.rateLimit === false,
  });
  app.addHook('onResponse', async (request, reply) => {
    const hash = digestOf(request);
    if (hash === undefined) return;
    const user = identity.userOf(request);
    // Known already as this user: left as it is (forgotten an hour after it was learnt, then learnt again here).
    if (user !== undefined && known.get(hash) !== user) known.set(hash, user);
    else if (user === undefined && reply.statusCode === 403) known.delete(hash);
  });
}
