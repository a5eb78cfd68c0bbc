import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, makeApp, makeProduct, makeUser, signInByMail, type TestContext } from './helpers.js';

/*
 * What nobody expected (here: the Markdown renderer failing outright) is one 500 for the API, the
 * pages and the board's script alike: logged, and told to no one.
 */

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const SECRET = 'connection string postgres://admin:hunter2@db';
const LOGGED = 'Something went wrong on our side; it has been logged.';

describe('an unknown error', () => {
  test('is a 500 that says nothing of itself: JSON to the API and the board script, a page to a browser', async () => {
    const ada = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
    const product = await makeProduct(t.db, ada);
    const cookie = await signInByMail(t, ada.email);
    const board = await t.app.inject({ method: 'GET', url: `/app/products/${product.id}/board`, headers: { cookie } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(board.body)?.[1];
    assert.ok(csrf, 'no form token on the board');

    const renderer = t.app.markdown;
    const render = renderer.render;
    renderer.render = async () => {
      throw new Error(SECRET);
    };
    try {
      const api = await client(t.app, ada).post(`/api/products/${product.id}/items.json`, {
        type: 'task',
        title: 'Broken',
        description: 'text',
      });
      assert.equal(api.statusCode, 500);
      assert.equal(api.body, JSON.stringify({ code: 500, message: LOGGED }));

      const form = new URLSearchParams({ csrf, type: 'task', title: 'Broken', description: 'text' }).toString();
      const post = (accept: string) =>
        t.app.inject({
          method: 'POST',
          url: `/app/products/${product.id}/items`,
          headers: { cookie, accept, 'content-type': 'application/x-www-form-urlencoded' },
          payload: form,
        });
      const browser = await post('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
      assert.equal(browser.statusCode, 500);
      assert.match(String(browser.headers['content-type']), /^text\/html/);
      assert.match(browser.body, /<title>Something went wrong/);
      assert.ok(browser.body.includes(LOGGED));

      const script = await post('application/json');
      assert.equal(script.statusCode, 500);
      assert.equal(script.body, JSON.stringify({ code: 500, message: LOGGED }));

      for (const res of [api, browser, script]) assert.ok(!res.body.includes('hunter2'), res.body);
    } finally {
      renderer.render = render;
    }
    const items = await client(t.app, ada).get(`/api/products/${product.id}/items.json`);
    assert.deepEqual(items.json(), [], 'nothing was written');
  });
});

describe('Accept', () => {
  test('is read alike by pages and links: the type ranked higher by q and the most specific range wins', async () => {
    const ada = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
    const product = await makeProduct(t.db, ada);
    const cookie = await signInByMail(t, ada.email);
    const pageError = (accept?: string) =>
      t.app.inject({
        method: 'GET',
        url: `/app/products/${product.id}/items/999999`,
        headers: { cookie, ...(accept === undefined ? {} : { accept }) },
      });
    const link = (accept?: string) =>
      t.app.inject({ method: 'GET', url: '/invitations/not-a-link', headers: accept === undefined ? {} : { accept } });
    const typeOf = (res: { statusCode: number; headers: Record<string, unknown> }) => {
      assert.equal(res.statusCode, 404);
      return String(res.headers['content-type']).split(';')[0];
    };
    const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    // A page is HTML unless JSON is asked for above it; a link is JSON unless HTML is.
    for (const [accept, page, linked] of [
      [undefined, 'text/html', 'application/json'],
      ['*/*', 'text/html', 'application/json'],
      [BROWSER, 'text/html', 'text/html'],
      ['application/json', 'application/json', 'application/json'],
      ['text/html', 'text/html', 'text/html'],
      ['text/html;q=0.5, application/json', 'application/json', 'application/json'],
      ['application/json;q=0.5, text/html', 'text/html', 'text/html'],
      ['text/*, application/json;q=0.9', 'text/html', 'text/html'],
    ] as const) {
      assert.equal(typeOf(await pageError(accept)), page, `a page for ${accept}`);
      assert.equal(typeOf(await link(accept)), linked, `a link for ${accept}`);
    }
  });
});
