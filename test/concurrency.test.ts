import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { openDatabase, type Db } from '../src/db/connection.js';
import type { FastifyInstance } from 'fastify';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

// Two app instances on one database file: two SQLite connections that really contend for it,
// as the server and the command line (or two processes) do.
let t: TestContext;
let second: { app: FastifyInstance; db: Db };
before(async () => {
  t = await makeApp({ file: true });
  const db = await openDatabase(t.dbOptions);
  second = { db, app: await buildApp({ config: t.config, db, logger: false }) };
});
after(async () => {
  await second.app.close();
  await second.db.destroy();
  await t.close();
});

test('50 parallel creates through two instances give 50 distinct numbers and positions', async () => {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner);
  const apps = [t.app, second.app];
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      client(apps[i % 2], owner).post(`/api/products/${product.id}/items.json`, { type: 'task', title: `Item ${i}` }),
    ),
  );
  for (const r of results) assert.equal(r.statusCode, 200, r.body);
  const numbers = results.map((r) => r.json().number).sort((a, b) => a - b);
  assert.deepEqual(numbers, Array.from({ length: 50 }, (_, i) => i + 1));
  const sorts = new Set(results.map((r) => r.json().sort));
  assert.equal(sorts.size, 50);
});

test('parallel resorts and status changes through two instances keep positions distinct', async () => {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner);
  for (let i = 0; i < 10; i++) await makeItem(t.app, owner, product.id);
  const base = `/api/products/${product.id}`;
  const ops = Array.from({ length: 60 }, (_, i) => {
    const api = client([t.app, second.app][i % 2], owner);
    const n = (i % 9) + 2;
    return i % 5 === 0
      ? api.post(`${base}/items/${n}.json`, { status: i % 10 === 0 ? 'in-progress' : 'backlog' })
      : api.post(`${base}/items/${n}/resort.json`, { before: 1 });
  });
  const results = await Promise.all(ops);
  for (const r of results) assert.ok([200, 400].includes(r.statusCode), r.body); // 400: the reference moved to another status
  const rows = await t.db.selectFrom('items').select(['status', 'sort']).where('product_id', '=', product.id).execute();
  const keys = rows.map((r) => `${r.status}:${r.sort}`);
  assert.equal(new Set(keys).size, keys.length);
});

test('parallel deploys: exactly one message per follower per deploy', async () => {
  const deployer = await makeUser(t.db);
  const followers = await Promise.all([makeUser(t.db), makeUser(t.db), makeUser(t.db)]);
  const product = await makeProduct(t.db, deployer, followers);
  for (const f of followers) await makeItem(t.app, f, product.id);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      client([t.app, second.app][i % 2], deployer).post(`/api/products/${product.id}/deploys.json`, { environment: 'prod', numbers: '1,2,3' }),
    ),
  );
  for (const r of results) assert.equal(r.statusCode, 200, r.body);
  const rows = await t.db.selectFrom('outbox').select(['deploy_id', 'user_id']).execute();
  const mine = rows.filter((r) => results.some((res) => res.json().id === r.deploy_id));
  assert.equal(mine.length, 20 * 3);
  assert.equal(new Set(mine.map((r) => `${r.deploy_id}:${r.user_id}`)).size, 60);
});

test('parallel repeats of one Idempotency-Key record one deploy', async () => {
  const deployer = await makeUser(t.db);
  const follower = await makeUser(t.db);
  const product = await makeProduct(t.db, deployer, [follower]);
  await makeItem(t.app, follower, product.id);
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      client([t.app, second.app][i % 2], deployer).post(
        `/api/products/${product.id}/deploys.json`,
        { environment: 'prod', numbers: '1' },
        { 'idempotency-key': 'same-key' },
      ),
    ),
  );
  for (const r of results) assert.equal(r.statusCode, 200, r.body);
  assert.equal(new Set(results.map((r) => r.json().id)).size, 1);
  const messages = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', results[0].json().id).execute();
  assert.equal(messages.length, 1);
});
