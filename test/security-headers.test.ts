import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';

let t: TestContext;
let owner: TestUser;
let productId: number;
let cookie: string;
before(async () => {
  // Limits on, so that a refusal of the limiter is among the answers.
  t = await makeApp({ env: { RATE_LIMIT_PER_ADDRESS: '30' } });
  owner = await makeUser(t.db);
  productId = (await makeProduct(t.db, owner)).id;
  await makeItem(t.app, owner, productId);
  cookie = await signInByMail(t, owner.email);
});
after(() => t.close());

type Headers = Record<string, unknown>;

/** What every answer carries, whatever it is. */
function assertHardened(headers: Headers, label: string): void {
  assert.equal(headers['x-content-type-options'], 'nosniff', label);
  assert.equal(headers['x-frame-options'], 'DENY', label);
}

/** An answer that is not a page: nothing may load, nothing may frame it, no Referer leaves. */
function assertApiHeaders(headers: Headers, label: string): void {
  assertHardened(headers, label);
  assert.match(String(headers['content-security-policy']), /^default-src 'none'; ?frame-ancestors 'none'$/, label);
  assert.equal(headers['referrer-policy'], 'no-referrer', label);
}

/** A page keeps its own policy (web/session.ts), which lets it load Shiplog's stylesheet and script. */
function assertPageHeaders(headers: Headers, label: string): void {
  assertHardened(headers, label);
  assert.match(
    String(headers['content-security-policy']),
    /^default-src 'self'; script-src 'self';.* frame-ancestors 'none'$/,
    label,
  );
  assert.equal(headers['referrer-policy'], 'same-origin', label);
}

const get = (
  url: string,
  headers: Record<string, string> = {},
  remoteAddress?: string,
): Promise<LightMyRequestResponse> => t.app.inject({ method: 'GET', url, headers, remoteAddress });

describe('hardening headers', () => {
  test('on every kind of answer of the API and the links', async () => {
    const api = client(t.app, owner);
    const answers: Array<[string, LightMyRequestResponse, number]> = [
      ['a JSON 200', await api.get('/api/user/whoami.json'), 200],
      ['a 400', await api.get(`/api/products/${productId}/items.json`, { status: 'nope' }), 400],
      ['a 403 without credentials', await get('/api/products.json'), 403],
      ['a 404 of an unknown route', await get('/no/such/thing'), 404],
      ['a 404 under the API', await api.get('/api/nothing.json'), 404],
      ['the short_url redirect', await get(`/i/${productId}/1/`), 302],
      ['/health', await get('/health'), 200],
      ['an unsubscribe link that was not made here', await get('/unsubscribe/not.made-here'), 404],
      ['an unreadable URL', await get('/%zz'), 400],
    ];
    for (const [label, res, status] of answers) {
      assert.equal(res.statusCode, status, `${label}: ${res.body}`);
      assertApiHeaders(res.headers, label);
    }
  });

  test("the pages of mailed links allow the pages' stylesheet and their own forms, nothing else", async () => {
    const res = await get('/unsubscribe/not.made-here', { accept: 'text/html' });
    assert.equal(res.statusCode, 404);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assertHardened(res.headers, 'link page');
    assert.equal(
      res.headers['content-security-policy'],
      "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'",
    );
    // The URL holds the link's token: no Referer carries it anywhere.
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
  });

  test('on every kind of page: pages, assets, redirects, errors', async () => {
    const answers: Array<[string, LightMyRequestResponse, number]> = [
      ['the sign-in page', await get('/app/sign-in'), 200],
      ['a signed-in page', await get('/app/products', { cookie }), 200],
      ['the stylesheet', await get('/app/style.css'), 200],
      ['the board script', await get('/app/board.js'), 200],
      ['a redirect to sign in', await get('/app/products'), 303],
      ['a page of an unknown product', await get('/app/products/999999/board', { cookie }), 404],
      ['an unknown page', await get('/app/nothing'), 404],
      ['a refused form', await t.app.inject({ method: 'POST', url: '/app/sign-out', headers: { cookie } }), 403],
    ];
    for (const [label, res, status] of answers) {
      assert.equal(res.statusCode, status, `${label}: ${res.body.slice(0, 200)}`);
      assertPageHeaders(res.headers, label);
    }
  });

  test('on a refusal of the rate limiter', async () => {
    let res: LightMyRequestResponse | undefined;
    for (let i = 0; i < 31; i++) res = await get('/api/products.json', {}, '10.77.0.1');
    assert.equal(res!.statusCode, 429);
    assertApiHeaders(res!.headers, '429');
    for (let i = 0; i < 31; i++) res = await get('/app/sign-in', {}, '10.77.0.2');
    assert.equal(res!.statusCode, 429);
    assertPageHeaders(res!.headers, '429 page');
  });

  test('on answers written before the app sees the request', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as net.AddressInfo;
    const raw = async (request: string): Promise<Headers> => {
      const socket = net.connect({ port, host: '127.0.0.1' });
      let data = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (data += chunk));
      socket.on('error', () => {});
      socket.write(request);
      await once(socket, 'close');
      const head = data.slice(0, data.indexOf('\r\n\r\n')).split('\r\n');
      return Object.fromEntries(
        head.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
    };
    const tooLarge = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertApiHeaders(tooLarge, '431');
    const expectation = await raw(
      [
        'POST /api/products.json HTTP/1.1',
        'Host: x',
        'Expect: something',
        'Content-Length: 0',
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
    );
    assertApiHeaders(expectation, '417');
  });
});
