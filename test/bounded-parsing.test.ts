import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  assertError,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';

// Bodies built to cost the server more than they are worth: parameters by the hundred thousand,
// megabytes sent where a few fields are expected, and more requests than the limit allows. Each is
// refused in the interface's error shape (or as a page, under /app) before it is parsed, while the
// largest legitimate bodies of the same routes are still read.

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';
/** A megabyte of 110,000 name=value pairs, as a form and as JSON keys. */
const MANY_PAIRS = Array.from({ length: 110_000 }, (_, i) => `a${i}=1`).join('&');
const MANY_KEYS = `{${Array.from({ length: 110_000 }, (_, i) => `"${i.toString(36)}":1`).join(',')}}`;

let t: TestContext;
let owner: TestUser;
let productId: number;
let items: string;

const post = (
  url: string,
  type: string,
  payload: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> =>
  t.app.inject({ method: 'POST', url, headers: { 'content-type': type, ...headers }, payload });
const asOwner = (url: string, type: string, payload: string) => post(url, type, payload, { authorization: owner.auth });

before(async () => {
  t = await makeApp();
  owner = await makeUser(t.db, { email: 'owner@example.com' });
  productId = (await makeProduct(t.db, owner)).id;
  items = `/api/products/${productId}/items.json`;
});
after(() => t.close());

describe('parameters are counted before they are parsed', () => {
  test('a form of 110,000 pairs is 400, saying why', async () => {
    assert.ok(MANY_PAIRS.length < 1024 * 1024);
    assertError(await asOwner(items, FORM, `type=task&title=Hostile&${MANY_PAIRS}`), 400, {
      message: /more than 1100 name=value pairs/,
    });
  });

  test('a JSON body of 110,000 keys is 400, saying why, and so are keys spread over nested objects', async () => {
    assert.ok(MANY_KEYS.length < 1024 * 1024);
    assertError(await asOwner(items, JSON_TYPE, MANY_KEYS), 400, { message: /more than 1000 keys/ });
    const nested = JSON.stringify({
      type: 'task',
      title: 'Nested',
      tags: Array.from({ length: 600 }, (_, i) => ({ a: i, b: i })),
    });
    assertError(await asOwner(items, JSON_TYPE, nested), 400, { message: /more than 1000 keys/ });
  });

  test('colons and quotes inside strings are no keys: a long description full of them is read', async () => {
    const description = 'key: "value", \\"quoted\\": {a: 1}\n'.repeat(1500);
    const res = await asOwner(items, JSON_TYPE, JSON.stringify({ type: 'task', title: 'Colons: "many"', description }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().description, description);
  });

  test('a deploy naming 1,000 items one pair each is still read', async () => {
    const numbers: number[] = [];
    for (let i = 0; i < 3; i++) numbers.push((await makeItem(t.app, owner, productId)).number);
    const pairs = Array.from({ length: 1000 }, (_, i) => `numbers=${numbers[i % numbers.length]}`).join('&');
    const res = await asOwner(`/api/products/${productId}/deploys.json`, FORM, `environment=staging&${pairs}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      res
        .json()
        .items.map((i: { number: number }) => i.number)
        .sort(),
      [...numbers].sort(),
    );
  });
});

describe('forms that carry a few fields have small body limits', () => {
  const megabyte = `email=someone%40example.com&${MANY_PAIRS}`;

  test('sign-in, sign-out and the other page forms: 413 as a page, before any session is looked at', async () => {
    for (const url of [
      '/app/sign-in',
      '/app/sign-in/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      '/app/sign-out',
      '/app/settings/api-key',
    ]) {
      const res = await post(url, FORM, megabyte);
      assert.equal(res.statusCode, 413, `${url}: ${res.body.slice(0, 200)}`);
      assert.match(res.headers['content-type'] as string, /^text\/html/, url);
      assert.match(res.body, /The form is larger than 16 KiB/, url);
    }
  });

  test('invitation and unsubscribe links: 413 in the error shape', async () => {
    for (const url of [
      '/invitations/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbb',
      '/unsubscribe/aaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbb',
    ]) {
      assertError(await post(url, FORM, megabyte, { accept: 'application/json' }), 413, {
        message: /larger than 16 KiB/,
        label: url,
      });
    }
    assertError(await asOwner(`/api/products/${productId}/people.json`, FORM, megabyte), 413, {
      message: /larger than 16 KiB/,
      label: 'people.json',
    });
  });

  test('the API keeps its 1 MiB', async () => {
    assertError(await asOwner(items, FORM, `type=task&title=${'a'.repeat(1024 * 1024)}`), 413, {
      message: /larger than 1 MiB/,
    });
  });

  test('an item form with a description of 64 KiB, every byte of it percent-encoded, is read', async () => {
    const cookie = await signInByMail(t, owner.email);
    const base = `/app/products/${productId}`;
    const board = await t.app.inject({ method: 'GET', url: `${base}/board`, headers: { cookie } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(board.body)?.[1];
    assert.ok(csrf, 'a form token on the board');
    // 16,383 characters of four bytes each and three of one: the 65,535 bytes of UTF-8 a
    // description may hold, 192 KiB once percent-encoded.
    const description = `${'\u{1F680}'.repeat(16_383)}abc`;
    const fields = (title: string) =>
      new URLSearchParams({
        csrf,
        type: 'task',
        title,
        description,
        who: 'é'.repeat(255),
        what: 'é'.repeat(255),
        why: 'é'.repeat(255),
      }).toString();
    assert.ok(fields('x').length > 192 * 1024);
    const created = await t.app.inject({
      method: 'POST',
      url: `${base}/items`,
      headers: { cookie, 'content-type': FORM },
      payload: fields('Rocket'),
    });
    assert.equal(created.statusCode, 303, created.body.slice(0, 300));
    const number = Number(/\/items\/(\d+)$/.exec(created.headers.location as string)?.[1]);
    const edited = await t.app.inject({
      method: 'POST',
      url: `${base}/items/${number}`,
      headers: { cookie, 'content-type': FORM },
      payload: fields('Rocket, edited'),
    });
    assert.equal(edited.statusCode, 303, edited.body.slice(0, 300));
    const item = (await client(t.app, owner).get(`/api/products/${productId}/items/${number}.json`)).json();
    assert.equal(item.title, 'Rocket, edited');
    assert.equal(item.description, description);
  });

  test('the edit form of an item whose description is all line breaks, sent back as opened, is read', async () => {
    const cookie = await signInByMail(t, owner.email);
    const base = `/app/products/${productId}`;
    const description = `top${'\n'.repeat(65_532)}`;
    const made = (
      await client(t.app, owner).post(`/api/products/${productId}/items.json`, {
        type: 'task',
        title: 'Spaced out',
        description,
      })
    ).json();
    const page = (await t.app.inject({ method: 'GET', url: `${base}/items/${made.number}`, headers: { cookie } })).body;
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    const version = /name="version" value="([^"]+)"/.exec(page)?.[1];
    assert.ok(csrf && version);
    // As a browser sends it: every line break as CRLF, in the field and in the value as shown.
    const crlf = description.replace(/\n/g, '\r\n');
    const payload = new URLSearchParams({
      csrf,
      version,
      title: 'Spaced out, renamed',
      seen_title: 'Spaced out',
      description: crlf,
      seen_description: crlf,
    }).toString();
    assert.ok(payload.length > 768 * 1024);
    const edited = await t.app.inject({
      method: 'POST',
      url: `${base}/items/${made.number}`,
      headers: { cookie, 'content-type': FORM },
      payload,
    });
    assert.equal(edited.statusCode, 303, edited.body.slice(0, 300));
    const item = (await client(t.app, owner).get(`/api/products/${productId}/items/${made.number}.json`)).json();
    assert.deepEqual([item.title, item.description], ['Spaced out, renamed', description]);
  });
});

describe('the rate limit comes before the body', () => {
  let limited: TestContext;
  before(async () => {
    limited = await makeApp({ env: { RATE_LIMIT_PER_ADDRESS: '2', RATE_LIMIT_PER_KEY: '0' } });
  });
  after(() => limited.close());

  test('over the limit, a body that could not be read, or that is too large, is answered 429', async () => {
    const send = (payload: string) =>
      limited.app.inject({
        method: 'POST',
        url: '/invitations/x.y',
        remoteAddress: '192.0.2.7',
        headers: { 'content-type': JSON_TYPE, accept: 'application/json' },
        payload,
      });
    for (let i = 0; i < 2; i++) assertError(await send('{"first_name": '), 400, { message: /could not be read/ });
    assertError(await send('{"first_name": '), 429, { message: /Too many requests/ });
    assertError(await send(MANY_KEYS), 429, { message: /Too many requests/ });
  });
});
