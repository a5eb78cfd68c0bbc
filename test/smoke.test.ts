import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

test('a member creates and fetches an item', async () => {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner);
  const item = await makeItem(t.app, owner, product.id, { title: 'First' });
  assert.equal(item.number, 1);
  const res = await client(t.app, owner).get(`/api/products/${product.id}/items/1.json`);
  assert.equal(res.statusCode, 200);
  assert.equal(res.json().title, 'First');
});
