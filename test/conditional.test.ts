import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

// Conditional reads: items and lists carry an ETag and say what a client may keep; If-None-Match
// naming what the answer would carry is a 304 without a body.
let t: TestContext;
let ada: TestUser;
let bob: TestUser;
let productId: number;

before(async () => {
  t = await makeApp();
  ada = await makeUser(t.db, { firstName: 'Ada' });
  bob = await makeUser(t.db, { firstName: 'Bob' });
  productId = (await makeProduct(t.db, ada, [bob])).id;
});
after(() => t.close());

const get = (user: TestUser, url: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url, headers: { authorization: user.auth, ...headers } });

function assertNotModified(res: LightMyRequestResponse, etag: string) {
  assert.equal(res.statusCode, 304, res.body);
  assert.equal(res.body, '');
  assert.equal(res.headers.etag, etag);
}

test("an item's ETag is its version: 304 while it holds, the item again once it changed", async () => {
  const item = await makeItem(t.app, ada, productId, { type: 'task', title: 'Cache me' });
  const url = `/api/products/${productId}/items/${item.number}.json`;
  const first = await get(ada, url);
  assert.equal(first.statusCode, 200);
  assert.equal(first.headers['cache-control'], 'private, no-cache');
  const etag = String(first.headers.etag);
  assert.match(etag, /^"\d+-\d+"$/);
  assertNotModified(await get(ada, url, { 'if-none-match': etag }), etag);
  // A weak form, a list, and `*` match too; another tag and a malformed header do not.
  assertNotModified(await get(ada, url, { 'if-none-match': `"0-0", W/${etag}` }), etag);
  assertNotModified(await get(ada, url, { 'if-none-match': '*' }), etag);
  assert.equal((await get(ada, url, { 'if-none-match': '"0-0"' })).statusCode, 200);
  assert.equal((await get(ada, url, { 'if-none-match': 'not a tag' })).statusCode, 200);
  // The same tag If-Match takes: a change made with it succeeds, and moves it.
  const changed = await client(t.app, ada).post(url, { title: 'Cached no more' }, { 'if-match': etag });
  assert.equal(changed.statusCode, 200);
  assert.notEqual(changed.headers.etag, etag);
  const again = await get(ada, url, { 'if-none-match': etag });
  assert.equal(again.statusCode, 200);
  assert.equal(again.json().title, 'Cached no more');
  assert.equal(again.headers.etag, changed.headers.etag);
  // A missing item is still a 404, whatever the client holds.
  assert.equal(
    (await get(ada, `/api/products/${productId}/items/9999.json`, { 'if-none-match': '*' })).statusCode,
    404,
  );
});

test("a list's ETag is that of its page: unchanged by changes elsewhere, moved by its items' changes", async () => {
  const listed = await makeItem(t.app, ada, productId, { type: 'defect', title: 'Listed', tags: 'etag' });
  const other = await makeItem(t.app, ada, productId, { type: 'defect', title: 'Elsewhere' });
  const url = `/api/products/${productId}/items.json?tags=etag`;
  const first = await get(ada, url);
  assert.equal(first.statusCode, 200);
  assert.equal(first.headers['cache-control'], 'private, no-cache');
  const etag = String(first.headers.etag);
  assert.match(etag, /^"[\w-]+"$/);
  assertNotModified(await get(ada, url, { 'if-none-match': etag }), etag);
  // Another item changes: the product's kept answers are gone, but this page is the same bytes.
  const elsewhere = `/api/products/${productId}/items/${other.number}.json`;
  assert.equal((await client(t.app, ada).post(elsewhere, { title: 'Still elsewhere' })).statusCode, 200);
  assertNotModified(await get(ada, url, { 'if-none-match': etag }), etag);
  // An item of the page changes: the page is sent again, with its new tag.
  const mine = `/api/products/${productId}/items/${listed.number}.json`;
  assert.equal((await client(t.app, ada).post(mine, { title: 'Listed, renamed' })).statusCode, 200);
  const changed = await get(ada, url, { 'if-none-match': etag });
  assert.equal(changed.statusCode, 200);
  assert.equal(changed.json()[0].title, 'Listed, renamed');
  assert.notEqual(changed.headers.etag, etag);
  // Each caller sees their own page (their own profile in it): the tags differ.
  const bobs = await get(bob, url);
  assert.equal(bobs.statusCode, 200);
  assert.notEqual(bobs.headers.etag, changed.headers.etag);
  assert.equal((await get(bob, url, { 'if-none-match': String(changed.headers.etag) })).statusCode, 200);
});

test("a list's ETag covers its total: a new item past the page changes it", async () => {
  const url = `/api/products/${productId}/items.json?tags=paged&limit=1&order_by=oldest`;
  await makeItem(t.app, ada, productId, { type: 'task', title: 'First', tags: 'paged' });
  const first = await get(ada, url);
  assert.equal(first.headers['x-sprintly-item-count'], '1');
  await makeItem(t.app, ada, productId, { type: 'task', title: 'Second', tags: 'paged' });
  const second = await get(ada, url, { 'if-none-match': String(first.headers.etag) });
  assert.equal(second.statusCode, 200);
  assert.equal(second.body, first.body);
  assert.equal(second.headers['x-sprintly-item-count'], '2');
});

test("a story's sub-items are a list with an ETag too", async () => {
  const story = await makeItem(t.app, ada, productId, { type: 'story', who: 'a user', what: 'tags', why: 'caching' });
  await makeItem(t.app, ada, productId, { type: 'task', title: 'Sub', parent: String(story.number) });
  const url = `/api/products/${productId}/items/${story.number}/children.json`;
  const first = await get(ada, url);
  assert.equal(first.statusCode, 200);
  assert.equal(first.json().length, 1);
  assertNotModified(await get(ada, url, { 'if-none-match': String(first.headers.etag) }), String(first.headers.etag));
});

test('a page of deploys has an ETag: 304 while it holds, the page again after a deploy', async () => {
  const item = await makeItem(t.app, ada, productId, { type: 'task', title: 'Shipped' });
  const deploy = (version: string) =>
    client(t.app, ada).post(`/api/products/${productId}/deploys.json`, {
      environment: 'etag-env',
      numbers: String(item.number),
      version,
    });
  assert.equal((await deploy('1.0')).statusCode, 200);
  const url = `/api/products/${productId}/deploys.json?environment=etag-env&order_by=newest`;
  const first = await get(ada, url);
  assert.equal(first.statusCode, 200);
  const etag = String(first.headers.etag);
  assertNotModified(await get(ada, url, { 'if-none-match': etag }), etag);
  // A change of the item leaves the page as it was (it shows the item as deployed).
  const itemUrl = `/api/products/${productId}/items/${item.number}.json`;
  assert.equal((await client(t.app, ada).post(itemUrl, { title: 'Renamed since' })).statusCode, 200);
  assertNotModified(await get(ada, url, { 'if-none-match': etag }), etag);
  assert.equal((await deploy('1.1')).statusCode, 200);
  const after = await get(ada, url, { 'if-none-match': etag });
  assert.equal(after.statusCode, 200);
  assert.deepEqual(
    after.json().map((d: { version: string }) => d.version),
    ['1.1', '1.0'],
  );
  assert.notEqual(after.headers.etag, etag);
});
