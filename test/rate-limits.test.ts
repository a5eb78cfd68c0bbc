import assert from 'node:assert/strict';
import { after, afterEach, beforeEach, describe, mock, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { ConfigError, loadConfig } from '../src/config.js';
import { rotateApiKey } from '../src/users/index.js';
import {
  assertError,
  basic,
  makeApp,
  makeUser,
  signInByMail,
  tempDir,
  type TestContext,
  type TestUser,
} from './helpers.js';
import { spawnServer, stopAll } from './processes.js';

after(stopAll);

// The limiter's windows run on Date.now(): a frozen clock makes every reset and Retry-After exact.
beforeEach(() => mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-23T12:00:00Z') }));
afterEach(() => mock.timers.reset());

const contexts: TestContext[] = [];
after(() => Promise.all(contexts.map((c) => c.close())));

/** An app with these limit settings (the others at their defaults). */
async function appWith(env: Record<string, string>): Promise<TestContext> {
  const t = await makeApp({ env: { RATE_LIMIT_PER_KEY: '', RATE_LIMIT_PER_ADDRESS: '', ...env } });
  contexts.push(t);
  return t;
}

let ipSeq = 0;
const newIp = () => `10.60.${Math.floor(++ipSeq / 250)}.${(ipSeq % 250) + 1}`;

const whoami = (t: TestContext, authorization: string | undefined, ip: string) =>
  t.app.inject({
    method: 'GET',
    url: '/api/user/whoami.json',
    remoteAddress: ip,
    headers: authorization ? { authorization } : {},
  });

const signInPage = (t: TestContext, ip: string) =>
  t.app.inject({ method: 'GET', url: '/app/sign-in', remoteAddress: ip });

function limitHeaders(res: LightMyRequestResponse) {
  return {
    limit: res.headers['ratelimit-limit'],
    remaining: res.headers['ratelimit-remaining'],
    reset: res.headers['ratelimit-reset'],
  };
}

/** A 429 in the interface's error shape with Retry-After and the three RateLimit headers. */
function assertLimited(res: LightMyRequestResponse, limit: number, resetSeconds: number): void {
  assertError(res, 429, { message: /too many requests/i, errors: [] });
  assert.deepEqual(limitHeaders(res), { limit: String(limit), remaining: '0', reset: String(resetSeconds) });
  assert.equal(res.headers['retry-after'], String(resetSeconds));
}

/** `n` requests that must all pass; returns the last answer. */
async function passes(n: number, send: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  let res: LightMyRequestResponse | undefined;
  for (let i = 0; i < n; i++) {
    res = await send();
    assert.ok(res.statusCode < 400, `request ${i + 1} of ${n}: ${res.statusCode} ${res.body}`);
  }
  return res!;
}

describe('per API key', () => {
  let t: TestContext;
  let ada: TestUser;
  let bob: TestUser;
  beforeEach(async () => {
    t = await appWith({ RATE_LIMIT_PER_KEY: '4', RATE_LIMIT_PER_ADDRESS: '3' });
    ada = await makeUser(t.db);
    bob = await makeUser(t.db);
  });

  test('over the limit a key gets 429 in the error shape, with Retry-After and the RateLimit headers', async () => {
    const ip = newIp();
    // The first request of a key counts against its address: nothing proved the key yet.
    assert.deepEqual(limitHeaders(await whoami(t, ada.auth, ip)), { limit: '3', remaining: '2', reset: '60' });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await whoami(t, ada.auth, ip));
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 200, 200, 200],
    );
    assert.deepEqual(
      answers.map((r) => r.headers['ratelimit-remaining']),
      ['3', '2', '1', '0'],
    );
    for (const r of answers) assert.equal(r.headers['ratelimit-limit'], '4');
    mock.timers.tick(15_000);
    assertLimited(await whoami(t, ada.auth, ip), 4, 45);
    // The count is the user's, whatever the route.
    assertLimited(
      await t.app.inject({
        method: 'GET',
        url: '/api/products.json',
        remoteAddress: ip,
        headers: { authorization: ada.auth },
      }),
      4,
      45,
    );
  });

  test('one key over its limit leaves other keys, and its own address, untouched', async () => {
    const ip = newIp();
    await passes(5, () => whoami(t, ada.auth, ip));
    assert.equal((await whoami(t, ada.auth, ip)).statusCode, 429);
    const other = await passes(3, () => whoami(t, bob.auth, ip));
    assert.equal(other.headers['ratelimit-limit'], '4');
    // The address has spent one request on each key's first one; unauthenticated pages still work.
    assert.equal((await signInPage(t, ip)).statusCode, 200);
  });

  test('Basic and Bearer with the same key count for the same user', async () => {
    const ip = newIp();
    const bearer = `Bearer ${ada.apiKey}`;
    await whoami(t, ada.auth, ip);
    await whoami(t, bearer, ip);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await whoami(t, i % 2 ? bearer : ada.auth, ip));
    assert.deepEqual(
      answers.map((r) => r.headers['ratelimit-remaining']),
      ['3', '2', '1', '0'],
    );
    assertLimited(await whoami(t, bearer, ip), 4, 60);
  });

  test('made-up keys count against their address, however many there are', async () => {
    const ip = newIp();
    for (let i = 0; i < 3; i++) {
      const res = await whoami(t, `Bearer ${String(i).padStart(32, 'x')}`, ip);
      assertError(res, 403);
      assert.deepEqual(limitHeaders(res), { limit: '3', remaining: String(2 - i), reset: '60' });
    }
    // 429, not 403: the limiter runs before the credentials are checked.
    assertLimited(await whoami(t, `Bearer ${'y'.repeat(32)}`, ip), 3, 60);
    assertLimited(await whoami(t, basic(ada.email, 'z'.repeat(32)), ip), 3, 60);
    // A proven key is counted as its user, not its address.
    assert.equal((await whoami(t, ada.auth, newIp())).statusCode, 200);
    assert.equal((await whoami(t, ada.auth, ip)).statusCode, 200);
  });

  test('a replaced key counts against its address again once it has been refused', async () => {
    const ip = newIp();
    const oldAuth = ada.auth;
    await passes(2, () => whoami(t, oldAuth, ip));
    await t.db.transaction().execute((trx) => rotateApiKey(trx, ada.email));
    const refused = await whoami(t, oldAuth, ip);
    assertError(refused, 403);
    assert.equal(refused.headers['ratelimit-limit'], '4', 'still known as the user until refused');
    assert.equal((await whoami(t, oldAuth, ip)).headers['ratelimit-limit'], '3');
  });

  test('the window resets', async () => {
    const ip = newIp();
    await passes(5, () => whoami(t, ada.auth, ip));
    assertLimited(await whoami(t, ada.auth, ip), 4, 60);
    mock.timers.tick(59_000);
    assertLimited(await whoami(t, ada.auth, ip), 4, 1);
    mock.timers.tick(1_000);
    const again = await whoami(t, ada.auth, ip);
    assert.equal(again.statusCode, 200);
    assert.deepEqual(limitHeaders(again), { limit: '4', remaining: '3', reset: '60' });
  });
});

describe('per client address', () => {
  test('unauthenticated requests count per address; other addresses are untouched', async () => {
    const t = await appWith({ RATE_LIMIT_PER_ADDRESS: '2' });
    const [ip, other] = [newIp(), newIp()];
    await passes(2, () => signInPage(t, ip));
    const limited = await t.app.inject({
      method: 'GET',
      url: '/app/sign-in',
      remoteAddress: ip,
      headers: { accept: 'application/json' },
    });
    assertLimited(limited, 2, 60);
    // Pages show the refusal as a page.
    const page = await signInPage(t, ip);
    assert.equal(page.statusCode, 429);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.equal(page.headers['retry-after'], '60');
    assertLimited(await t.app.inject({ method: 'GET', url: '/unsubscribe/nothing.here', remoteAddress: ip }), 2, 60);
    assertLimited(await t.app.inject({ method: 'GET', url: '/no/such/path', remoteAddress: ip }), 2, 60);
    assert.equal((await signInPage(t, other)).statusCode, 200);
  });

  test('a signed-in person on the pages counts as their user, not their address', async () => {
    const t = await appWith({ RATE_LIMIT_PER_KEY: '5', RATE_LIMIT_PER_ADDRESS: '2' });
    const ada = await makeUser(t.db);
    const cookie = await signInByMail(t, ada.email);
    const ip = newIp();
    const page = () => t.app.inject({ method: 'GET', url: '/app/products', remoteAddress: ip, headers: { cookie } });
    const first = await page();
    assert.equal(first.statusCode, 200);
    const rest = [];
    for (let i = 0; i < 5; i++) rest.push(await page());
    assert.deepEqual(
      rest.map((r) => [r.statusCode, r.headers['ratelimit-limit']]),
      Array(5).fill([200, '5']),
    );
    assert.equal((await page()).statusCode, 429);
    assert.equal((await signInPage(t, ip)).statusCode, 200, 'the address keeps its own count');
  });
});

describe('/health', () => {
  test('is never limited, and spends nothing of its address', async () => {
    const t = await appWith({ RATE_LIMIT_PER_ADDRESS: '1' });
    const ip = newIp();
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/health', remoteAddress: ip });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['ratelimit-limit'], undefined);
    }
    assert.equal((await signInPage(t, ip)).statusCode, 200);
    assert.equal((await signInPage(t, ip)).statusCode, 429);
    assert.equal((await t.app.inject({ method: 'GET', url: '/health', remoteAddress: ip })).statusCode, 200);
  });
});

describe('settings', () => {
  test('RATE_LIMIT_STORE: in the database on PostgreSQL, in the process on SQLite, unless told', () => {
    const pg = { DATABASE_URL: 'postgres://shiplog@127.0.0.1:5432/shiplog' };
    assert.equal(loadConfig({}).rateLimitStore, 'process');
    assert.equal(loadConfig(pg).rateLimitStore, 'database');
    assert.equal(loadConfig({ ...pg, RATE_LIMIT_STORE: 'process' }).rateLimitStore, 'process');
  });

  test('the defaults: 1,200 a minute per key, 300 per address', async () => {
    const config = loadConfig({});
    assert.deepEqual(
      [config.rateLimitPerKey, config.rateLimitPerAddress, config.rateLimitWindowSeconds],
      [1200, 300, 60],
    );
    const t = await appWith({});
    const ada = await makeUser(t.db);
    const ip = newIp();
    assert.equal((await whoami(t, ada.auth, ip)).headers['ratelimit-limit'], '300');
    assert.deepEqual(limitHeaders(await whoami(t, ada.auth, ip)), { limit: '1200', remaining: '1199', reset: '60' });
  });

  test('RATE_LIMIT_WINDOW_SECONDS sets the window', async () => {
    const t = await appWith({ RATE_LIMIT_PER_ADDRESS: '1', RATE_LIMIT_WINDOW_SECONDS: '600' });
    const ip = newIp();
    assert.equal((await signInPage(t, ip)).headers['ratelimit-reset'], '600');
    mock.timers.tick(100_000);
    assertLimited(
      await t.app.inject({
        method: 'GET',
        url: '/app/sign-in',
        remoteAddress: ip,
        headers: { accept: 'application/json' },
      }),
      1,
      500,
    );
  });

  test('0 turns a limit off', async () => {
    const t = await appWith({ RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '1' });
    const ada = await makeUser(t.db);
    const ip = newIp();
    await whoami(t, ada.auth, ip);
    const last = await passes(50, () => whoami(t, ada.auth, ip));
    assert.equal(last.headers['ratelimit-limit'], undefined);
    assert.equal((await signInPage(t, ip)).statusCode, 429, 'the per-address limit still holds');

    const off = await appWith({ RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' });
    const res = await passes(50, () => signInPage(off, ip));
    assert.equal(res.headers['ratelimit-limit'], undefined);
  });

  test('invalid values are refused with a message naming the setting', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['RATE_LIMIT_PER_KEY', '-1', /RATE_LIMIT_PER_KEY must be a whole number from 0 \(no limit\)/],
      ['RATE_LIMIT_PER_KEY', '1.5', /RATE_LIMIT_PER_KEY must be a whole number/],
      ['RATE_LIMIT_PER_ADDRESS', 'lots', /RATE_LIMIT_PER_ADDRESS must be a whole number from 0/],
      [
        'RATE_LIMIT_PER_ADDRESS',
        '1000000001',
        /RATE_LIMIT_PER_ADDRESS must be a whole number from 0 \(no limit\) to 1000000000/,
      ],
      ['RATE_LIMIT_WINDOW_SECONDS', '0', /RATE_LIMIT_WINDOW_SECONDS must be a whole number from 1 to 86400/],
      ['RATE_LIMIT_WINDOW_SECONDS', '1m', /RATE_LIMIT_WINDOW_SECONDS must be a whole number/],
      ['RATE_LIMIT_STORE', 'redis', /RATE_LIMIT_STORE must be database or process, got "redis"/],
      ['RATE_LIMIT_STORE', 'database', /RATE_LIMIT_STORE=database needs DATABASE_URL/],
    ];
    for (const [name, value, message] of cases) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
        `${name}=${value}`,
      );
    }
  });

  test('the server does not start with an invalid value, and says why', async () => {
    const server = await spawnServer({ dataDir: tempDir(), env: { RATE_LIMIT_PER_KEY: 'unlimited' } });
    assert.equal(await server.exited, 1);
    assert.match(
      server.stderr(),
      /^shiplog: RATE_LIMIT_PER_KEY must be a whole number from 0 \(no limit\) to 1000000000, got "unlimited"\.\n$/,
    );
  });
});
