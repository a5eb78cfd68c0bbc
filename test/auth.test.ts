import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  acceptInvitation,
  assertError,
  basic,
  client,
  invitationPath,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
  type TestUser,
} from './helpers.js';

const INVALID_USER = { code: 403, message: 'Invalid or unknown user.' };
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

function whoami(authorization?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'GET',
    url: '/api/user/whoami.json',
    headers: authorization === undefined ? {} : { authorization },
  });
}

function assertInvalidUser(res: LightMyRequestResponse, label = ''): void {
  assert.equal(res.statusCode, 403, `${label}: got ${res.statusCode} ${res.body}`);
  assert.deepEqual(res.json(), INVALID_USER, label);
}

interface Call {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  params?: Record<string, string>;
}

function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

function send(authorization: string | undefined, call: Call): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  if (call.method === 'GET') {
    const qs = call.params ? form(call.params) : '';
    return t.app.inject({ method: 'GET', url: qs ? `${call.url}?${qs}` : call.url, headers });
  }
  if (call.method === 'DELETE') return t.app.inject({ method: 'DELETE', url: call.url, headers });
  return t.app.inject({
    method: 'POST',
    url: call.url,
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    payload: form(call.params ?? {}),
  });
}

/**
 * Every endpoint under /api/products/{id}, each with parameters that a member's request would be
 * accepted with (item 1 is a story, item 2 a task, both in backlog), so that any refusal is about
 * who is asking, not about what is asked. Archiving comes last because it changes item 1.
 */
function productCalls(productId: number | string, newPersonEmail: string): Call[] {
  const p = `/api/products/${productId}`;
  return [
    { name: 'GET product', method: 'GET', url: `${p}.json` },
    { name: 'GET people', method: 'GET', url: `${p}/people.json` },
    {
      name: 'POST people',
      method: 'POST',
      url: `${p}/people.json`,
      params: { email: newPersonEmail, first_name: 'New', last_name: 'Person' },
    },
    { name: 'list items', method: 'GET', url: `${p}/items.json` },
    { name: 'create item', method: 'POST', url: `${p}/items.json`, params: { type: 'task', title: 'Intruder task' } },
    { name: 'fetch item', method: 'GET', url: `${p}/items/1.json` },
    { name: 'update item', method: 'POST', url: `${p}/items/1.json`, params: { description: 'changed', score: 'M' } },
    { name: 'children', method: 'GET', url: `${p}/items/1/children.json` },
    { name: 'deployed_to', method: 'GET', url: `${p}/items/1/deployed_to.json` },
    { name: 'item activities', method: 'GET', url: `${p}/items/1/activities.json` },
    { name: 'product activities', method: 'GET', url: `${p}/activities.json` },
    { name: 'resort', method: 'POST', url: `${p}/items/2/resort.json`, params: { before: '1' } },
    { name: 'follow', method: 'POST', url: `${p}/items/2/follow.json` },
    { name: 'unfollow', method: 'DELETE', url: `${p}/items/1/follow.json` },
    { name: 'list deploys', method: 'GET', url: `${p}/deploys.json` },
    {
      name: 'create deploy',
      method: 'POST',
      url: `${p}/deploys.json`,
      params: { environment: 'production', numbers: '1,2' },
    },
    { name: 'delete item', method: 'DELETE', url: `${p}/items/2.json` },
    { name: 'GET notifications', method: 'GET', url: `${p}/notifications.json` },
    {
      name: 'POST notifications',
      method: 'POST',
      url: `${p}/notifications.json`,
      params: { environments: 'production' },
    },
  ];
}

/** Everything a product endpoint could write, to prove that a refused request left no trace. */
async function snapshot(productId: number) {
  const items = await t.db.selectFrom('items').selectAll().where('product_id', '=', productId).orderBy('id').execute();
  const ids = items.map((i) => i.id);
  const byItems = <T>(rows: Promise<T[]>) => (ids.length ? rows : Promise.resolve([] as T[]));
  return {
    product: await t.db.selectFrom('products').selectAll().where('id', '=', productId).execute(),
    items,
    memberships: await t.db
      .selectFrom('memberships')
      .selectAll()
      .where('product_id', '=', productId)
      .orderBy('user_id')
      .execute(),
    followers: await byItems(
      t.db
        .selectFrom('followers')
        .selectAll()
        .where('item_id', 'in', ids)
        .orderBy('item_id')
        .orderBy('user_id')
        .execute(),
    ),
    tags: await byItems(
      t.db
        .selectFrom('item_tags')
        .selectAll()
        .where('item_id', 'in', ids)
        .orderBy('item_id')
        .orderBy('position')
        .execute(),
    ),
    deploys: await t.db.selectFrom('deploys').selectAll().where('product_id', '=', productId).execute(),
    deployments: await byItems(t.db.selectFrom('item_deployments').selectAll().where('item_id', 'in', ids).execute()),
    outbox: await t.db.selectFrom('outbox').selectAll().execute(),
    notifications: await t.db
      .selectFrom('notification_environments')
      .selectAll()
      .where('product_id', '=', productId)
      .orderBy('user_id')
      .orderBy('environment')
      .execute(),
    users: await t.db.selectFrom('users').select(['id', 'email']).orderBy('id').execute(),
  };
}

describe('credentials', () => {
  let alice: TestUser;
  let bob: TestUser;
  before(async () => {
    alice = await makeUser(t.db, { email: 'Alice.Auth@Example.com', firstName: 'Alice', lastName: 'Auth' });
    bob = await makeUser(t.db);
  });

  test('HTTP Basic with email and API key identifies the caller', async () => {
    const res = await whoami(basic(alice.email, alice.apiKey));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().id, alice.user.id);
  });

  test('Bearer with the API key identifies the caller', async () => {
    const res = await whoami(`Bearer ${bob.apiKey}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().id, bob.user.id);
  });

  test('the email in Basic credentials is case-insensitive', async () => {
    for (const email of ['alice.auth@example.com', 'ALICE.AUTH@EXAMPLE.COM', 'Alice.Auth@Example.com']) {
      const res = await whoami(basic(email, alice.apiKey));
      assert.equal(res.statusCode, 200, `${email}: ${res.body}`);
      assert.equal(res.json().id, alice.user.id);
    }
  });

  test('a wrong API key is 403 Invalid or unknown user', async () => {
    assertInvalidUser(await whoami(basic(alice.email, bob.apiKey)), 'other user key');
    assertInvalidUser(await whoami(basic(alice.email, 'A'.repeat(32))), 'well-formed wrong key');
    assertInvalidUser(await whoami(basic(alice.email, '')), 'empty key');
    const swapped = [...alice.apiKey].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    assert.notEqual(swapped, alice.apiKey, 'the key has letters whose case can change');
    assertInvalidUser(await whoami(basic(alice.email, swapped)), 'key in other case');
    assertInvalidUser(await whoami(`Bearer ${'B'.repeat(32)}`), 'unknown bearer key');
  });

  test('an unknown email is 403 Invalid or unknown user', async () => {
    assertInvalidUser(await whoami(basic('nobody@example.com', alice.apiKey)));
  });

  test('malformed Authorization headers are 403 Invalid or unknown user', async () => {
    const cases: Record<string, string> = {
      'bad base64': 'Basic !!!not*base64@@@',
      'base64 without a colon': `Basic ${Buffer.from(`${alice.email}${alice.apiKey}`).toString('base64')}`,
      'Basic without credentials': 'Basic',
      'empty user name': `Basic ${Buffer.from(`:${alice.apiKey}`).toString('base64')}`,
      'unknown scheme': `Token ${alice.apiKey}`,
      'digest scheme': `Digest username="${alice.email}", response="${alice.apiKey}"`,
      'bare key without scheme': alice.apiKey,
      'bearer with a short key': `Bearer ${alice.apiKey.slice(0, 31)}`,
      'bearer with a long key': `Bearer ${alice.apiKey}x`,
      'bearer with a non-alphanumeric key': `Bearer ${alice.apiKey.slice(0, 31)}!`,
      'bearer with email:key': `Bearer ${alice.email}:${alice.apiKey}`,
      'bearer without a key': 'Bearer',
    };
    for (const [label, header] of Object.entries(cases)) assertInvalidUser(await whoami(header), label);
  });

  test('without an Authorization header the 403 asks for Basic credentials', async () => {
    const res = await whoami();
    assertInvalidUser(res);
    assert.equal(res.headers['www-authenticate'], 'Basic realm="shiplog"');
  });

  test('an unauthenticated product request is 403 as well', async () => {
    const owner = await makeUser(t.db);
    const product = await makeProduct(t.db, owner);
    const res = await t.app.inject({ method: 'GET', url: `/api/products/${product.id}/items.json` });
    assertInvalidUser(res);
    assert.equal(res.headers['www-authenticate'], 'Basic realm="shiplog"');
  });
});

describe('API keys', () => {
  test('keys are stored only as a hash', async () => {
    const user = await makeUser(t.db);
    const row = await t.db.selectFrom('users').selectAll().where('id', '=', user.user.id).executeTakeFirstOrThrow();
    assert.ok(row.api_key_hash.length > 0);
    assert.notEqual(row.api_key_hash, user.apiKey);
    assert.ok(!row.api_key_hash.includes(user.apiKey), 'the hash column contains the key');
    assert.ok(!row.api_key_hash.toLowerCase().includes(user.apiKey.toLowerCase()), 'the hash column contains the key');
    // No other column may hold the key either.
    for (const [column, value] of Object.entries(row)) {
      assert.ok(!String(value).includes(user.apiKey), `users.${column} contains the API key`);
    }
  });

  test('generated keys are 32 letters and digits, different per user', async () => {
    const keys = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const { apiKey } = await makeUser(t.db);
      assert.match(apiKey, /^[A-Za-z0-9]{32}$/);
      keys.add(apiKey);
    }
    assert.equal(keys.size, 5);
  });
});

describe('whoami', () => {
  test('returns the caller in the user shape', async () => {
    const user = await makeUser(t.db, { firstName: 'Wanda', lastName: 'Who' });
    await whoami(user.auth);
    const res = await whoami(user.auth);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'email', 'first_name', 'id', 'last_login', 'last_name']);
    assert.equal(body.id, user.user.id);
    assert.equal(body.first_name, 'Wanda');
    assert.equal(body.last_name, 'Who');
    assert.equal(body.email, user.email);
    assert.match(body.created_at, TIMESTAMP);
    assert.match(body.last_login, TIMESTAMP);
  });

  test('last_login is set by an authenticated request', async () => {
    const user = await makeUser(t.db);
    const beforeRow = await t.db
      .selectFrom('users')
      .select('last_login')
      .where('id', '=', user.user.id)
      .executeTakeFirstOrThrow();
    assert.equal(beforeRow.last_login, null, 'a new user has never logged in');

    const started = Math.floor(Date.now() / 1000) * 1000;
    const res = await whoami(`Bearer ${user.apiKey}`);
    assert.equal(res.statusCode, 200);

    const afterRow = await t.db
      .selectFrom('users')
      .select('last_login')
      .where('id', '=', user.user.id)
      .executeTakeFirstOrThrow();
    assert.ok(afterRow.last_login, 'last_login was not recorded');
    assert.match(afterRow.last_login, TIMESTAMP);
    assert.ok(Date.parse(afterRow.last_login) >= started, 'last_login is older than the request');
    assert.ok(Date.parse(afterRow.last_login) <= Date.now() + 1000);

    const again = await whoami(user.auth);
    assert.equal(again.json().last_login, afterRow.last_login);
  });

  test('an item shows its assignee their own login as soon as it happens, though assignees are cached', async () => {
    const owner = await makeUser(t.db);
    const assignee = await makeUser(t.db);
    const product = await makeProduct(t.db, owner, [assignee]);
    const item = await makeItem(t.app, owner, product.id, { assigned_to: assignee.user.id });
    const path = `/api/products/${product.id}/items/${item.number}.json`;

    // The owner's read remembers the assignee as they were: never logged in.
    const before = (await client(t.app, owner).get(path)).json();
    assert.equal(before.assigned_to.id, assignee.user.id);
    assert.equal(before.assigned_to.last_login, undefined);

    const mine = (await client(t.app, assignee).get(path)).json();
    assert.match(mine.assigned_to.last_login, TIMESTAMP);
    const row = await t.db
      .selectFrom('users')
      .select('last_login')
      .where('id', '=', assignee.user.id)
      .executeTakeFirstOrThrow();
    assert.equal(mine.assigned_to.last_login, row.last_login);
    const named = (u: Record<string, unknown>) => ({
      id: u.id,
      first_name: u.first_name,
      last_name: u.last_name,
      email: u.email,
    });
    assert.deepEqual(named(mine.assigned_to), named(before.assigned_to));
  });

  test('a refused request does not count as a login', async () => {
    const user = await makeUser(t.db);
    await whoami(basic(user.email, 'Z'.repeat(32)));
    const row = await t.db
      .selectFrom('users')
      .select('last_login')
      .where('id', '=', user.user.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.last_login, null);
  });
});

describe('product membership (BOLA)', () => {
  let ownerA: TestUser;
  let ownerB: TestUser;
  let outsider: TestUser;
  let productA: number;
  let productB: number;

  before(async () => {
    ownerA = await makeUser(t.db);
    ownerB = await makeUser(t.db);
    outsider = await makeUser(t.db);
    productA = (await makeProduct(t.db, ownerA, [], 'Product A')).id;
    productB = (await makeProduct(t.db, ownerB, [], 'Product B')).id;
    for (const product of [productA, productB]) {
      const owner = product === productA ? ownerA : ownerB;
      await makeItem(t.app, owner, product, { type: 'story', who: 'user', what: 'a thing', why: 'it helps' });
      await makeItem(t.app, owner, product, { type: 'task', title: 'Second', tags: 'secret' });
    }
  });

  test('a user who is a member of no product gets 403 on every product endpoint, and nothing changes', async () => {
    const beforeState = await snapshot(productB);
    for (const call of productCalls(productB, 'bola-outsider-new@example.com')) {
      const res = await send(outsider.auth, call);
      assertError(res, 403, { label: call.name });
      assert.ok(!res.body.includes('secret'), `${call.name} leaked item data`);
    }
    assert.deepEqual(await snapshot(productB), beforeState);
  });

  test('a member of product A gets 403 on every endpoint of product B, and nothing changes', async () => {
    const beforeState = await snapshot(productB);
    for (const call of productCalls(productB, 'bola-member-new@example.com')) {
      const res = await send(ownerA.auth, call);
      assertError(res, 403, { label: call.name });
      assert.ok(!res.body.includes('secret'), `${call.name} leaked item data`);
      assert.ok(!res.body.includes('Product B'), `${call.name} leaked the product`);
    }
    const afterState = await snapshot(productB);
    assert.equal(afterState.items.length, 2, 'an item was created');
    assert.equal(afterState.deploys.length, 0, 'a deploy was recorded');
    assert.deepEqual(afterState, beforeState);
  });

  test('the same requests succeed for a member of the product', async () => {
    for (const call of productCalls(productA, 'bola-added@example.com')) {
      const res = await send(ownerA.auth, call);
      assert.equal(res.statusCode, 200, `${call.name}: ${res.statusCode} ${res.body}`);
    }
    const state = await snapshot(productA);
    assert.equal(state.deploys.length, 1);
  });

  test('under a product, credentials are checked as everywhere else, the product read in the same query', async () => {
    const items = `/api/products/${productA}/items.json`;
    const get = (authorization?: string, url = items) =>
      t.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
    for (const [label, header] of [
      ['Basic', basic(ownerA.email, ownerA.apiKey)],
      ['Basic, email in capitals', basic(ownerA.email.toUpperCase(), ownerA.apiKey)],
      ['Bearer', `Bearer ${ownerA.apiKey}`],
    ]) {
      const res = await get(header);
      assert.equal(res.statusCode, 200, `${label}: ${res.body}`);
    }
    for (const [label, header] of [
      ['wrong key', basic(ownerA.email, ownerB.apiKey)],
      ['unknown email', basic('nobody-member@example.com', ownerA.apiKey)],
      ['unknown bearer key', `Bearer ${'C'.repeat(32)}`],
      ['malformed', `Token ${ownerA.apiKey}`],
    ]) {
      assertInvalidUser(await get(header), label);
      // The same credentials on a product that does not exist: still 403, not 404.
      assertInvalidUser(await get(header, '/api/products/987654/items.json'), `${label}, unknown product`);
    }
    // An id too big to be stored names no product, once the caller is known.
    assertError(await get(`Bearer ${ownerA.apiKey}`, '/api/products/99999999999999999999/items.json'), 404);
    assertInvalidUser(await get(`Bearer ${'C'.repeat(32)}`, '/api/products/99999999999999999999/items.json'));
    // The caller is who the credentials name, on a product route as well.
    const bearerCreated = await t.app.inject({
      method: 'POST',
      url: `/api/products/${productA}/items.json`,
      headers: { authorization: `Bearer ${ownerA.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'type=task&title=By+bearer',
    });
    assert.equal(bearerCreated.statusCode, 200, bearerCreated.body);
    assert.equal(bearerCreated.json().created_by.id, ownerA.user.id);
  });

  test("product A's member cannot reach B's items through A's id", async () => {
    // Item numbers restart per product: A's item 1 must be A's, never B's.
    const res = await client(t.app, ownerA).get(`/api/products/${productA}/items/1.json`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().product.id, productA);
  });

  test('GET /api/products.json does not list products the caller is not a member of', async () => {
    const res = await client(t.app, outsider).get('/api/products.json');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), []);
  });

  test('an unknown product id is 404 on every product endpoint', async () => {
    for (const call of productCalls(987654, 'nobody-404@example.com')) {
      assertError(await send(ownerA.auth, call), 404, { label: call.name });
    }
  });

  test('a product id that is not an integer is 404 on every product endpoint', async () => {
    for (const id of ['abc', '1.5', `${productA}.0`, '-1', '0x1']) {
      for (const call of productCalls(id, 'nobody-nan@example.com')) {
        assertError(await send(ownerA.auth, call), 404, { label: `${call.name} with product id ${id}` });
      }
    }
  });

  test('bad credentials are 403 before an unknown or malformed product id', async () => {
    for (const id of [987654, 'abc']) {
      for (const call of productCalls(id, 'nobody-creds@example.com')) {
        assertInvalidUser(await send(basic(ownerA.email, 'X'.repeat(32)), call), `${call.name} /${id} wrong key`);
        const missing = await send(undefined, call);
        assertInvalidUser(missing, `${call.name} /${id} no credentials`);
        assert.equal(missing.headers['www-authenticate'], 'Basic realm="shiplog"');
      }
    }
  });

  test('bad credentials are 403 before bad parameters', async () => {
    const res = await send(`Bearer ${'Q'.repeat(32)}`, {
      name: 'list items',
      method: 'GET',
      url: `/api/products/${productA}/items.json`,
      params: { limit: 'abc' },
    });
    assertInvalidUser(res);
  });

  test('an unknown product is 404 for a non-member too, and before bad parameters', async () => {
    assertError(
      await send(outsider.auth, { name: 'list', method: 'GET', url: '/api/products/987654/items.json' }),
      404,
      { label: 'list' },
    );
    assertError(
      await send(outsider.auth, {
        name: 'create',
        method: 'POST',
        url: '/api/products/987654/items.json',
        params: { type: 'bogus' },
      }),
      404,
      { label: 'create with bad type' },
    );
    assertError(
      await send(ownerA.auth, {
        name: 'list',
        method: 'GET',
        url: '/api/products/abc/items.json',
        params: { limit: '-1' },
      }),
      404,
      { label: 'non-integer id with bad limit' },
    );
  });

  test('non-membership is 403 before bad parameters', async () => {
    const p = `/api/products/${productB}`;
    const calls: Call[] = [
      {
        name: 'list items bad limit',
        method: 'GET',
        url: `${p}/items.json`,
        params: { limit: 'abc', status: 'bogus' },
      },
      { name: 'create item bad type', method: 'POST', url: `${p}/items.json`, params: { type: 'bogus' } },
      { name: 'create item without title', method: 'POST', url: `${p}/items.json`, params: { type: 'task' } },
      { name: 'update bad status', method: 'POST', url: `${p}/items/1.json`, params: { status: 'bogus' } },
      {
        name: 'update bad status on a missing item',
        method: 'POST',
        url: `${p}/items/999.json`,
        params: { status: 'bogus' },
      },
      { name: 'resort without before/after', method: 'POST', url: `${p}/items/1/resort.json` },
      { name: 'list deploys bad offset', method: 'GET', url: `${p}/deploys.json`, params: { offset: '1.5' } },
      { name: 'children bad limit', method: 'GET', url: `${p}/items/1/children.json`, params: { limit: '0' } },
      { name: 'deployed_to bad offset', method: 'GET', url: `${p}/items/1/deployed_to.json`, params: { offset: 'x' } },
      { name: 'activities bad limit', method: 'GET', url: `${p}/items/1/activities.json`, params: { limit: '0' } },
      {
        name: 'create deploy bad numbers',
        method: 'POST',
        url: `${p}/deploys.json`,
        params: { environment: 'prod', numbers: 'x' },
      },
      { name: 'add person without email', method: 'POST', url: `${p}/people.json` },
      { name: 'fetch missing item', method: 'GET', url: `${p}/items/999.json` },
    ];
    for (const call of calls) assertError(await send(ownerA.auth, call), 403, { label: call.name });
  });

  test('parameters are checked before the item exists', async () => {
    const p = `/api/products/${productA}`;
    assertError(
      await send(ownerA.auth, {
        name: 'update',
        method: 'POST',
        url: `${p}/items/999.json`,
        params: { status: 'bogus' },
      }),
      400,
      { label: 'update bad status' },
    );
    assertError(
      await send(ownerA.auth, {
        name: 'update',
        method: 'POST',
        url: `${p}/items/999.json`,
        params: { score: 'huge' },
      }),
      400,
      { label: 'update bad score' },
    );
    assertError(await send(ownerA.auth, { name: 'resort', method: 'POST', url: `${p}/items/999/resort.json` }), 400, {
      label: 'resort without before/after',
    });
    // With valid parameters the missing item is what is wrong.
    assertError(
      await send(ownerA.auth, {
        name: 'update',
        method: 'POST',
        url: `${p}/items/999.json`,
        params: { status: 'backlog' },
      }),
      404,
      { label: 'update ok params' },
    );
  });
});

describe('people', () => {
  let admin: TestUser;
  let member: TestUser;
  let productId: number;

  before(async () => {
    admin = await makeUser(t.db);
    member = await makeUser(t.db);
    productId = (await makeProduct(t.db, admin, [member], 'People product')).id;
  });

  test('a member who is not an admin cannot add people', async () => {
    const stranger = await makeUser(t.db);
    const res = await client(t.app, member).post(`/api/products/${productId}/people.json`, { email: stranger.email });
    assertError(res, 403);
    assertError(await client(t.app, stranger).get(`/api/products/${productId}.json`), 403);
    const created = await client(t.app, member).post(`/api/products/${productId}/people.json`, {
      email: 'not-created@example.com',
      first_name: 'Not',
      last_name: 'Created',
    });
    assertError(created, 403);
    const row = await t.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', 'not-created@example.com')
      .executeTakeFirst();
    assert.equal(row, undefined, 'a non-admin created a user');
  });

  test('members can list the people of their product', async () => {
    const res = await client(t.app, member).get(`/api/products/${productId}/people.json`);
    assert.equal(res.statusCode, 200);
    const ids = res
      .json()
      .map((u: { id: number }) => u.id)
      .sort((a: number, b: number) => a - b);
    assert.deepEqual(
      ids,
      [admin.user.id, member.user.id].sort((a, b) => a - b),
    );
  });

  test('an admin invites an existing user, who can read the product once they accept', async () => {
    const newcomer = await makeUser(t.db);
    assertError(await client(t.app, newcomer).get(`/api/products/${productId}/items.json`), 403);

    const res = await client(t.app, admin).post(`/api/products/${productId}/people.json`, { email: newcomer.email });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { email: newcomer.email, status: 'invited', admin: false });
    assertError(await client(t.app, newcomer).get(`/api/products/${productId}.json`), 403, {
      label: 'before accepting',
    });

    await acceptInvitation(t.app, await invitationPath(t, newcomer.email));
    assert.equal((await client(t.app, newcomer).get(`/api/products/${productId}.json`)).statusCode, 200);
    assert.equal((await client(t.app, newcomer).get(`/api/products/${productId}/items.json`)).statusCode, 200);
    const people = await client(t.app, admin).get(`/api/products/${productId}/people.json`);
    assert.ok(people.json().some((u: { id: number }) => u.id === newcomer.user.id));
  });

  test('the email of an existing user is matched case-insensitively', async () => {
    const newcomer = await makeUser(t.db);
    const res = await client(t.app, admin).post(`/api/products/${productId}/people.json`, {
      email: newcomer.email.toUpperCase(),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().email, newcomer.email);
    const accepted = await acceptInvitation(t.app, await invitationPath(t, newcomer.email));
    assert.equal(accepted.user.id, newcomer.user.id);
    assert.equal(accepted.api_key, undefined);
  });

  test('an admin invites a new email with first and last name; accepting creates the user', async () => {
    const res = await client(t.app, admin).post(`/api/products/${productId}/people.json`, {
      email: 'brand.new@example.com',
      first_name: 'Brand',
      last_name: 'New',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { email: 'brand.new@example.com', status: 'invited', admin: false });
    assert.equal(
      await t.db.selectFrom('users').select('id').where('email', '=', 'brand.new@example.com').executeTakeFirst(),
      undefined,
    );

    const body = await acceptInvitation(t.app, await invitationPath(t, 'brand.new@example.com'));
    assert.equal(body.user.email, 'brand.new@example.com');
    assert.equal(body.user.first_name, 'Brand');
    assert.equal(body.user.last_name, 'New');
    assert.match(body.user.created_at, TIMESTAMP);
    const row = await t.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', 'brand.new@example.com')
      .executeTakeFirst();
    assert.ok(row, 'the user was not created');
    assert.equal(row.id, body.user.id);
    const people = await client(t.app, admin).get(`/api/products/${productId}/people.json`);
    assert.ok(people.json().some((u: { id: number }) => u.id === body.user.id));
  });

  test('adding a person without an email is 400', async () => {
    const before = (await t.db.selectFrom('memberships').selectAll().where('product_id', '=', productId).execute())
      .length;
    assertError(
      await client(t.app, admin).post(`/api/products/${productId}/people.json`, {
        first_name: 'No',
        last_name: 'Email',
      }),
      400,
    );
    assertError(await client(t.app, admin).post(`/api/products/${productId}/people.json`, { email: '' }), 400);
    const after = (await t.db.selectFrom('memberships').selectAll().where('product_id', '=', productId).execute())
      .length;
    assert.equal(after, before);
  });
});

describe('products', () => {
  test("GET /api/products.json lists only the caller's products", async () => {
    const me = await makeUser(t.db);
    const other = await makeUser(t.db);
    const mine = await makeProduct(t.db, me, [], 'Mine');
    const joined = await makeProduct(t.db, other, [me], 'Joined');
    await makeProduct(t.db, other, [], 'Not mine');

    const res = await client(t.app, me).get('/api/products.json');
    assert.equal(res.statusCode, 200);
    const products = res.json() as { id: number; name: string; archived: boolean }[];
    assert.deepEqual(
      products.map((p) => p.id).sort((a, b) => a - b),
      [mine.id, joined.id].sort((a, b) => a - b),
    );
    for (const p of products) {
      assert.equal(typeof p.name, 'string');
      assert.equal(p.archived, false);
    }
  });

  test('POST /api/products.json creates a product with the caller as its admin member', async () => {
    const creator = await makeUser(t.db);
    const res = await client(t.app, creator).post('/api/products.json', { name: 'Fresh product' });
    assert.equal(res.statusCode, 200, res.body);
    const product = res.json();
    assert.equal(product.name, 'Fresh product');
    assert.equal(product.archived, false);
    assert.equal(typeof product.id, 'number');

    const listed = await client(t.app, creator).get('/api/products.json');
    assert.ok(listed.json().some((p: { id: number }) => p.id === product.id));
    assert.equal((await client(t.app, creator).get(`/api/products/${product.id}.json`)).statusCode, 200);

    // Adding people is for admins only, so this shows the creator is one.
    const invitee = await makeUser(t.db);
    const added = await client(t.app, creator).post(`/api/products/${product.id}/people.json`, {
      email: invitee.email,
    });
    assert.equal(added.statusCode, 200, added.body);

    const stranger = await makeUser(t.db);
    assertError(await client(t.app, stranger).get(`/api/products/${product.id}.json`), 403);
  });

  test('POST /api/products.json without a name is 400', async () => {
    const creator = await makeUser(t.db);
    assertError(await client(t.app, creator).post('/api/products.json', {}), 400);
    assertError(await client(t.app, creator).post('/api/products.json', { name: '   ' }), 400);
    const listed = await client(t.app, creator).get('/api/products.json');
    assert.deepEqual(listed.json(), []);
  });
});
