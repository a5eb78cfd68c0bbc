import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { openDatabase, type Db } from '../src/db/connection.js';
import type { FastifyInstance } from 'fastify';
import { assertError, client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

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
  assert.deepEqual(
    numbers,
    Array.from({ length: 50 }, (_, i) => i + 1),
  );
  const sorts = new Set(results.map((r) => r.json().sort));
  assert.equal(sorts.size, 50);
});

test('parallel resorts and status changes through two instances keep positions distinct', async () => {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner);
  for (let i = 0; i < 10; i++) await makeItem(t.app, owner, product.id);
  const base = `/api/products/${product.id}`;
  // Items 2-6 each move to in-progress once; every other operation moves one of items 2-10
  // right below item 1, which stays in the backlog.
  const moved = [2, 3, 4, 5, 6];
  const ops = Array.from({ length: 60 }, (_, i) => {
    const api = client([t.app, second.app][i % 2], owner);
    if (i % 12 === 0)
      return {
        kind: 'status',
        n: moved[i / 12],
        res: api.post(`${base}/items/${moved[i / 12]}.json`, { status: 'in-progress' }),
      };
    const n = (i % 9) + 2;
    return { kind: 'resort', n, res: api.post(`${base}/items/${n}/resort.json`, { before: 1 }) };
  });
  for (const op of ops) {
    const res = await op.res;
    const label = `${op.kind} ${op.n}`;
    // A resort may only be refused for an item that has meanwhile left the backlog item 1 is in.
    if (op.kind === 'resort' && moved.includes(op.n) && res.statusCode === 400) {
      assertError(res, 400, { errors: ['before'], message: /same status/, label });
    } else {
      assert.equal(res.statusCode, 200, `${label}: ${res.body}`);
      assert.equal(res.json().number, op.n, label);
    }
  }
  const rows = await t.db
    .selectFrom('items')
    .select(['number', 'status', 'sort'])
    .where('product_id', '=', product.id)
    .execute();
  const keys = rows.map((r) => `${r.status}:${r.sort}`);
  assert.equal(new Set(keys).size, keys.length);
  const order = async (status: string) =>
    (await client(t.app, owner).get(`${base}/items.json`, { status, limit: 500 }))
      .json()
      .map((i: { number: number }) => i.number) as number[];
  const backlog = await order('backlog');
  assert.equal(backlog[0], 1, 'nothing can move above item 1');
  assert.deepEqual(
    backlog.slice(1).sort((a, b) => a - b),
    [7, 8, 9, 10],
  );
  assert.deepEqual(
    (await order('in-progress')).sort((a, b) => a - b),
    moved,
  );
});

test('parallel deploys: exactly one message per follower per deploy', async () => {
  const deployer = await makeUser(t.db);
  const followers = await Promise.all([makeUser(t.db), makeUser(t.db), makeUser(t.db)]);
  const product = await makeProduct(t.db, deployer, followers);
  for (const f of followers) await makeItem(t.app, f, product.id);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      client([t.app, second.app][i % 2], deployer).post(`/api/products/${product.id}/deploys.json`, {
        environment: 'prod',
        numbers: '1,2,3',
      }),
    ),
  );
  for (const r of results) assert.equal(r.statusCode, 200, r.body);
  const ids = results.map((r) => r.json().id as number);
  assert.equal(new Set(ids).size, 20);
  const rows = await t.db
    .selectFrom('outbox')
    .select(['deploy_id', 'user_id'])
    .where('deploy_id', 'in', ids)
    .orderBy('deploy_id')
    .orderBy('user_id')
    .execute();
  const expected = ids
    .sort((a, b) => a - b)
    .flatMap((id) =>
      followers
        .map((f) => f.user.id)
        .sort((a, b) => a - b)
        .map((userId) => ({ deploy_id: id, user_id: userId })),
    );
  assert.deepEqual(rows, expected);
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
  assert.deepEqual(
    messages.map((m) => m.user_id),
    [follower.user.id],
  );
});
