import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { markAllSent } from '../src/mail/outbox.js';
import { retryMail } from '../src/mail/service.js';
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
    assert.equal(
      (await api().post(`${base}/items.json`, { type: 'task', title: 'x', assigned_to: BIG })).statusCode,
      404,
    );
    assert.equal((await api().post(`${base}/items.json`, { type: 'task', title: 'x', parent: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/items/2/resort.json`, { before: BIG })).statusCode, 404);
    assert.equal((await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: BIG })).statusCode, 400);
    const mixed = await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: `${BIG},2` });
    assert.equal(mixed.statusCode, 200);
    assert.deepEqual(
      mixed.json().items.map((i: { number: number }) => i.number),
      [2],
    );
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
    assertError(await api().get(`${base}/items.json`, { tags: tags(51) }), 400, { errors: ['tags'] });
    assert.equal(
      (await api().post(`${base}/items.json`, { type: 'task', title: 'x', tags: tags(100) })).statusCode,
      200,
    );
    assert.equal(
      (await api().post(`${base}/items.json`, { type: 'task', title: 'x', tags: tags(101) })).statusCode,
      400,
    );
    assert.equal((await api().post(`${base}/items/2.json`, { tags: tags(101) })).statusCode, 400);
    const numbers = Array.from({ length: 1001 }, (_, i) => i + 1).join(',');
    assertError(await api().post(`${base}/deploys.json`, { environment: 'prod', numbers }), 400, {
      errors: ['numbers'],
    });
  });
});

describe('pages start no deeper than a bound, so no request walks a million entries', () => {
  test('offset at most 100,000 (10,000 with children=true); beyond is a 400 naming offset', async () => {
    const page = await api().get(`${base}/items.json`, { offset: 100_000 });
    assert.equal(page.statusCode, 200, page.body);
    assert.deepEqual(page.json(), [], 'a page past the end is empty');
    assertError(await api().get(`${base}/items.json`, { offset: 100_001 }), 400, {
      errors: ['offset'],
      message: /at most 100000/,
    });
    assert.equal((await api().get(`${base}/items.json`, { offset: 10_000, children: 'true' })).statusCode, 200);
    assertError(await api().get(`${base}/items.json`, { offset: 10_001, children: 'true' }), 400, {
      errors: ['offset'],
      message: /at most 10000 with children=true/,
    });
    // Every bad parameter is named in the one answer.
    assertError(await api().get(`${base}/items.json`, { offset: 100_001, order_by: 'sideways' }), 400, {
      errors: ['offset', 'order_by'],
    });
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
    const res = await t.app.inject({
      method: 'GET',
      url: `${base}/items/%E0%A4%A.json`,
      headers: { authorization: owner.auth },
    });
    assertError(res, 400, { errors: [] });
  });

  test('children=true with a type filter that leaves out stories counts no sub-items', async () => {
    const own = await makeProduct(t.db, owner, [], 'Children and types');
    const ownBase = `/api/products/${own.id}`;
    await makeItem(t.app, owner, own.id, { type: 'story', who: 'a', what: 'b', why: 'c' }); // 1
    await makeItem(t.app, owner, own.id, { parent: 1 }); // 2: a sub-item of 1
    await makeItem(t.app, owner, own.id); // 3
    const tasks = await api().get(`${ownBase}/items.json`, { type: 'task', children: 'true' });
    assert.deepEqual(
      tasks.json().map((i: { number: number }) => i.number),
      [3],
    );
    assert.equal(tasks.headers['x-sprintly-item-count'], '1');
    const both = await api().get(`${ownBase}/items.json`, { type: 'story,task', children: 'true' });
    assert.deepEqual(
      both.json().map((i: { number: number }) => i.number),
      [1, 2, 3],
    );
    assert.equal(both.headers['x-sprintly-item-count'], '3');
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
      Array.from({ length: 10 }, () =>
        api().post(`${base}/people.json`, { email: 'new.person@example.com', first_name: 'New', last_name: 'Person' }),
      ),
    );
    for (const r of results) assert.equal(r.statusCode, 200, r.body);
    assert.equal(new Set(results.map((r) => r.body)).size, 1, 'the answers differ');
    assert.deepEqual(results[0].json(), { email: 'new.person@example.com', status: 'invited', admin: false });
    assert.equal(
      (await t.db.selectFrom('invitations').select('id').where('email', '=', 'new.person@example.com').execute())
        .length,
      1,
    );
    assert.equal(
      (await t.db.selectFrom('outbox').select('id').where('to_address', '=', 'new.person@example.com').execute())
        .length,
      1,
    );
    assert.equal(
      await t.db.selectFrom('users').select('id').where('email', '=', 'new.person@example.com').executeTakeFirst(),
      undefined,
    );
  });
});

describe('mail bookkeeping', () => {
  test("a result is recorded only while the claim is still the worker's", async () => {
    const followed = await makeItem(t.app, member, productId, { title: 'followed' });
    const deploy = (
      await api().post(`${base}/deploys.json`, { environment: 'prod', numbers: String(followed.number) })
    ).json();
    const [row] = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deploy.id).execute();
    // Another worker took the message over: its claim counts one attempt more.
    await t.db.updateTable('outbox').set({ status: 'sending', attempts: 2 }).where('id', '=', row.id).execute();
    assert.equal(
      (await markAllSent(t.db, [{ id: row.id, attempts: 1 }], '2026-01-01T00:00:00+00:00')).has(row.id),
      false,
    );
    const after = await t.db.selectFrom('outbox').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.equal(after.status, 'sending');
    assert.equal(
      (await markAllSent(t.db, [{ id: row.id, attempts: 2 }], '2026-01-01T00:00:00+00:00')).has(row.id),
      true,
    );
  });

  test('retrying given-up messages starts their backoff over', async () => {
    // A database of its own: a retry acts on every waiting message there is.
    const own = await makeApp();
    try {
      const deployer = await makeUser(own.db);
      const followers = [await makeUser(own.db), await makeUser(own.db), await makeUser(own.db)];
      const product = await makeProduct(own.db, deployer, followers);
      for (const f of followers) await makeItem(own.app, f, product.id);
      const deploy = await client(own.app, deployer).post(`/api/products/${product.id}/deploys.json`, {
        environment: 'prod',
        numbers: '1,2,3',
      });
      assert.equal(deploy.statusCode, 200, deploy.body);
      const ids = (
        await own.db.selectFrom('outbox').select('id').where('deploy_id', '=', deploy.json().id).orderBy('id').execute()
      ).map((r) => r.id);
      assert.equal(ids.length, 3);
      const [waiting, given, sent] = ids;
      await own.db
        .updateTable('outbox')
        .set({ next_attempt_at: '2099-01-01T00:00:00+00:00', attempts: 2 })
        .where('id', '=', waiting)
        .execute();
      await own.db
        .updateTable('outbox')
        .set({ status: 'failed', attempts: 7, last_error: '550 no', next_attempt_at: '2099-01-01T00:00:00+00:00' })
        .where('id', '=', given)
        .execute();
      await own.db
        .updateTable('outbox')
        .set({ status: 'sent', attempts: 1, next_attempt_at: '2099-01-01T00:00:00+00:00' })
        .where('id', '=', sent)
        .execute();
      const state = async () =>
        (
          await own.db.selectFrom('outbox').select(['status', 'attempts', 'next_attempt_at']).orderBy('id').execute()
        ).map((r) => ({
          status: r.status,
          attempts: r.attempts,
          due: Date.parse(r.next_attempt_at) <= Date.now(),
        }));

      assert.equal(await retryMail(own.db, false), 1, 'without failed, only the waiting message');
      assert.deepEqual(await state(), [
        { status: 'pending', attempts: 2, due: true },
        { status: 'failed', attempts: 7, due: false },
        { status: 'sent', attempts: 1, due: false },
      ]);
      assert.equal(await retryMail(own.db, true), 2, 'the waiting message and the given-up one');
      assert.deepEqual(await state(), [
        { status: 'pending', attempts: 2, due: true },
        { status: 'pending', attempts: 0, due: true },
        { status: 'sent', attempts: 1, due: false },
      ]);
    } finally {
      await own.close();
    }
  });
});
