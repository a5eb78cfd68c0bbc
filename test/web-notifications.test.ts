import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  client,
  makeItem,
  makeApp,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

function postForm(url: string, cookie: string, params: [string, string][], headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(params).toString(),
  });
}

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body.slice(0, 500)}`);
  return match[1];
}

/** The environments offered as boxes to tick, each with whether it is ticked. */
function boxes(body: string): Record<string, boolean> {
  return Object.fromEntries(
    [...body.matchAll(/<input type="checkbox" name="environments" value="([^"]*)"( checked)?>/g)].map((m) => [
      m[1],
      m[2] !== undefined,
    ]),
  );
}

const checkedChoice = (body: string) => /<input type="radio" name="choice" value="(\w+)" checked>/.exec(body)?.[1];

/** A member of a product deployed to production and staging, signed in to the pages. */
async function setUp() {
  const owner = await makeUser(t.db);
  const member = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [member], 'Notified product');
  const item = await makeItem(t.app, owner, product.id);
  for (const environment of ['staging', 'production']) {
    const res = await client(t.app, owner).post(`/api/products/${product.id}/deploys.json`, {
      environment,
      numbers: String(item.number),
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  const cookie = await signInByMail(t, member.email);
  const url = `/app/products/${product.id}/notifications`;
  return { owner, member, product, cookie, url, api: `/api/products/${product.id}/notifications.json` };
}

const choiceOf = async (user: TestUser, api: string) => (await client(t.app, user).get(api)).json();

describe('the notifications page', () => {
  test('reached from the product navigation; all environments by default, the deployed ones offered', async () => {
    const { product, cookie, url } = await setUp();
    const board = await page(`/app/products/${product.id}/board`, cookie);
    assert.ok(board.body.includes(`<a href="${url}">Notifications</a>`), 'the board links the page');
    assert.ok(
      (await page(`/app/products/${product.id}/deploys`, cookie)).body.includes(`<a href="${url}">Notifications</a>`),
    );
    const res = await page(url, cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(res.body.includes(`<a href="${url}" aria-current="page">Notifications</a>`));
    assert.equal(checkedChoice(res.body), 'all');
    assert.deepEqual(boxes(res.body), { production: false, staging: false });
  });

  test('the form sets a list (ticked and typed) and all again, as the API then reads it', async () => {
    const { member, cookie, url, api } = await setUp();
    const csrf = csrfOf(await page(url, cookie));
    let res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'some'],
      ['environments', 'production'],
      ['other', 'eu-west, us-east'],
      ['confirmed', 'eu-west'],
      ['confirmed', 'us-east'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `${url}?saved=1`);
    assert.deepEqual(await choiceOf(member, api), {
      environments: ['eu-west', 'production', 'us-east'],
      comments: true,
    });
    const shown = await page(res.headers.location as string, cookie);
    assert.match(shown.body, /Saved\./);
    assert.equal(checkedChoice(shown.body), 'some');
    assert.deepEqual(boxes(shown.body), { 'eu-west': true, production: true, staging: false, 'us-east': true });

    res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'all'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: true });
    assert.equal(checkedChoice((await page(url, cookie)).body), 'all');
  });

  test('a refused choice shows its reason next to the field, keeps what was typed and changes nothing', async () => {
    const { member, cookie, url, api } = await setUp();
    const csrf = csrfOf(await page(url, cookie));
    assert.equal(
      (
        await postForm(url, cookie, [
          ['csrf', csrf],
          ['choice', 'some'],
          ['environments', 'staging'],
        ])
      ).statusCode,
      303,
    );

    let res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'some'],
      ['other', ' '],
    ]);
    assert.equal(res.statusCode, 400);
    assert.match(res.headers['content-type'] as string, /text\/html/);
    assert.match(
      res.body,
      new RegExp(
        '<span class="field-error" id="error-environments" role="alert">' +
          'environments must be all, or name at least one environment</span>',
      ),
    );
    assert.match(
      res.body,
      new RegExp(
        'id="other-environments" type="text" name="other" value=" " ' +
          'aria-invalid="true" aria-describedby="error-environments" data-known=',
      ),
    );
    assert.equal(checkedChoice(res.body), 'some');

    const long = 'x'.repeat(256);
    res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'some'],
      ['environments', 'production'],
      ['other', `qa, ${long}`],
    ]);
    assert.equal(res.statusCode, 400);
    assert.match(
      res.body,
      /id="error-environments"[^>]*>environments &quot;x{40}\.\.\.&quot; is longer than 255 characters/,
    );
    assert.ok(res.body.includes(`value="qa, ${long}"`), 'the typed names are kept');
    assert.deepEqual(boxes(res.body), { production: true, staging: false }, 'the ticked boxes are kept');
    assert.deepEqual(await choiceOf(member, api), { environments: ['staging'], comments: true });
  });

  test('the comments box turns comment mail off and on, as the API then reads it', async () => {
    const { member, cookie, url, api } = await setUp();
    const shown = await page(url, cookie);
    assert.match(shown.body, /<input type="checkbox" name="comments" value="true" checked> Email me the comments/);
    const csrf = csrfOf(shown);
    const post = (comments: string[]) =>
      postForm(url, cookie, [
        ['csrf', csrf],
        ['choice', 'all'],
        ...comments.map((c): [string, string] => ['comments', c]),
      ]);
    assert.equal((await post(['false'])).statusCode, 303, 'the box left unticked: its hidden companion alone');
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: false });
    assert.match((await page(url, cookie)).body, /<input type="checkbox" name="comments" value="true"> Email me/);
    assert.equal((await post(['false', 'true'])).statusCode, 303, 'ticked');
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: true });
  });

  test('a form without the session token, or from another site, changes nothing', async () => {
    const { member, cookie, url, api } = await setUp();
    const params: [string, string][] = [
      ['choice', 'some'],
      ['environments', 'production'],
    ];
    assert.equal((await postForm(url, cookie, params)).statusCode, 403);
    assert.equal((await postForm(url, cookie, [['csrf', 'x'.repeat(43)], ...params])).statusCode, 403);
    const csrf = csrfOf(await page(url, cookie));
    assert.equal(
      (await postForm(url, cookie, [['csrf', csrf], ...params], { origin: 'https://evil.example' })).statusCode,
      403,
    );
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: true });
  });

  test('members only; environment names are shown as text', async () => {
    const { owner, product, url } = await setUp();
    const item = await makeItem(t.app, owner, product.id);
    await client(t.app, owner).post(`/api/products/${product.id}/deploys.json`, {
      environment: '<b>qa</b>',
      numbers: String(item.number),
    });
    const ownerCookie = await signInByMail(t, owner.email);
    const shown = await page(url, ownerCookie);
    assert.ok(shown.body.includes('value="&lt;b&gt;qa&lt;/b&gt;"'));
    assert.ok(!shown.body.includes('<b>qa</b>'));

    const outsider = await makeUser(t.db);
    const cookie = await signInByMail(t, outsider.email);
    const csrf = csrfOf(await page('/app/products', cookie));
    for (const res of [
      await page(url, cookie),
      await postForm(url, cookie, [
        ['csrf', csrf],
        ['choice', 'all'],
      ]),
    ]) {
      assert.equal(res.statusCode, 403);
      assert.doesNotMatch(res.body, /Notified product/);
    }
    assert.equal((await page('/app/products/99999999/notifications', cookie)).statusCode, 404);
  });

  test('a ticked box (or a typed name) with "All" on chooses only these', async () => {
    const { member, cookie, url, api } = await setUp();
    const csrf = csrfOf(await page(url, cookie));
    let res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'all'],
      ['environments', 'production'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await choiceOf(member, api), { environments: ['production'], comments: true });
    const shown = await page(url, cookie);
    assert.equal(checkedChoice(shown.body), 'some');
    assert.deepEqual(boxes(shown.body), { production: true, staging: false });

    res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'all'],
      ['other', 'staging'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await choiceOf(member, api), { environments: ['staging'], comments: true });
  });

  test('names never deployed to are listed for confirmation before anything is saved', async () => {
    const { member, cookie, url, api } = await setUp();
    const csrf = csrfOf(await page(url, cookie));
    const sent: [string, string][] = [
      ['csrf', csrf],
      ['choice', 'some'],
      ['environments', 'production'],
      ['other', 'stagin, Production, canary'],
      ['comments', 'false'],
    ];
    let res = await postForm(url, cookie, sent);
    assert.equal(res.statusCode, 200, res.body);
    const asked = [...res.body.matchAll(/<input type="checkbox" name="confirmed" value="([^"]*)">/g)].map((m) => m[1]);
    assert.deepEqual(asked, ['stagin', 'Production', 'canary']);
    assert.match(res.body, /id="confirm-environments" role="alert"/);
    assert.match(res.body, /nothing was saved/);
    assert.ok(res.body.includes('value="stagin, Production, canary"'), 'the typed names are kept');
    assert.deepEqual(boxes(res.body).production, true, 'the ticked boxes are kept');
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: true }, 'nothing saved');

    // Only the names confirmed are taken; one left unticked asks again.
    res = await postForm(url, cookie, [...sent, ['confirmed', 'canary']]);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      [...res.body.matchAll(/name="confirmed" value="([^"]*)"/g)].map((m) => m[1]),
      ['stagin', 'Production'],
    );
    assert.deepEqual(await choiceOf(member, api), { environments: 'all', comments: true });

    res = await postForm(url, cookie, [
      ...sent.filter(([k]) => k !== 'other'),
      ['other', 'staging, canary'],
      ['confirmed', 'canary'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await choiceOf(member, api), {
      environments: ['canary', 'production', 'staging'],
      comments: false,
    });

    // A name chosen before is not asked about again.
    res = await postForm(url, cookie, [
      ['csrf', csrf],
      ['choice', 'some'],
      ['environments', 'canary'],
    ]);
    assert.equal(res.statusCode, 303, res.body);
    // The page's script knows the deployed names, to flag a typed one as it is typed.
    assert.match((await page(url, cookie)).body, /data-known="\[&quot;production&quot;,&quot;staging&quot;\]"/);
  });
});
