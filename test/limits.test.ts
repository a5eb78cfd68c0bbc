import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { markAllSent } from '../src/mail/outbox.js';
import { retryMail } from '../src/mail/service.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

let t: TestContext;
let owner: TestUser;
let member: TestUser;
let productId: number;
let base: string;

before(async () => {
  t = await makeApp();
  owner = await makeUser(t.db);
  member = await makeUser(t.db);
  productId = (await makeProduct(t.db, owner, [member])).id;
  base = `/api/products/${productId}`;
  await makeItem(t.app, owner, productId, { type: 'story', who: 'a', what: 'b', why: 'c' }); // 1
  await makeItem(t.app, owner, productId, { parent: 1 }); // 2
});
after(() => t.close());

const api = () => client(t.app, owner);
const BIG = '99999999999';

describe('numbers beyond what storage holds name nothing', () => {
  test('ids and numbers above 2^31-1 are 404, or skipped as unknown', async () => {
    assert.equal((await api().get(`${base}/items/${BIG}.json`)).statusCode, 404);
    assert.equal((await api().get(`/api/products/${BIG}/items.json`)).statusCode, 404);
    assert.equal((await api().get(`${base}/items.json`, { assigned_to: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', assigned_to: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', parent: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/items/2/resort.json`, { before: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: BIG })).statusCode, 400);
    const mixed = await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: `${BIG},2` });
    assert.equal(mixed.statusCode, 200);
    assert.deepEqual(mixed.json().items.map((i: { number: number }) => i.number), [2]);
  });

  test('0 as a reference names no item: 404', async () => {
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', parent: 0 })).statusCode, 404);
    assert.equal((await api().post(`${base}/items/2/resort.json`, { before: 0 })).statusCode, 404);
  });
});

describe('list sizes are bounded', () => {
  test('at most 50 tags to filter by, 100 tags on an item, 1,000 items in a deploy', async () => {
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`).join(',');
    assert.equal((await api().get(`${base}/items.json`, { tags: tags(50) })).statusCode, 200);
    const filter = await api().get(`${base}/items.json`, { tags: tags(51) });
    assert.equal(filter.statusCode, 400);
    assert.ok(filter.json().errors.tags);
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', tags: tags(100) })).statusCode, 200);
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', tags: tags(101) })).statusCode, 400);
    assert.equal((await api().post(`${base}/items/2.json`, { tags: tags(101) })).statusCode, 400);
    const numbers = Array.from({ length: 1001 }, (_, i) => i + 1).join(',');
    const deploy = await api().post(`${base}/deploys.json`, { environment: 'prod', numbers });
    assert.equal(deploy.statusCode, 400);
    assert.ok(deploy.json().errors.numbers);
  });
});

describe('requests clients really send', () => {
  test('a declared body that is empty carries no parameters; the query string does', async () => {
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'text/plain']) {
      const res = await t.app.inject({
        method: 'POST',
        url: `${base}/items.json?type=task&title=From%20the%20query`,
        headers: { authorization: owner.auth, 'content-type': type },
        payload: '',
      });
      assert.equal(res.statusCode, 200, `${type}: ${res.body}`);
      assert.equal(res.json().title, 'From the query');
    }
  });

  test('a malformed URL is 400 in the error shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: `${base}/items/%E0%A4%A.json`, headers: { authorization: owner.auth } });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message']);
    assert.equal(res.json().code, 400);
  });

  test('children=true with a type filter that leaves out stories counts no sub-items', async () => {
    const res = await api().get(`${base}/items.json`, { type: 'task', children: 'true' });
    assert.equal(res.headers['x-sprintly-item-count'], String(res.json().length));
  });
});

describe('people', () => {
  test('admin=true on an existing member makes them an admin; without it the role stays', async () => {
    const res = await api().post(`${base}/people.json`, { email: member.email, admin: 'true' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { email: member.email, status: 'member', admin: true });
    const again = await api().post(`${base}/people.json`, { email: member.email });
    assert.equal(again.json().admin, true);
    const demoted = await api().post(`${base}/people.json`, { email: member.email, admin: 'false' });
    assert.equal(demoted.json().admin, false);
  });

  test('the same new person invited many times at once is invited once, with one message', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => api().post(`${base}/people.json`, { email: 'new.person@example.com', first_name: 'New', last_name: 'Person' })),
    );
    for (const r of results) assert.equal(r.statusCode, 200, r.body);
    assert.equal(new Set(results.map((r) => r.body)).size, 1, 'the answers differ');
    assert.deepEqual(results[0].json(), { email: 'new.person@example.com', status: 'invited', admin: false });
    assert.equal((await t.db.selectFrom('invitations').select('id').where('email', '=', 'new.person@example.com').execute()).length, 1);
    assert.equal((await t.db.selectFrom('outbox').select('id').where('to_address', '=', 'new.person@example.com').execute()).length, 1);
    assert.equal(await t.db.selectFrom('users').select('id').where('email', '=', 'new.person@example.com').executeTakeFirst(), undefined);
  });
});

describe('mail bookkeeping', () => {
  test('a result is recorded only while the claim is still the worker\'s', async () => {
    const followed = await makeItem(t.app, member, productId, { title: 'followed' });
    const deploy = (await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: String(followed.number) })).json();
    const [row] = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deploy.id).execute();
    // Another worker took the message over: its claim counts one attempt more.
    await t.db.updateTable('outbox').set({ status: 'sending', attempts: 2 }).where('id', '=', row.id).execute();
    assert.equal((await markAllSent(t.db, [{ id: row.id, attempts: 1 }], '2026-01-01T00:00:00+00:00')).has(row.id), false);
    const after = await t.db.selectFrom('outbox').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.equal(after.status, 'sending');
    assert.equal((await markAllSent(t.db, [{ id: row.id, attempts: 2 }], '2026-01-01T00:00:00+00:00')).has(row.id), true);
  });

  test('retrying given-up messages starts their backoff over', async () => {
    await t.db.updateTable('outbox').set({ status: 'failed', attempts: 7, last_error: '550 no' }).execute();
    const n = await retryMail(t.db, true);
    assert.ok(n >= 1);
    const rows = await t.db.selectFrom('outbox').select(['status', 'attempts']).execute();
    assert.ok(rows.every((r) => r.status === 'pending' && r.attempts === 0));
  });
});
