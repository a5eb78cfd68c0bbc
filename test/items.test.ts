import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  advanceClock,
  assertError,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

async function setup() {
  const owner = await makeUser(t.db);
  const member = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [member]);
  const api = client(t.app, owner);
  const base = `/api/products/${product.id}`;
  return { owner, member, product, api, base };
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

describe('create item: failures', () => {
  const cases: [string, Record<string, string>, number, string?][] = [
    ['missing type', { title: 'x' }, 400, 'type'],
    ['invalid type', { type: 'epic', title: 'x' }, 400, 'type'],
    ['missing title on a task', { type: 'task' }, 400, 'title'],
    ['blank title on a defect', { type: 'defect', title: '   ' }, 400, 'title'],
    ['missing title on a test', { type: 'test' }, 400, 'title'],
    ['story without who', { type: 'story', what: 'a', why: 'b' }, 400, 'who'],
    ['story without what', { type: 'story', who: 'a', why: 'b' }, 400, 'what'],
    ['story without why', { type: 'story', who: 'a', what: 'b' }, 400, 'why'],
    ['status someday', { type: 'task', title: 'x', status: 'someday' }, 400, 'status'],
    ['invalid status', { type: 'task', title: 'x', status: 'done' }, 400, 'status'],
    ['invalid score', { type: 'task', title: 'x', score: 'XXL' }, 400, 'score'],
    ['title too long', { type: 'task', title: 'x'.repeat(256) }, 400, 'title'],
    ['who too long', { type: 'story', who: 'x'.repeat(256), what: 'a', why: 'b' }, 400, 'who'],
    ['assigned_to unknown', { type: 'task', title: 'x', assigned_to: '99999' }, 404, 'assigned_to'],
    ['assigned_to not a number', { type: 'task', title: 'x', assigned_to: 'bob' }, 404, 'assigned_to'],
    ['created_by unknown', { type: 'task', title: 'x', created_by: '99999' }, 404, 'created_by'],
    ['parent unknown', { type: 'task', title: 'x', parent: '9999' }, 404],
    ['parent given for a story', { type: 'story', who: 'a', what: 'b', why: 'c', parent: '1' }, 400, 'parent'],
  ];
  for (const [name, params, status, field] of cases) {
    test(name, async () => {
      const { api, base } = await setup();
      const res = await api.post(`${base}/items.json`, params);
      assertError(res, status, { errors: field ? [field] : [], label: name });
      const list = await api.get(`${base}/items.json`, { status: 'backlog,in-progress,completed,accepted' });
      assert.equal(list.headers['x-sprintly-item-count'], '0', 'nothing was written');
    });
  }

  test('assigned_to names a user who is not a member', async () => {
    const { api, base } = await setup();
    const outsider = await makeUser(t.db);
    assertError(
      await api.post(`${base}/items.json`, { type: 'task', title: 'x', assigned_to: outsider.user.id }),
      404,
      { message: /assigned_to/ },
    );
  });

  test('parent names an item that is not a story', async () => {
    const { owner, product, api, base } = await setup();
    await makeItem(t.app, owner, product.id);
    assertError(await api.post(`${base}/items.json`, { type: 'task', title: 'x', parent: 1 }), 400, {
      errors: ['parent'],
    });
  });
});

describe('create item', () => {
  test('a task has every field of the item shape', async () => {
    const { owner, member, product, base, api } = await setup();
    const res = await api.post(`${base}/items.json`, {
      type: 'task',
      title: 'Ship it',
      description: '**bold** <b>html</b>',
      score: 'M',
      assigned_to: member.user.id,
      tags: 'one, two ,,one',
    });
    assert.equal(res.statusCode, 200);
    const item = res.json();
    assert.equal(item.number, 1);
    assert.equal(item.type, 'task');
    assert.equal(item.status, 'backlog');
    assert.equal(item.title, 'Ship it');
    assert.equal(item.description, '**bold** <b>html</b>');
    assert.equal(item.score, 'M');
    assert.deepEqual(item.tags, ['one', 'two']);
    assert.equal(item.archived, false);
    assert.deepEqual(item.product, { id: product.id, name: product.name, archived: false });
    assert.equal(item.created_by.id, owner.user.id);
    assert.equal(item.created_by.email, owner.email);
    assert.equal(item.assigned_to.id, member.user.id);
    assert.match(item.created_at, TIMESTAMP);
    assert.match(item.last_modified, TIMESTAMP);
    assert.match(item.last_activity, TIMESTAMP);
    assert.equal(item.short_url, `http://shiplog.test/i/${product.id}/1/`);
    assert.equal(typeof item.sort, 'number');
    assert.deepEqual(item.progress, {});
    assert.match(item.email.files, /^files-\d+@items\.shiplog\.test$/);
    assert.match(item.email.discussion, /^discussion-\d+@items\.shiplog\.test$/);
    assert.deepEqual(item.counts, { blockers: 0, blocking: 0, comments: 0, favorites: 0 });
    assert.deepEqual(item.deployed_to, []);
    for (const absent of ['who', 'what', 'why', 'close_reason', 'parent']) assert.ok(!(absent in item), absent);
  });

  test('defaults: empty description, score ~, no tags, unassigned', async () => {
    const { owner, product } = await setup();
    const item = await makeItem(t.app, owner, product.id, { type: 'defect', title: 'Bug' });
    assert.equal(item.description, '');
    assert.equal(item.score, '~');
    assert.deepEqual(item.tags, []);
    assert.equal(item.assigned_to, null);
  });

  test('a story builds its title from who, what and why, ignoring title', async () => {
    const { owner, product } = await setup();
    const a = await makeItem(t.app, owner, product.id, {
      type: 'story',
      title: 'ignored',
      who: 'evil genius',
      what: 'henchmen',
      why: 'I win',
    });
    assert.equal(a.title, 'As an evil genius, I want henchmen so that I win.');
    assert.equal(a.who, 'evil genius');
    assert.equal(a.what, 'henchmen');
    assert.equal(a.why, 'I win');
    const b = await makeItem(t.app, owner, product.id, { type: 'story', who: 'user', what: 'x', why: 'y' });
    assert.equal(b.title, 'As a user, I want x so that y.');
    const c = await makeItem(t.app, owner, product.id, { type: 'story', who: 'developer', what: 'x', why: 'y' });
    assert.equal(c.title, 'As a developer, I want x so that y.');
  });

  test('created_by naming a known user is ignored: the creator is the caller', async () => {
    const { owner, member, product } = await setup();
    const item = await makeItem(t.app, owner, product.id, { created_by: member.user.id });
    assert.equal(item.created_by.id, owner.user.id);
  });

  test('created in a later status: progress and close_reason follow', async () => {
    const { owner, product } = await setup();
    const a = await makeItem(t.app, owner, product.id, { status: 'in-progress' });
    assert.deepEqual(Object.keys(a.progress), ['started_at']);
    const c = await makeItem(t.app, owner, product.id, { status: 'completed' });
    assert.deepEqual(Object.keys(c.progress).sort(), ['closed_at', 'started_at']);
    assert.equal(c.close_reason, 'fixed');
    const d = await makeItem(t.app, owner, product.id, { status: 'accepted', close_reason: 'duplicate' });
    assert.deepEqual(Object.keys(d.progress).sort(), ['accepted_at', 'closed_at', 'started_at']);
    assert.equal(d.close_reason, 'duplicate');
  });

  test('numbers count up per product, never reused', async () => {
    const { owner, product } = await setup();
    const other = await makeProduct(t.db, owner);
    assert.equal((await makeItem(t.app, owner, product.id)).number, 1);
    assert.equal((await makeItem(t.app, owner, product.id)).number, 2);
    assert.equal((await makeItem(t.app, owner, other.id)).number, 1);
    await client(t.app, owner).delete(`/api/products/${product.id}/items/2.json`);
    assert.equal((await makeItem(t.app, owner, product.id)).number, 3);
  });

  test('new items go to the bottom of their status', async () => {
    const { owner, product } = await setup();
    const a = await makeItem(t.app, owner, product.id);
    const b = await makeItem(t.app, owner, product.id);
    assert.ok(b.sort > a.sort);
  });
});

describe('fetch item', () => {
  test('unknown and malformed numbers are 404', async () => {
    const { api, base } = await setup();
    for (const n of ['1', '0', 'abc', '1.5', '-1']) {
      assertError(await api.get(`${base}/items/${n}.json`), 404, { label: n });
    }
  });

  test('a sub-item carries its parent as an item without parent or children', async () => {
    const { owner, product, api, base } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await makeItem(t.app, owner, product.id, { parent: 1 });
    const item = (await api.get(`${base}/items/2.json`)).json();
    assert.equal(item.parent.number, 1);
    assert.equal(item.parent.type, 'story');
    assert.equal(item.parent.title, 'As an a, I want b so that c.');
    assert.ok(!('parent' in item.parent));
    assert.ok(!('children' in item.parent));
  });
});

describe('update item', () => {
  async function withItem(params: Record<string, string | number> = {}) {
    const s = await setup();
    const item = await makeItem(t.app, s.owner, s.product.id, params);
    return { ...s, item, url: `${s.base}/items/${item.number}.json` };
  }

  test('only given parameters change', async () => {
    const { api, url, item } = await withItem({ title: 'Old', description: 'keep', score: 'S', tags: 'a,b' });
    const res = await api.post(url, { title: 'New' });
    assert.equal(res.statusCode, 200);
    const updated = res.json();
    assert.equal(updated.title, 'New');
    assert.equal(updated.description, 'keep');
    assert.equal(updated.score, 'S');
    assert.deepEqual(updated.tags, ['a', 'b']);
    assert.equal(updated.created_at, item.created_at);
  });

  test('failures: 404 for unknown item, 400 for bad values, nothing written', async () => {
    const { api, url, base } = await withItem({ title: 'Keep' });
    assert.equal((await api.post(`${base}/items/99.json`, { title: 'x' })).statusCode, 404);
    for (const params of [
      { status: 'someday' },
      { status: 'nope' },
      { score: '3' },
      { close_reason: 'because' },
      { title: '' },
      { title: 'x'.repeat(256) },
    ]) {
      assertError(await api.post(url, params), 400, { errors: Object.keys(params), label: JSON.stringify(params) });
    }
    assert.equal((await api.post(url, { assigned_to: 424242 })).statusCode, 404);
    assert.equal((await api.post(url, { parent: 424242 })).statusCode, 404);
    const item = (await api.get(url)).json();
    assert.equal(item.title, 'Keep');
    assert.equal(item.status, 'backlog');
  });

  test('tags replace the whole set; an empty value clears it', async () => {
    const { api, url } = await withItem({ tags: 'a,b' });
    assert.deepEqual((await api.post(url, { tags: 'c, a' })).json().tags, ['c', 'a']);
    assert.deepEqual((await api.post(url, { tags: '' })).json().tags, []);
  });

  test('assigned_to: a new assignee follows; an empty value unassigns', async () => {
    const { api, url, member, owner, product, item } = await withItem();
    const res = await api.post(url, { assigned_to: member.user.id });
    assert.equal(res.json().assigned_to.id, member.user.id);
    assert.equal((await api.post(url, { assigned_to: '' })).json().assigned_to, null);
    const followers = await t.db
      .selectFrom('followers')
      .innerJoin('items', 'items.id', 'followers.item_id')
      .select('followers.user_id')
      .where('items.product_id', '=', product.id)
      .where('items.number', '=', item.number)
      .orderBy('followers.user_id')
      .execute();
    assert.deepEqual(
      followers.map((f) => f.user_id),
      [owner.user.id, member.user.id].sort((a, b) => a - b),
      'the creator and the earlier assignee follow',
    );
  });

  test(
    'an assignee who stopped following stays so when the item is posted back whole, ' + 'unchanged assignee and all',
    async () => {
      const { api, url, member, item } = await withItem();
      await api.post(url, { assigned_to: member.user.id });
      assert.equal((await client(t.app, member).delete(url.replace(/\.json$/, '/follow.json'))).statusCode, 200);
      const whole = (await api.get(url)).json();
      assert.equal((await api.postJson(url, { ...whole, title: 'Saved by a client' })).statusCode, 200);
      assert.equal((await api.post(url, { assigned_to: member.user.id })).statusCode, 200);
      const follows = await t.db
        .selectFrom('followers')
        .innerJoin('items', 'items.id', 'followers.item_id')
        .select('followers.user_id')
        .where('items.product_id', '=', whole.product.id)
        .where('items.number', '=', item.number)
        .where('followers.user_id', '=', member.user.id)
        .execute();
      assert.deepEqual(follows, [], 'only a new assignee starts following (INTERFACE.md §7.4)');
    },
  );

  test('a story rebuilds its title when who/what/why change and ignores title and type', async () => {
    const { api, base, owner, product } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'admin', what: 'x', why: 'y' });
    const res = await api.post(`${base}/items/1.json`, { who: 'manager', title: 'ignored', type: 'task' });
    assert.equal(res.statusCode, 200);
    const item = res.json();
    assert.equal(item.title, 'As a manager, I want x so that y.');
    assert.equal(item.type, 'story');
    assert.equal((await api.post(`${base}/items/1.json`, { why: '' })).statusCode, 400);
  });

  test('status moves progress as §5 says', async () => {
    const { api, url } = await withItem();
    let item = (await api.post(url, { status: 'in-progress' })).json();
    assert.deepEqual(Object.keys(item.progress), ['started_at']);
    const started = item.progress.started_at;
    item = (await api.post(url, { status: 'accepted', close_reason: 'wont-fix' })).json();
    assert.deepEqual(Object.keys(item.progress).sort(), ['accepted_at', 'closed_at', 'started_at']);
    assert.equal(item.progress.started_at, started);
    assert.equal(item.close_reason, 'wont-fix');
    item = (await api.post(url, { status: 'completed' })).json();
    assert.deepEqual(Object.keys(item.progress).sort(), ['closed_at', 'started_at']);
    assert.equal(item.close_reason, 'wont-fix');
    item = (await api.post(url, { status: 'backlog' })).json();
    assert.deepEqual(Object.keys(item.progress), ['started_at']);
    assert.ok(!('close_reason' in item));
    item = (await api.post(url, { status: 'completed' })).json();
    assert.equal(item.close_reason, 'fixed');
    item = (await api.post(url, { close_reason: 'invalid' })).json();
    assert.equal(item.close_reason, 'invalid');
  });

  test('a change of status puts the item at the bottom of its new status', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id, { status: 'in-progress' });
    await makeItem(t.app, owner, product.id, { status: 'in-progress' });
    const moved = (await api.post(`${base}/items/1.json`, { status: 'in-progress' })).json();
    assert.equal(moved.status, 'in-progress');
    const list = (await api.get(`${base}/items.json`, { status: 'in-progress' })).json();
    assert.deepEqual(
      list.map((i: { number: number }) => i.number),
      [1, 2],
    );
    await makeItem(t.app, owner, product.id);
    await api.post(`${base}/items/3.json`, { status: 'in-progress' });
    const after = (await api.get(`${base}/items.json`, { status: 'in-progress' })).json();
    assert.deepEqual(
      after.map((i: { number: number }) => i.number),
      [1, 2, 3],
    );
  });

  test('last_modified moves on a real change only', async () => {
    const { api, url, item } = await withItem({ title: 'Same' });
    // A second later, so that a change would show in the timestamp (second precision).
    advanceClock(1_000);
    assert.equal((await api.post(url, { title: 'Same' })).json().last_modified, item.last_modified);
    assert.notEqual((await api.post(url, { title: 'Other' })).json().last_modified, item.last_modified);
  });

  test('parent rules: attach to a story, detach with an empty value, never on a story', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await makeItem(t.app, owner, product.id, { title: 'task' });
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'd', what: 'e', why: 'f' });
    const attached = (await api.post(`${base}/items/2.json`, { parent: 1 })).json();
    assert.equal(attached.parent.number, 1);
    assert.equal((await api.post(`${base}/items/3.json`, { parent: 1 })).statusCode, 400, 'story under story');
    assert.equal(
      (await api.post(`${base}/items/3.json`, { parent: '' })).statusCode,
      200,
      'a story posted back with no parent',
    );
    assert.equal((await api.post(`${base}/items/2.json`, { parent: 2 })).statusCode, 400, 'parent not a story');
    const detached = (await api.post(`${base}/items/2.json`, { parent: '' })).json();
    assert.ok(!('parent' in detached));
  });
});

describe('archive, children, follow', () => {
  test('DELETE archives: still fetchable, no longer listed', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `${base}/items/1.json`,
      headers: { authorization: owner.auth },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().archived, true);
    assert.equal((await api.get(`${base}/items/1.json`)).json().archived, true);
    const list = await api.get(`${base}/items.json`);
    assert.deepEqual(list.json(), []);
    assert.equal((await api.delete(`${base}/items/7.json`)).statusCode, 404);
  });

  test('children: a story lists its sub-items by priority; 400 for other types', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await makeItem(t.app, owner, product.id, { parent: 1, status: 'completed' });
    await makeItem(t.app, owner, product.id, { parent: 1 });
    await makeItem(t.app, owner, product.id, { parent: 1, status: 'in-progress' });
    await makeItem(t.app, owner, product.id);
    const res = await api.get(`${base}/items/1/children.json`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      res.json().map((i: { number: number }) => i.number),
      [3, 4, 2],
    );
    for (const c of res.json()) assert.equal(c.parent.number, 1);
    assert.equal((await api.get(`${base}/items/5/children.json`)).statusCode, 400);
    assert.equal((await api.get(`${base}/items/9/children.json`)).statusCode, 404);
  });

  test('children pages: offset and limit (at most 500), the total in X-Sprintly-Item-Count', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    for (let i = 0; i < 5; i++) await makeItem(t.app, owner, product.id, { parent: 1 });
    const all = await api.get(`${base}/items/1/children.json`);
    assert.equal(all.headers['x-sprintly-item-count'], '5');
    assert.deepEqual(
      all.json().map((i: { number: number }) => i.number),
      [2, 3, 4, 5, 6],
    );
    const page = await api.get(`${base}/items/1/children.json`, { offset: 1, limit: 2 });
    assert.equal(page.headers['x-sprintly-item-count'], '5');
    assert.deepEqual(
      page.json().map((i: { number: number }) => i.number),
      [3, 4],
    );
    assert.equal((await api.get(`${base}/items/1/children.json`, { limit: 9999 })).json().length, 5);
    assertError(await api.get(`${base}/items/1/children.json`, { offset: '-1', limit: 'x' }), 400, {
      errors: ['limit', 'offset'],
    });
  });

  test('deployed_to shows the latest 10 environments (3 where embedded); deployed_to.json has them all', async () => {
    const { api, owner, product, base } = await setup();
    await makeItem(t.app, owner, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await makeItem(t.app, owner, product.id, { parent: 1 });
    const deployIds: number[] = [];
    for (let e = 0; e < 12; e++)
      deployIds.push((await api.post(`${base}/deploys.json`, { environment: `env-${e}`, numbers: '1,2' })).json().id);
    // A later deploy to an environment already listed moves it to the front.
    const again = (
      await api.post(`${base}/deploys.json`, { environment: 'env-0', numbers: '1,2', version: 'again' })
    ).json();
    deployIds.push(again.id);
    const latestFirst = ['env-0', ...Array.from({ length: 11 }, (_, i) => `env-${11 - i}`)];

    const item = (await api.get(`${base}/items/2.json`)).json();
    assert.equal(item.deployed_to_count, 12);
    assert.deepEqual(
      item.deployed_to.map((d: { environment: string }) => d.environment),
      latestFirst.slice(0, 10),
    );
    assert.equal(item.deployed_to[0].version, 'again');
    assert.equal(item.deployed_to[0].deploy_id, deployIds[12]);
    assert.equal(item.parent.deployed_to_count, 12);
    assert.deepEqual(
      item.parent.deployed_to.map((d: { environment: string }) => d.environment),
      latestFirst.slice(0, 3),
    );
    const listed = (await api.get(`${base}/items.json`, { children: true })).json();
    assert.equal(listed[0].deployed_to.length, 10);
    assert.equal(listed[1].parent.deployed_to.length, 3);
    // A deploy's receipt embeds its items whole (a page of deploys, their summaries: docs/INTERFACE.md §7.7).
    for (const i of again.items) {
      assert.equal(i.deployed_to_count, 12);
      assert.deepEqual(
        i.deployed_to.map((d: { environment: string }) => d.environment),
        latestFirst.slice(0, 3),
      );
    }

    const full = await api.get(`${base}/items/2/deployed_to.json`);
    assert.equal(full.statusCode, 200);
    assert.equal(full.headers['x-sprintly-deployed-to-count'], '12');
    assert.deepEqual(
      full.json().map((d: { environment: string }) => d.environment),
      latestFirst,
    );
    assert.deepEqual(full.json().slice(0, 10), item.deployed_to);
    const page = await api.get(`${base}/items/2/deployed_to.json`, { offset: 10, limit: 5 });
    assert.equal(page.headers['x-sprintly-deployed-to-count'], '12');
    assert.deepEqual(
      page.json().map((d: { environment: string }) => d.environment),
      latestFirst.slice(10),
    );
    assert.equal((await api.get(`${base}/items/99/deployed_to.json`)).statusCode, 404);
    assert.equal((await api.get(`${base}/items/2/deployed_to.json`, { limit: 0 })).statusCode, 400);

    await makeItem(t.app, owner, product.id);
    const none = await api.get(`${base}/items/3/deployed_to.json`);
    assert.deepEqual(none.json(), []);
    assert.equal(none.headers['x-sprintly-deployed-to-count'], '0');
    assert.equal((await api.get(`${base}/items/3.json`)).json().deployed_to_count, 0);
  });

  test('follow and unfollow; following is activity', async () => {
    const { owner, member, product, base } = await setup();
    const item = await makeItem(t.app, owner, product.id);
    advanceClock(1_000);
    const m = client(t.app, member);
    const followed = await m.post(`${base}/items/1/follow.json`);
    assert.equal(followed.statusCode, 200);
    assert.ok(followed.json().last_activity > item.last_activity);
    assert.equal(followed.json().last_modified, item.last_modified);
    const count = async () =>
      (await t.db.selectFrom('followers').selectAll().where('user_id', '=', member.user.id).execute()).length;
    assert.equal(await count(), 1);
    assert.equal((await m.post(`${base}/items/1/follow.json`)).statusCode, 200, 'following twice is harmless');
    assert.equal(await count(), 1);
    assert.equal((await m.delete(`${base}/items/1/follow.json`)).statusCode, 200);
    assert.equal(await count(), 0);
    assert.equal((await m.post(`${base}/items/5/follow.json`)).statusCode, 404);
  });
});

describe('short_url', () => {
  test('redirects (302) to the item', async () => {
    const { owner, product, api } = await setup();
    const item = await makeItem(t.app, owner, product.id);
    const path = new URL(item.short_url).pathname;
    const res = await t.app.inject({ method: 'GET', url: path });
    assert.equal(res.statusCode, 302);
    const location = new URL(res.headers.location as string);
    assert.equal(location.origin, 'http://shiplog.test');
    const followed = await api.get(location.pathname);
    assert.equal(followed.statusCode, 200);
    assert.equal(followed.json().number, item.number);
    assert.equal((await t.app.inject({ method: 'GET', url: '/i/abc/1/' })).statusCode, 404);
    assert.equal((await t.app.inject({ method: 'GET', url: '/i/1/x/' })).statusCode, 404);
  });
});
