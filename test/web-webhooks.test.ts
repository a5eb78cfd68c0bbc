import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { client, makeApp, makeProduct, makeUser, signInByMail, type TestContext } from './helpers.js';
import { Receiver } from './webhook-receiver.js';

let t: TestContext;
let receiver: Receiver;
before(async () => {
  t = await makeApp({ env: { WEBHOOKS_ALLOW_PRIVATE: '1' } });
  receiver = await Receiver.start();
});
after(async () => {
  await t.close();
  await receiver.stop();
});

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

function postForm(url: string, cookie: string, params: [string, string][]) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(params).toString(),
  });
}

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body.slice(0, 500)}`);
  return match[1];
}

/** An admin and a member of a product, both signed in. */
async function setUp() {
  const admin = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const member = await makeUser(t.db);
  const product = await makeProduct(t.db, admin, [member], 'Hooked product');
  return {
    admin,
    product,
    adminCookie: await signInByMail(t, admin.email),
    memberCookie: await signInByMail(t, member.email),
    url: `/app/products/${product.id}/webhooks`,
    api: `/api/products/${product.id}`,
  };
}

describe('the webhooks page', () => {
  test('linked from the product navigation for admins only; members get 403', async () => {
    const { product, adminCookie, memberCookie, url } = await setUp();
    assert.ok(
      (await page(`/app/products/${product.id}/board`, adminCookie)).body.includes(`<a href="${url}">Webhooks</a>`),
    );
    assert.equal((await page(`/app/products/${product.id}/board`, memberCookie)).body.includes('Webhooks</a>'), false);
    const mine = await page(url, adminCookie);
    assert.equal(mine.statusCode, 200, mine.body);
    assert.ok(mine.body.includes(`<a href="${url}" aria-current="page">Webhooks</a>`));
    assert.match(mine.body, /None yet\./);
    const theirs = await page(url, memberCookie);
    assert.equal(theirs.statusCode, 403);
    assert.match(theirs.body, /Only admins of this product can do this\./);
    const csrf = csrfOf(await page(`/app/products/${product.id}/board`, memberCookie));
    assert.equal(
      (
        await postForm(url, memberCookie, [
          ['csrf', csrf],
          ['url', receiver.url('/x')],
          ['events', 'item.created'],
        ])
      ).statusCode,
      403,
    );
    const signedOut = await t.app.inject({ method: 'GET', url });
    assert.equal(signedOut.statusCode, 303);
  });

  test('adding one shows its secret once; refused fields show their reasons next to them', async () => {
    const { admin, adminCookie, url, api } = await setUp();
    const csrf = csrfOf(await page(url, adminCookie));
    const refused = await postForm(url, adminCookie, [
      ['csrf', csrf],
      ['url', 'ftp://example.com'],
      ['secret', 'short'],
    ]);
    assert.equal(refused.statusCode, 400);
    assert.match(
      refused.body,
      new RegExp(
        '<span class="field-error" id="error-url" role="alert">' +
          'url must be an absolute http:// or https:// URL</span>',
      ),
    );
    assert.match(refused.body, /id="error-events" role="alert">events is required/);
    assert.match(refused.body, /id="error-secret" role="alert">secret must be 16 to 200/);
    assert.ok(refused.body.includes('value="ftp://example.com"'), 'what was typed stays');
    assert.deepEqual((await client(t.app, admin).get(`${api}/webhooks.json`)).json(), []);

    const added = await postForm(url, adminCookie, [
      ['csrf', csrf],
      ['url', receiver.url('/page')],
      ['events', 'item.created'],
      ['events', 'deploy.created'],
      ['format', 'slack'],
    ]);
    assert.equal(added.statusCode, 200, added.body);
    const secret = /<code class="key">(whsec_[A-Za-z0-9_-]+)<\/code>/.exec(added.body)?.[1];
    assert.ok(secret, 'the secret is shown');
    const [hook] = (await client(t.app, admin).get(`${api}/webhooks.json`)).json();
    assert.deepEqual(
      [hook.url, hook.events, hook.format],
      [receiver.url('/page'), ['item.created', 'deploy.created'], 'slack'],
    );
    const later = await page(url, adminCookie);
    assert.equal(later.body.includes(secret), false, 'shown only once');
    assert.ok(later.body.includes(receiver.url('/page')));
  });

  test('a disabled webhook shows why and can be enabled; deliveries are listed; delete removes it', async () => {
    const { admin, adminCookie, url, api } = await setUp();
    receiver.answer('/listed', () => ({ status: 500, body: 'receiver broke' }));
    const hook = (
      await client(t.app, admin).post(`${api}/webhooks.json`, { url: receiver.url('/listed'), events: 'item.created' })
    ).json();
    await client(t.app, admin).post(`${api}/items.json`, { type: 'task', title: 'Shown' });
    await t.app.webhooks.deliverDue();
    await client(t.app, admin).post(`${api}/webhooks/${hook.id}.json`, { enabled: 'false' });

    const list = await page(url, adminCookie);
    assert.match(list.body, /<strong>Disabled<\/strong>/);
    assert.match(list.body, /Disabled by Ada Lovelace\./);
    const deliveries = await page(`${url}/${hook.id}`, adminCookie);
    assert.equal(deliveries.statusCode, 200, deliveries.body);
    assert.match(deliveries.body, /1 delivery, newest first\./);
    assert.match(deliveries.body, /<td>item\.created<\/td>/);
    assert.match(deliveries.body, /HTTP 500: receiver broke/);
    assert.equal((await page(`${url}/999999`, adminCookie)).statusCode, 404);

    const csrf = csrfOf(list);
    const enabled = await postForm(`${url}/${hook.id}/enable`, adminCookie, [['csrf', csrf]]);
    assert.equal(enabled.statusCode, 303);
    assert.equal((await client(t.app, admin).get(`${api}/webhooks/${hook.id}.json`)).json().enabled, true);
    assert.equal(
      (await postForm(`${url}/${hook.id}/delete`, adminCookie, [['csrf', 'wrong']])).statusCode,
      403,
      'the form token is checked',
    );
    // The first post asks, naming the webhook; the webhook is still there.
    const asked = await postForm(`${url}/${hook.id}/delete`, adminCookie, [['csrf', csrf]]);
    assert.equal(asked.statusCode, 200);
    assert.match(asked.body, /Delete the webhook to /);
    assert.match(asked.body, /<input type="hidden" name="confirm" value="yes">/);
    assert.equal((await client(t.app, admin).get(`${api}/webhooks.json`)).json().length, 1);
    const deleted = await postForm(`${url}/${hook.id}/delete`, adminCookie, [
      ['csrf', csrf],
      ['confirm', 'yes'],
    ]);
    assert.equal(deleted.statusCode, 303);
    assert.equal(deleted.headers.location, `${url}?done=deleted`);
    assert.match((await page(`${url}?done=deleted`, adminCookie)).body, /The webhook is deleted\./);
    assert.deepEqual((await client(t.app, admin).get(`${api}/webhooks.json`)).json(), []);
  });
});
