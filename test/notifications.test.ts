import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  assertError,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
  type TestUser,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

/** A deployer and two members who follow the product's one item (alice is its assignee, bob follows it). */
async function setup() {
  const deployer = await makeUser(t.db);
  const alice = await makeUser(t.db);
  const bob = await makeUser(t.db);
  const product = await makeProduct(t.db, deployer, [alice, bob], 'Notified');
  const item = await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
  const base = `/api/products/${product.id}`;
  assert.equal((await client(t.app, bob).post(`${base}/items/${item.number}/follow.json`)).statusCode, 200);
  return { deployer, alice, bob, product, item, base, url: `${base}/notifications.json` };
}

async function choiceOf(user: TestUser, url: string): Promise<unknown> {
  const res = await client(t.app, user).get(url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Records a deploy of the item and returns who got an outbox row for it, by user id. */
async function deployTo(s: Awaited<ReturnType<typeof setup>>, environment: string): Promise<number[]> {
  const res = await client(t.app, s.deployer).post(`${s.base}/deploys.json`, {
    environment,
    numbers: String(s.item.number),
  });
  assert.equal(res.statusCode, 200, res.body);
  const rows = await t.db.selectFrom('outbox').select('user_id').where('deploy_id', '=', res.json().id).execute();
  return rows.map((r) => r.user_id!).sort((a, b) => a - b);
}

describe('notifications.json: failures', () => {
  test('invalid values are 400 naming environments, and the choice stays as it was', async () => {
    const { alice, url } = await setup();
    const api = client(t.app, alice);
    assert.equal((await api.post(url, { environments: 'production' })).statusCode, 200);
    const tooMany = Array.from({ length: 51 }, (_, n) => `env-${n}`).join(',');
    for (const [label, res] of [
      ['missing', await api.post(url, {})],
      ['empty', await api.post(url, { environments: '' })],
      ['only commas', await api.post(url, { environments: ' , ,' })],
      ['all with others', await api.post(url, { environments: 'all,production' })],
      ['too long a name', await api.post(url, { environments: `staging,${'x'.repeat(256)}` })],
      ['51 environments', await api.post(url, { environments: tooMany })],
      ['NUL', await api.post(url, { environments: 'prod\u0000uction' })],
      ['array-style key', await api.post(url, { 'environments[]': 'production' })],
      ['JSON object', await api.postJson(url, { environments: { name: 'production' } })],
      ['JSON null', await api.postJson(url, { environments: null })],
      ['JSON empty array', await api.postJson(url, { environments: [] })],
    ] as const) {
      assertError(res, 400, { errors: ['environments'], label });
    }
    assert.deepEqual(await choiceOf(alice, url), { environments: ['production'], comments: true });
    // 50 is the most, and 255 characters the longest name, as a deploy's environment.
    const fifty = Array.from({ length: 50 }, (_, n) => `env-${String(n).padStart(2, '0')}`);
    assert.deepEqual((await api.post(url, { environments: fifty.join(',') })).json(), {
      environments: fifty,
      comments: true,
    });
    assert.equal((await api.post(url, { environments: 'y'.repeat(255) })).statusCode, 200);
  });

  test('members only: a non-member gets 403, an unknown product 404, bad credentials 403; nothing stored', async () => {
    const { url, product } = await setup();
    const outsider = await makeUser(t.db);
    await makeProduct(t.db, outsider, [], 'Elsewhere');
    assertError(await client(t.app, outsider).get(url), 403);
    assertError(await client(t.app, outsider).post(url, { environments: 'production' }), 403);
    assertError(await client(t.app, outsider).post(url, { environments: '' }), 403, {
      label: 'membership before parameters',
    });
    assertError(await client(t.app, outsider).get('/api/products/987654/notifications.json'), 404);
    assertError(
      await client(t.app, outsider).post('/api/products/abc/notifications.json', { environments: 'production' }),
      404,
    );
    assertError(await client(t.app, { auth: 'Basic bm9ib2R5Om5vcGU=' }).get(url), 403);
    const rows = await t.db
      .selectFrom('notification_environments')
      .selectAll()
      .where('product_id', '=', product.id)
      .execute();
    assert.deepEqual(rows, []);
  });
});

describe('notifications.json', () => {
  test('all by default; a list as form, repeated keys or JSON; all again; per person and per product', async () => {
    const { alice, bob, deployer, url } = await setup();
    const api = client(t.app, alice);
    assert.deepEqual(await choiceOf(alice, url), { environments: 'all', comments: true });

    let res = await api.post(url, { environments: 'staging, production,staging' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { environments: ['production', 'staging'], comments: true });
    assert.deepEqual(await choiceOf(alice, url), { environments: ['production', 'staging'], comments: true });
    assert.deepEqual(
      await choiceOf(bob, url),
      { environments: 'all', comments: true },
      "the choice is the caller's own",
    );

    res = await api.post(url, { environments: ['eu-west', 'us-east'] });
    assert.deepEqual(
      res.json(),
      { environments: ['eu-west', 'us-east'], comments: true },
      'repeated form keys replace the list',
    );
    res = await api.postJson(url, { environments: ['production'] });
    assert.deepEqual(res.json(), { environments: ['production'], comments: true });
    // What GET answers can be posted back as it is.
    res = await api.postJson(url, await choiceOf(alice, url));
    assert.deepEqual(res.json(), { environments: ['production'], comments: true });

    const other = await makeProduct(t.db, deployer, [alice], 'Other product');
    assert.deepEqual(
      await choiceOf(alice, `/api/products/${other.id}/notifications.json`),
      { environments: 'all', comments: true },
      'per product',
    );

    for (const all of ['all', 'ALL']) {
      res = await api.post(url, { environments: all });
      assert.deepEqual(res.json(), { environments: 'all', comments: true }, all);
      assert.deepEqual(await choiceOf(alice, url), { environments: 'all', comments: true });
    }
    res = await api.postJson(url, { environments: ['all'] });
    assert.deepEqual(res.json(), { environments: 'all', comments: true });
  });

  test('a deploy to an environment someone left out mails them nothing; the others still get theirs', async () => {
    const s = await setup();
    const { alice, bob, url } = s;
    assert.deepEqual(
      await deployTo(s, 'staging'),
      [alice.user.id, bob.user.id].sort((a, b) => a - b),
      'everyone by default',
    );

    assert.equal((await client(t.app, alice).post(url, { environments: 'production' })).statusCode, 200);
    assert.deepEqual(await deployTo(s, 'staging'), [bob.user.id]);
    const deploys = (await client(t.app, alice).get(`${s.base}/deploys.json`, { environment: 'staging' })).json();
    assert.equal(deploys.length, 2, 'the deploy itself is recorded');
    const item = (await client(t.app, alice).get(`${s.base}/items/${s.item.number}.json`)).json();
    assert.equal(item.deployed_to[0].environment, 'staging');

    assert.deepEqual(
      await deployTo(s, 'production'),
      [alice.user.id, bob.user.id].sort((a, b) => a - b),
    );
    // Names are compared exactly (as the deploy list filters them), apart from surrounding spaces.
    assert.deepEqual(await deployTo(s, 'Production'), [bob.user.id]);
    assert.deepEqual(
      await deployTo(s, ' production '),
      [alice.user.id, bob.user.id].sort((a, b) => a - b),
    );

    assert.equal((await client(t.app, alice).post(url, { environments: 'all' })).statusCode, 200);
    assert.deepEqual(
      await deployTo(s, 'staging'),
      [alice.user.id, bob.user.id].sort((a, b) => a - b),
      'back to all',
    );
  });
});
