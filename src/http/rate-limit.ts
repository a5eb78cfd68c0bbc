import crypto from 'node:crypto';
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Config, databaseOptions } from '../config.js';
import { type Db, openDatabase } from '../db/connection.js';
import { TooManyRequestsError } from '../errors.js';
import { PeriodicJob } from '../jobs/runner.js';
import { LruCache } from '../lru.js';
import { documentScope } from './documentation.js';
import { LeasedCounts } from './leases.js';
import { countInWindow, deleteEndedWindows, type Window } from './repository.js';

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
  'RateLimit-Limit': {
    type: 'integer',
    description: 'The requests this user or client address may make in the window.',
  },
  'RateLimit-Remaining': { type: 'integer', description: 'The requests left in the window: 0.' },
  'RateLimit-Reset': { type: 'integer', description: 'Seconds until the window starts again.' },
};

/**
 * What a client address counts as: IPv4 as it is (an IPv4-mapped IPv6 address as its IPv4 one),
 * IPv6 by its /64, the least a network hands one subscriber, as @fastify/rate-limit groups it.
 */
export const clientKey = (ip: string): string => normalizeIP(ip);

const digest = (credential: string): string => crypto.createHash('sha256').update(credential).digest('base64url');

/**
 * Limits requests per user and per client address, as the first hook of every request after the
 * hardening headers, so a flood is refused before any credential is checked or anything read.
 * Counted as @fastify/rate-limit counts, with the IETF draft's RateLimit headers, but in one hook,
 * synchronous when the process counts: the plugin awaits each of its callbacks and its store in
 * turn, which cost a tenth of a millisecond on every request. Its store interface would take the
 * shared count too, but the statement is all a shared count needs.
 *
 * Who a request is must be known before authentication runs, and without a database lookup that
 * a flood could make expensive. So the limiter counts a request against its user only when its
 * credential (the Authorization header, or the page session cookie) authenticated that user on an
 * earlier request of this process; it remembers a hash of the credential then, and forgets it when
 * a request with it is refused unauthenticated (a replaced key). Everything else (no credential, a
 * new, wrong or expired one) counts against the client address (IPv6 by /64, as the plugin's
 * normalizeIP groups it): made-up credentials cannot buy fresh counters, and a new key's first
 * request costs one request of its address. Counters are per process on SQLite; on PostgreSQL
 * (RATE_LIMIT_STORE=database, the default there) every instance counts in one table, a block of
 * requests at a time (see LeasedCounts), so N instances behind a balancer allow what one does.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  config: Config,
  identity: RequestIdentity,
): Promise<void> {
  const { rateLimitPerKey: perKey, rateLimitPerAddress: perAddress, rateLimitWindowSeconds: windowSeconds } = config;
  if (perKey === 0 && perAddress === 0) return;
  const known = new LruCache<string, number>(KNOWN_CREDENTIALS, KNOWN_FOR_MS);
  const windowMs = windowSeconds * 1000;
  const count = windowCounter(windowMs);
  const shared = config.rateLimitStore === 'database' ? await sharedCounter(app, config, count) : undefined;
  const digestOf = credentialDigests(identity);
  app.addHook('onRequest', (request, reply, done) => {
    // Probes (`config: { rateLimit: false }`) are never limited, nor anything whose limit is 0.
    if (request.routeOptions.config?.rateLimit === false) return done();
    const hash = digestOf(request);
    const user = hash === undefined ? undefined : known.get(hash);
    const max = user === undefined ? perAddress : perKey;
    if (max === 0) return done();
    const now = Date.now();
    const key = user === undefined ? `address ${clientKey(request.ip)}` : `user ${user}`;
    const answer = (window: Window) => {
      const seconds = Math.max(0, Math.ceil((window.endsAt - now) / 1000));
      reply.header('RateLimit-Limit', max);
      reply.header('RateLimit-Remaining', Math.max(0, max - window.count));
      reply.header('RateLimit-Reset', seconds);
      if (window.count <= max) return done();
      reply.header('Retry-After', seconds);
      done(
        new TooManyRequestsError(
          `Too many requests: at most ${max} in ${windowSeconds} s. Try again in ${Math.max(1, seconds)} s.`,
          Math.max(1, seconds),
        ),
      );
    };
    const window = shared ? shared(key, max, now) : count(key, now);
    if (window instanceof Promise) void window.then(answer);
    else answer(window);
  });
  // Here, beside the hook, so that every route counted (those registered from now on) documents
  // its 429, and a route exempted from the limit does not.
  documentRateLimits(app, config);
  app.addHook('onResponse', (request, reply, done) => {
    const hash = digestOf(request);
    if (hash !== undefined) {
      const user = identity.userOf(request);
      // Known already as this user: left as it is (forgotten an hour after it was learnt, then learnt again here).
      if (user !== undefined && known.get(hash) !== user) known.set(hash, user);
      else if (user === undefined && reply.statusCode === 403) known.delete(hash);
    }
    done();
  });
}

/**
 * Fixed windows per key, as @fastify/rate-limit's local store keeps them: a window starts with a
 * key's first request and is forgotten when it ends; beyond COUNTERS keys, the one seen least
 * recently starts afresh. Counts a request of `key` and gives its window.
 */
function windowCounter(windowMs: number): (key: string, now: number) => Window {
  const windows = new LruCache<string, Window>(COUNTERS, windowMs);
  return (key, now) => {
    let window = windows.get(key, now);
    if (window === undefined) {
      window = { count: 0, endsAt: now + windowMs };
      windows.set(key, window, now);
    }
    window.count++;
    return window;
  };
}

/** How often the windows that ended are deleted from the shared store (and at most a window apart). */
const SWEEP_EVERY_MS = 60_000;
/** The counting pool's connections per instance, and the longest a claim may wait or run. */
const COUNTING_CONNECTIONS = 2;
const COUNT_DEADLINE_MS = 1_000;

/**
 * Counts in PostgreSQL, shared by every instance: a claim of a block of counts is one upsert (see
 * countInWindow and LeasedCounts), on a pool of its own (two connections), so that a claim never
 * queues behind the requests' own work for a connection, nor they behind claims. When a claim
 * fails (the database unreachable, or slower than its deadlines: a second to connect, a second for
 * the statement), the process counts alone and tries one claim again a second later, so the limit
 * still holds per instance and no request fails or waits for it; that is logged once per outage.
 * Ended windows are deleted every minute, by every instance (each deletes what has ended).
 */
async function sharedCounter(
  app: FastifyInstance,
  config: Config,
  local: (key: string, now: number) => Window,
): Promise<(key: string, max: number, now: number) => Window | Promise<Window>> {
  const windowMs = config.rateLimitWindowSeconds * 1000;
  const db: Db = await openDatabase({
    ...databaseOptions(config),
    // The app's own handle, opened first, migrated the schema.
    migrate: false,
    poolMax: COUNTING_CONNECTIONS,
    transactionPoolMax: 0,
    connectTimeoutMs: Math.min(config.pgConnectTimeoutMs, COUNT_DEADLINE_MS),
    statementTimeoutMs: Math.min(config.pgStatementTimeoutMs, COUNT_DEADLINE_MS),
  });
  const leases = new LeasedCounts(
    (key, amount, now) => countInWindow(db, key, now, windowMs, amount),
    COUNTERS,
    windowMs,
    {
      alone: local,
      retryMs: COUNT_DEADLINE_MS,
      told: (failing, err) => {
        if (failing) app.log.warn({ err }, 'rate limits cannot be counted in the database; each process counts alone');
        else app.log.info('rate limits are counted in the database again');
      },
    },
  );
  const sweep = new PeriodicJob(
    {
      name: 'deleting ended rate-limit windows',
      everyMs: Math.min(SWEEP_EVERY_MS, windowMs),
      run: () => deleteEndedWindows(db, Date.now()),
    },
    app.log,
  );
  app.addHook('onReady', async () => sweep.start());
  app.addHook('onClose', async () => {
    await sweep.stop();
    await db.destroy();
  });
  return (key, max, now) => leases.count(key, max, now);
}

/** Each request's credential is hashed once, when it is counted, and looked at again when answered. */
function credentialDigests(identity: RequestIdentity): (request: FastifyRequest) => string | undefined {
  const digests = new WeakMap<FastifyRequest, string>();
  return (request) => {
    let hash = digests.get(request);
    if (hash === undefined) {
      const credential = identity.credentialOf(request);
      if (credential === undefined) return undefined;
      hash = digest(credential);
      digests.set(request, hash);
    }
    return hash;
  };
}

/** The 429 of every route counted from now on, and the headers it carries. */
function documentRateLimits(app: FastifyInstance, config: Config): void {
  const { rateLimitPerKey: perKey, rateLimitPerAddress: perAddress, rateLimitWindowSeconds: windowSeconds } = config;
  const limits = [perKey && `${perKey} from one user`, perAddress && `${perAddress} from one client address`]
    .filter(Boolean)
    .join(', or ');
  documentScope(app, {
    errors: {
      429:
        `More than ${limits} in ${windowSeconds} s; a request counts against its user ` +
        'once its credentials have authenticated them on this instance, against its address until then. ' +
        'Checked before anything else, credentials included.',
    },
    headers: { 429: LIMIT_HEADERS },
    exempt: (route) => route.config?.rateLimit === false,
  });
}
