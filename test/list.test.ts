import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const numbers = (body: { number: number }[]) => body.map((i) => i.number);

async function setup() {
  const owner = await makeUser(t.db);
  const member = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [member]);
  return { owner, member, product, api: client(t.app, owner), url: `/api/products/${product.id}/items.json` };
}

/** Sets an item's timestamps directly, so orderings can be checked without waiting for the clock. */
async function stamp(
  productId: number,
  number: number,
  fields: { created_at?: string; last_modified?: string; last_activity?: string },
) {
  await t.db
    .updateTable('items')
    .set(fields)
    .where('product_id', '=', productId)
    .where('number', '=', number)
    .execute();
}

describe('list items: filters', () => {
  test('no parameters: backlog and in-progress only, never archived, no sub-items', async () => {
    const { owner, product, api, url } = await setup();
    await makeItem(t.app, owner, product.id, { status: 'backlog' });
    await makeItem(t.app, owner, product.id, { status: 'in-progress' });
    await makeItem(t.app, owner, product.id, { status: 'completed' });
    await makeItem(t.app, owner, product.id, { status: 'accepted' });
    await makeItem(t.app, owner, product.id, { status: 'backlog' });
    await api.delete(`/api/products/${product.id}/items/5.json`);
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await makeItem(t.app, owner, product.id, { parent: 6 });
    const res = await api.get(url);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(numbers(res.json()), [1, 6, 2]);
    assert.equal(res.headers['x-sprintly-item-count'], '3');
  });

  test('status, type, assigned_to, created_by and tags filter together', async () => {
    const { owner, member, product, api, url } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'defect', tags: 'ui,urgent', assigned_to: member.user.id });
    await makeItem(t.app, owner, product.id, { type: 'defect', tags: 'ui', assigned_to: member.user.id });
    await makeItem(t.app, member, product.id, { type: 'task', tags: 'urgent,ui', status: 'completed' });
    await makeItem(t.app, member, product.id, { type: 'test', tags: 'a tag', status: 'accepted' });
    assert.deepEqual(numbers((await api.get(url, { status: 'completed,accepted' })).json()), [3, 4]);
    assert.deepEqual(
      numbers((await api.get(url, { status: 'backlog, completed', type: 'defect,task' })).json()),
      [1, 2, 3],
    );
    assert.deepEqual(numbers((await api.get(url, { tags: 'urgent,ui', status: 'backlog,completed' })).json()), [1, 3]);
    assert.deepEqual(numbers((await api.get(url, { tags: 'a tag', status: 'accepted' })).json()), [4]);
    assert.deepEqual(numbers((await api.get(url, { assigned_to: member.user.id })).json()), [1, 2]);
    assert.deepEqual(
      numbers((await api.get(url, { created_by: member.user.id, status: 'completed,accepted' })).json()),
      [3, 4],
    );
    assert.deepEqual((await api.get(url, { created_by: owner.user.id, status: 'completed' })).json(), []);
  });

  test('someday items are listed when asked for', async () => {
    const { owner, product, api, url } = await setup();
    await makeItem(t.app, owner, product.id);
    await t.db
      .updateTable('items')
      .set((eb) => ({ status: 0, version: eb('version', '+', 1) }))
      .where('product_id', '=', product.id)
      .execute();
    const res = await api.get(url, { status: 'someday' });
    assert.equal(res.json()[0].status, 'someday');
  });

  test('failures', async () => {
    const { api, url } = await setup();
    const cases: [Record<string, string>, number][] = [
      [{ type: 'epic' }, 400],
      [{ status: 'done' }, 400],
      [{ order_by: 'size' }, 400],
      [{ offset: '-1' }, 400],
      [{ offset: 'x' }, 400],
      [{ limit: '0' }, 400],
      [{ limit: '1.5' }, 400],
      [{ children: 'maybe' }, 400],
      [{ assigned_to: '999999' }, 404],
      [{ assigned_to: 'bob' }, 404],
      [{ created_by: '999999' }, 404],
    ];
    for (const [query, status] of cases) {
      assertError(await api.get(url, query), status, { errors: Object.keys(query), label: JSON.stringify(query) });
    }
  });
});

describe('list items: order and paging', () => {
  test('every order_by, ties ending on number', async () => {
    const { owner, product, api, url } = await setup();
    for (let i = 0; i < 4; i++) await makeItem(t.app, owner, product.id, { status: i % 2 ? 'in-progress' : 'backlog' });
    // 1 backlog, 2 in-progress, 3 backlog, 4 in-progress
    await stamp(product.id, 1, {
      created_at: '2026-01-03T00:00:00+00:00',
      last_modified: '2026-02-01T00:00:00+00:00',
      last_activity: '2026-03-04T00:00:00+00:00',
    });
    await stamp(product.id, 2, {
      created_at: '2026-01-01T00:00:00+00:00',
      last_modified: '2026-02-03T00:00:00+00:00',
      last_activity: '2026-03-01T00:00:00+00:00',
    });
    await stamp(product.id, 3, {
      created_at: '2026-01-02T00:00:00+00:00',
      last_modified: '2026-02-02T00:00:00+00:00',
      last_activity: '2026-03-02T00:00:00+00:00',
    });
    await stamp(product.id, 4, {
      created_at: '2026-01-02T00:00:00+00:00',
      last_modified: '2026-02-02T00:00:00+00:00',
      last_activity: '2026-03-02T00:00:00+00:00',
    });
    const expected: Record<string, number[]> = {
      priority: [1, 3, 2, 4],
      favorites: [1, 3, 2, 4],
      oldest: [2, 3, 4, 1],
      newest: [1, 4, 3, 2],
      recent: [2, 4, 3, 1],
      stale: [1, 3, 4, 2],
      active: [1, 4, 3, 2],
      abandoned: [2, 3, 4, 1],
    };
    for (const [order_by, want] of Object.entries(expected)) {
      assert.deepEqual(numbers((await api.get(url, { order_by })).json()), want, order_by);
    }
    assert.deepEqual(numbers((await api.get(url)).json()), expected.priority, 'priority is the default');
  });

  test('offset, limit and X-Sprintly-Item-Count', async () => {
    const { owner, product, api, url } = await setup();
    for (let i = 0; i < 25; i++) await makeItem(t.app, owner, product.id);
    const first = await api.get(url);
    assert.equal(first.json().length, 20, 'limit defaults to 20');
    assert.equal(first.headers['x-sprintly-item-count'], '25');
    const page = await api.get(url, { offset: 20, limit: 10 });
    assert.deepEqual(numbers(page.json()), [21, 22, 23, 24, 25]);
    assert.equal(page.headers['x-sprintly-item-count'], '25');
    const beyond = await api.get(url, { offset: 100 });
    assert.deepEqual(beyond.json(), []);
    assert.equal(beyond.headers['x-sprintly-item-count'], '25');
    assert.equal((await api.get(url, { limit: 501 })).json().length, 25, 'limit above 500 is accepted as 500');
  });

  test('children=true: each story followed by all its sub-items; paging counts both', async () => {
    const { owner, product, api, url } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' }); // 1
    await makeItem(t.app, owner, product.id); // 2
    await makeItem(t.app, owner, product.id, { parent: 1 }); // 3
    await makeItem(t.app, owner, product.id, { parent: 1, status: 'completed' }); // 4
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'd', what: 'e', why: 'f' }); // 5
    await makeItem(t.app, owner, product.id, { parent: 5 }); // 6
    await makeItem(t.app, owner, product.id, { parent: 1 }); // 7
    await api.delete(`/api/products/${product.id}/items/7.json`);

    const all = await api.get(url, { children: 'true' });
    assert.deepEqual(numbers(all.json()), [1, 3, 4, 2, 5, 6]);
    assert.equal(all.headers['x-sprintly-item-count'], '6');
    assert.deepEqual(
      all
        .json()
        .map((i: { number: number; parent?: { number: number } }) => [
          i.number,
          'parent' in i ? i.parent!.number : null,
        ]),
      [
        [1, null],
        [3, 1],
        [4, 1],
        [2, null],
        [5, null],
        [6, 5],
      ],
      'sub-items carry their parent; others no parent key',
    );
    const page = await api.get(url, { children: 'yes', offset: 2, limit: 3 });
    assert.deepEqual(numbers(page.json()), [4, 2, 5]);
    assert.equal(page.headers['x-sprintly-item-count'], '6');
    const newest = await api.get(url, { children: '1', order_by: 'newest' });
    assert.deepEqual(numbers(newest.json()), [5, 6, 2, 1, 3, 4]);
    const without = await api.get(url, { children: 'false' });
    assert.deepEqual(numbers(without.json()), [1, 2, 5]);
  });
});

describe('list items: totals stay exact', () => {
  test('X-Sprintly-Item-Count follows every change that alters what a list matches', async () => {
    const { owner, member, product, api, url } = await setup();
    const total = async (query: Record<string, string | number> = {}) =>
      (await api.get(url, query)).headers['x-sprintly-item-count'];
    const base = `/api/products/${product.id}`;
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' }); // 1
    await makeItem(t.app, owner, product.id, { tags: 'x' }); // 2
    assert.equal(await total(), '2');
    assert.equal(await total({ tags: 'x' }), '1');
    assert.equal(await total({ assigned_to: member.user.id }), '0');
    assert.equal(await total({ children: 'true' }), '2');

    await makeItem(t.app, owner, product.id, { parent: 1 }); // 3: a sub-item
    assert.equal(await total(), '2');
    assert.equal(await total({ children: 'true' }), '3');
    await api.post(`${base}/items/2.json`, { tags: 'y' });
    assert.equal(await total({ tags: 'x' }), '0');
    await api.post(`${base}/items/2.json`, { assigned_to: member.user.id });
    assert.equal(await total({ assigned_to: member.user.id }), '1');
    await api.post(`${base}/items/2.json`, { status: 'completed' });
    assert.equal(await total(), '1');
    await api.post(`${base}/items/3.json`, { parent: '' });
    assert.equal(await total(), '2');
    assert.equal(await total({ children: 'true' }), '2');
    await api.delete(`${base}/items/1.json`);
    assert.equal(await total(), '1');
  });
});
