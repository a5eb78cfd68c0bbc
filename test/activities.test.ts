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
  type TestUser,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

async function setup() {
  const owner = await makeUser(t.db, { firstName: 'Olive', lastName: 'Owner' });
  const member = await makeUser(t.db, { firstName: 'Max', lastName: 'Member' });
  const outsider = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [member]);
  const base = `/api/products/${product.id}`;
  return { owner, member, outsider, product, base, api: client(t.app, owner), other: client(t.app, member) };
}

interface Activity {
  id: number;
  action: string;
  label: string;
  created: string;
  user: { id: number; first_name: string; email: string };
  item: number[];
  meta: Record<string, any>;
}

/** An item's (or, without a number, the product's) activities, checked for the answer's shape. */
async function activities(
  user: TestUser,
  base: string,
  number?: number,
  query: Record<string, string | number> = {},
): Promise<{ activities: Activity[]; total: number; next?: string }> {
  const url = number === undefined ? `${base}/activities.json` : `${base}/items/${number}/activities.json`;
  const res = await client(t.app, user).get(url, query);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  const body = res.json();
  assert.deepEqual(Object.keys(body), ['activities', 'total_count']);
  assert.equal(body.total_count.length, 1);
  for (const a of body.activities)
    assert.deepEqual(Object.keys(a), ['id', 'action', 'label', 'created', 'user', 'item', 'meta'], res.body);
  const next = res.headers['x-sprintly-next-offset'];
  return {
    activities: body.activities,
    total: body.total_count[0],
    next: next === undefined ? undefined : String(next),
  };
}

/** The item's newest activity, which must be the one the last change made. */
async function latest(user: TestUser, base: string, number: number): Promise<Activity> {
  return (await activities(user, base, number)).activities[0];
}

describe('every change of an item is an activity: who, when, before and after', () => {
  test('creating an item: its fields, by its creator, when it was made', async () => {
    const { owner, member, product, base } = await setup();
    const story = await makeItem(t.app, owner, product.id, { type: 'story', who: 'a user', what: 'x', why: 'y' });
    const item = await makeItem(t.app, member, product.id, {
      title: 'Write it',
      description: 'Some words',
      assigned_to: owner.user.id,
      parent: story.number,
      tags: 'ui,api',
      status: 'in-progress',
    });
    const created = await latest(owner, base, item.number);
    assert.equal(created.action, 'created');
    assert.equal(created.label, `Created task #${item.number}`);
    assert.equal(created.created, item.created_at);
    assert.deepEqual([created.user.id, created.user.first_name], [member.user.id, 'Max']);
    assert.deepEqual(created.item, [item.number]);
    const { changes } = created.meta;
    assert.deepEqual(changes.type, { before: null, after: 'task' });
    assert.deepEqual(changes.title, { before: null, after: 'Write it' });
    assert.deepEqual(changes.description, { before: null, after: 'Some words' });
    assert.deepEqual(changes.status, { before: null, after: 'in-progress' });
    assert.deepEqual(changes.tags, { before: null, after: ['ui', 'api'] });
    assert.deepEqual(changes.parent, { before: null, after: { number: story.number } });
    assert.equal(changes.assigned_to.before, null);
    assert.equal(changes.assigned_to.after.id, owner.user.id);
    assert.equal(changes.who, undefined, 'fields not given are not listed');
  });

  test('each field update, newest first, with before and after and the time of the change', async () => {
    const { owner, member, product, base, api, other } = await setup();
    const story = await makeItem(t.app, owner, product.id, { type: 'story', who: 'a user', what: 'x', why: 'y' });
    const item = await makeItem(t.app, owner, product.id, { title: 'First', tags: 'a' });
    const url = `${base}/items/${item.number}.json`;
    const steps: [TestUser, Record<string, string | number | null>, string, Record<string, unknown>][] = [
      [owner, { title: 'Second' }, 'updated', { title: { before: 'First', after: 'Second' } }],
      [member, { score: 'M' }, 'updated', { score: { before: '~', after: 'M' } }],
      [owner, { tags: 'b,a' }, 'updated', { tags: { before: ['a'], after: ['b', 'a'] } }],
      [owner, { parent: story.number }, 'updated', { parent: { before: null, after: { number: story.number } } }],
      [owner, { parent: null }, 'updated', { parent: { before: { number: story.number }, after: null } }],
      [member, { status: 'in-progress' }, 'status_changed', { status: { before: 'backlog', after: 'in-progress' } }],
      [owner, { status: 'completed', close_reason: 'invalid' }, 'status_changed', {}],
      [owner, { close_reason: 'duplicate' }, 'updated', { close_reason: { before: 'invalid', after: 'duplicate' } }],
    ];
    const made: string[] = [];
    for (const [who, params, action, expected] of steps) {
      advanceClock(60_000);
      const res = await client(t.app, who).post(url, params);
      assert.equal(res.statusCode, 200, res.body);
      const activity = await latest(owner, base, item.number);
      assert.equal(activity.action, action, JSON.stringify(params));
      assert.equal(activity.user.id, who.user.id);
      assert.equal(activity.created, res.json().last_modified, 'when the change was made');
      for (const [field, change] of Object.entries(expected)) assert.deepEqual(activity.meta.changes[field], change);
      made.push(activity.created);
    }
    const { activities: all, total } = await activities(owner, base, item.number);
    assert.equal(total, steps.length + 1);
    assert.deepEqual(
      all.map((a) => a.action),
      [...steps.map((s) => s[2]).reverse(), 'created'],
      'newest first',
    );
    assert.deepEqual(
      all.slice(0, -1).map((a) => a.created),
      [...made].reverse(),
    );
    assert.ok(all.every((a, i) => i === 0 || all[i - 1].id > a.id));
    const completed = all[1].meta.changes;
    assert.deepEqual(completed.status, { before: 'in-progress', after: 'completed' });
    assert.deepEqual(completed.close_reason, { before: null, after: 'invalid' });
    assert.equal(all[1].label, `Moved #${item.number} from in-progress to completed and changed the close reason`);
    assert.equal(all.at(-2)!.label, `Changed the title of #${item.number}`);

    // The assignee, as a person before and after.
    await api.post(url, { assigned_to: member.user.id });
    const assigned = (await latest(owner, base, item.number)).meta.changes.assigned_to;
    assert.equal(assigned.before, null);
    assert.deepEqual([assigned.after.id, assigned.after.first_name], [member.user.id, 'Max']);
    await other.post(url, { assigned_to: owner.user.id });
    const reassigned = await latest(owner, base, item.number);
    assert.equal(reassigned.label, `Changed the assignee of #${item.number}`);
    assert.deepEqual(
      [reassigned.meta.changes.assigned_to.before.id, reassigned.meta.changes.assigned_to.after.id],
      [member.user.id, owner.user.id],
    );

    // Archiving.
    await other.delete(url);
    const archived = await latest(owner, base, item.number);
    assert.equal(archived.action, 'archived');
    assert.equal(archived.user.id, member.user.id);
    assert.deepEqual(archived.meta.changes, { archived: { before: false, after: true } });
  });

  test('long text is kept cut, and says so', async () => {
    const { owner, product, base, api } = await setup();
    const item = await makeItem(t.app, owner, product.id, { description: 'é'.repeat(3000) });
    assert.equal((await api.post(`${base}/items/${item.number}.json`, { description: 'short' })).statusCode, 200);
    const [updated, created] = (await activities(owner, base, item.number)).activities;
    assert.equal(created.meta.changes.description.after, `${'é'.repeat(1000)}…`);
    assert.deepEqual(created.meta.truncated, ['changes.description.after']);
    assert.deepEqual(updated.meta.changes.description, { before: `${'é'.repeat(1000)}…`, after: 'short' });
    assert.deepEqual(updated.meta.truncated, ['changes.description.before']);
  });

  test('a change that changes nothing, a resort, a follow and a refused change are no activity', async () => {
    const { owner, member, product, base, api } = await setup();
    const one = await makeItem(t.app, owner, product.id);
    const two = await makeItem(t.app, owner, product.id);
    await api.post(`${base}/items/${one.number}.json`, { title: one.title, score: '~' });
    assert.equal((await api.post(`${base}/items/${two.number}/resort.json`, { before: one.number })).statusCode, 200);
    assert.equal((await client(t.app, member).post(`${base}/items/${one.number}/follow.json`)).statusCode, 200);
    assertError(await api.post(`${base}/items/${one.number}.json`, { title: 'x', assigned_to: 999999 }), 404);
    assertError(await api.post(`${base}/items/${one.number}.json`, { title: 'x', status: 'done' }), 400);
    for (const n of [one.number, two.number]) {
      const { activities: list, total } = await activities(owner, base, n);
      assert.deepEqual([list.map((a) => a.action), total], [['created'], 1]);
    }
  });

  test('a deploy is one activity per item; a rollback one per item it took back', async () => {
    const { owner, member, product, base } = await setup();
    const one = await makeItem(t.app, owner, product.id);
    const two = await makeItem(t.app, owner, product.id);
    const deployer = client(t.app, member);
    const first = (
      await deployer.post(`${base}/deploys.json`, { environment: 'prod', numbers: `${one.number}`, version: 'v1' })
    ).json();
    const second = (
      await deployer.post(`${base}/deploys.json`, {
        environment: 'prod',
        numbers: `${one.number},${two.number},999`,
        version: 'v2',
      })
    ).json();
    const deployed = await latest(owner, base, two.number);
    assert.equal(deployed.action, 'deployed');
    assert.equal(deployed.user.id, member.user.id);
    assert.equal(deployed.created, second.created_at);
    assert.deepEqual(deployed.meta, { deploy_id: second.id, environment: 'prod', version: 'v2' });
    assert.equal(deployed.label, `Deployed #${two.number} to prod (v2)`);
    const rollback = (
      await deployer.post(`${base}/deploys.json`, { environment: 'prod', version: 'v1', rollback: 'true' })
    ).json();
    const [back, again, firstDeploy] = (await activities(owner, base, one.number)).activities;
    assert.deepEqual(
      [back.action, again.meta.deploy_id, firstDeploy.meta.deploy_id],
      ['rolled_back', second.id, first.id],
    );
    assert.deepEqual(back.meta, {
      deploy_id: rollback.id,
      environment: 'prod',
      version: 'v1',
      restored_deploy_id: first.id,
      restored_version: 'v1',
    });
    assert.equal(back.label, `Rolled #${one.number} in prod back to v1`);
    const out = await latest(owner, base, two.number);
    assert.deepEqual([out.action, out.meta.restored_deploy_id, out.meta.restored_version], ['rolled_back', null, null]);
    assert.equal(out.label, `Rolled #${two.number} out of prod`);
    // The product's log: every item's, newest first; nothing of another product.
    const { activities: all, total } = await activities(member, base);
    assert.equal(total, 7);
    assert.deepEqual(
      all.map((a) => [a.action, a.item[0]]),
      [
        ['rolled_back', two.number],
        ['rolled_back', one.number],
        ['deployed', two.number],
        ['deployed', one.number],
        ['deployed', one.number],
        ['created', two.number],
        ['created', one.number],
      ],
    );
  });
});

describe('pages and totals', () => {
  test('offset and limit page newest first; total_count counts them all; the next offset is given', async () => {
    const { owner, product, base, api } = await setup();
    const item = await makeItem(t.app, owner, product.id);
    for (let i = 1; i <= 24; i++) await api.post(`${base}/items/${item.number}.json`, { title: `Title ${i}` });
    const first = await activities(owner, base, item.number);
    assert.deepEqual([first.activities.length, first.total, first.next], [20, 25, '20']);
    assert.equal(first.activities[0].meta.changes.title.after, 'Title 24');
    const second = await activities(owner, base, item.number, { offset: 20, limit: 10 });
    assert.deepEqual([second.activities.length, second.total, second.next], [5, 25, undefined]);
    assert.deepEqual(
      second.activities.map((a) => (a.action === 'created' ? a.action : a.meta.changes.title.after)),
      ['Title 4', 'Title 3', 'Title 2', 'Title 1', 'created'],
    );
    const capped = await activities(owner, base, item.number, { limit: 5000 });
    assert.equal(capped.activities.length, 25);
    const beyond = await activities(owner, base, item.number, { offset: 1000 });
    assert.deepEqual([beyond.activities, beyond.total], [[], 25]);
    // The product's log counts every item's.
    await makeItem(t.app, owner, product.id);
    assert.equal((await activities(owner, base)).total, 26);
    assert.equal((await activities(owner, base, item.number)).total, 25);
  });

  test('a page ends early rather than pass the size bound of an answer', async () => {
    const small = await makeApp({ env: { MAX_ANSWER_BYTES: '1000000' } });
    try {
      const owner = await makeUser(small.db);
      const product = await makeProduct(small.db, owner);
      const api = client(small.app, owner);
      const url = `/api/products/${product.id}/items/1`;
      await makeItem(small.app, owner, product.id);
      // Each update's activity holds a hundred tags before and after: about 26 KB.
      const tags = (set: number) => Array.from({ length: 100 }, (_, j) => `${set}.${j}`.padEnd(64, 'é')).join(',');
      for (let i = 0; i < 50; i++) assert.equal((await api.post(`${url}.json`, { tags: tags(i) })).statusCode, 200);
      const res = await api.get(`${url}/activities.json`, { limit: 100 });
      assert.equal(res.statusCode, 200);
      assert.ok(Buffer.byteLength(res.body) <= 1_000_000, `${Buffer.byteLength(res.body)}`);
      const body = res.json();
      assert.ok(body.activities.length < 50 && body.activities.length > 20, `${body.activities.length}`);
      assert.equal(res.headers['x-sprintly-next-offset'], String(body.activities.length));
      assert.equal(body.total_count[0], 51);
    } finally {
      await small.close();
    }
  });

  test('bad offset or limit is a 400 naming each', async () => {
    const { owner, product, base, api } = await setup();
    await makeItem(t.app, owner, product.id);
    for (const url of [`${base}/activities.json`, `${base}/items/1/activities.json`]) {
      assertError(await api.get(url, { offset: 'x', limit: '0' }), 400, { errors: ['offset', 'limit'], label: url });
      assertError(await api.get(url, { offset: '-1' }), 400, { errors: ['offset'], label: url });
      assertError(await api.get(url, { offset: '100001' }), 400, { errors: ['offset'], label: url });
      assertError(await api.get(url, { 'limit[]': '5' }), 400, { errors: ['limit'], label: url });
      assert.equal((await api.get(url, { offset: '100000' })).statusCode, 200);
    }
  });
});

describe('who may read it', () => {
  test('members only: 403 for credentials or a non-member, 404 for an unknown product or item', async () => {
    const { owner, member, outsider, product, base } = await setup();
    const item = await makeItem(t.app, owner, product.id);
    for (const url of [`${base}/activities.json`, `${base}/items/${item.number}/activities.json`]) {
      assertError(await client(t.app, outsider).get(url), 403, { message: /not a member/, label: url });
      assertError(await client(t.app, { auth: 'Basic eDp5' }).get(url), 403, { message: /Invalid or unknown user/ });
      assert.equal((await client(t.app, member).get(url)).statusCode, 200);
    }
    assertError(await client(t.app, outsider).get(`${base}/items/999/activities.json`), 403, { label: 'not a member' });
    assertError(await client(t.app, member).get(`${base}/items/999/activities.json`), 404, { label: 'no such item' });
    assertError(await client(t.app, member).get(`${base}/items/x/activities.json`), 404, { label: 'no number' });
    assertError(await client(t.app, member).get('/api/products/999999/activities.json'), 404, { label: 'product' });
    // Parameters are checked before the item, as on every item route.
    assertError(await client(t.app, member).get(`${base}/items/999/activities.json`, { limit: '0' }), 400, {
      errors: ['limit'],
    });
  });

  test("an item's log is its own, a product's its own", async () => {
    const a = await setup();
    const b = await setup();
    const itemA = await makeItem(t.app, a.owner, a.product.id, { title: 'In A' });
    await makeItem(t.app, b.owner, b.product.id, { title: 'In B' });
    await makeItem(t.app, b.owner, b.product.id, { title: 'In B too' });
    const { activities: inA, total } = await activities(a.owner, a.base);
    assert.deepEqual([inA.map((x) => x.meta.changes.title.after), total], [['In A'], 1]);
    assert.equal((await activities(b.owner, b.base)).total, 2);
    assert.equal((await activities(a.owner, a.base, itemA.number)).total, 1);
    // The viewer's own user shows their own details, as everywhere (docs/INTERFACE.md §4.1).
    const mine = (await activities(a.owner, a.base)).activities[0].user;
    assert.ok('created_at' in mine);
  });
});
