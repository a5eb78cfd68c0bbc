import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from '../src/db/connection.js';
import { moveItem } from '../src/items/index.js';
import {
  assertError,
  client,
  deployTeam,
  makeApp,
  makeItem,
  makeUser,
  readEml,
  signInByMail,
  type TestContext,
} from './helpers.js';
import { olderDatabase } from './older-database.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

type Api = ReturnType<typeof client>;
const numbers = (body: { number: number }[]) => body.map((i) => i.number);

const setup = () => deployTeam(t);

/** Records a deploy through the API and returns its answer; fails the test on any other status. */
async function deploy(api: Api, base: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await api.post(`${base}/deploys.json`, params, headers);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** The list of items with the total it announces. */
async function list(api: Api, base: string, query: Record<string, string | number>) {
  const res = await api.get(`${base}/items.json`, query);
  assert.equal(res.statusCode, 200, res.body);
  return { numbers: numbers(res.json()), total: Number(res.headers['x-sprintly-item-count']) };
}

/** An item's deployed_to entry for one environment. */
async function entry(api: Api, base: string, number: number, environment: string) {
  const item = (await api.get(`${base}/items/${number}.json`)).json();
  return item.deployed_to.find((d: { environment: string }) => d.environment === environment);
}

/** How many rows every table a deploy writes holds (the whole database: each test file has its own). */
async function rowCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['deploys', 'deploy_items', 'item_deployments', 'outbox'] as const) {
    const row = await t.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

/** The outbox rows of one deploy, as (kind, recipient, item numbers). */
async function messagesOf(deployId: number, productId: number) {
  const rows = await t.db
    .selectFrom('outbox')
    .selectAll()
    .where('deploy_id', '=', deployId)
    .orderBy('user_id')
    .execute();
  const items = await t.db.selectFrom('items').select(['id', 'number']).where('product_id', '=', productId).execute();
  const numberOf = new Map(items.map((i) => [i.id, i.number]));
  return rows.map((r) => ({
    kind: r.kind,
    userId: r.user_id,
    numbers: (JSON.parse(r.item_ids) as number[]).map((id) => numberOf.get(id)),
    row: r,
  }));
}

describe('items list: deployed_to and not_deployed_to, failures', () => {
  test('malformed values are a 400 naming each parameter, as for the other list filters', async () => {
    const { api, base, deployer } = await setup();
    const long = 'e'.repeat(256);
    const many = Array.from({ length: 51 }, (_, i) => `env-${i}`).join(',');
    const cases: [Record<string, string>, string[]][] = [
      [{ deployed_to: long }, ['deployed_to']],
      [{ not_deployed_to: many }, ['not_deployed_to']],
      [{ deployed_to: long, not_deployed_to: many, status: 'done' }, ['deployed_to', 'not_deployed_to', 'status']],
      [{ deployed_to: 'prod\u0000' }, ['deployed_to']],
    ];
    for (const [query, errors] of cases) {
      assertError(await api.get(`${base}/items.json`, query), 400, {
        errors,
        label: JSON.stringify(query).slice(0, 80),
      });
    }
    for (const url of [
      `${base}/items.json?deployed_to[]=production`,
      `${base}/items.json?not_deployed_to[x]=production`,
      `${base}/items.json?deployed_to=%FF`,
    ]) {
      const name = url.includes('not_deployed_to') ? 'not_deployed_to' : 'deployed_to';
      assertError(await t.app.inject({ method: 'GET', url, headers: { authorization: deployer.auth } }), 400, {
        errors: [name],
        label: url,
      });
    }
  });

  test('50 environments, each of 255 characters, are accepted; an empty value is no filter', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    const fifty = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(255, 'x')).join(',');
    assert.deepEqual(await list(api, base, { deployed_to: fifty }), { numbers: [], total: 0 });
    assert.deepEqual(await list(api, base, { not_deployed_to: fifty }), { numbers: [1], total: 1 });
    assert.deepEqual(await list(api, base, { deployed_to: '', not_deployed_to: ' , ' }), { numbers: [1], total: 1 });
  });
});

describe('items list: deployed_to and not_deployed_to', () => {
  /**
   * 1 backlog, deployed to staging and production; 2 completed, production; 3 completed, staging;
   * 4 accepted, nowhere; 5 accepted, tagged ui, production; 6 a story (backlog) deployed to
   * production with sub-item 7 (completed, staging); 8 archived, production.
   */
  async function deployedProduct() {
    const s = await setup();
    const { deployer, product, api, base } = s;
    await makeItem(t.app, deployer, product.id);
    await makeItem(t.app, deployer, product.id, { status: 'completed' });
    await makeItem(t.app, deployer, product.id, { status: 'completed' });
    await makeItem(t.app, deployer, product.id, { status: 'accepted' });
    await makeItem(t.app, deployer, product.id, { status: 'accepted', tags: 'ui' });
    await makeItem(t.app, deployer, product.id, { type: 'story', who: 'user', what: 'a thing', why: 'reasons' });
    await makeItem(t.app, deployer, product.id, { status: 'completed', parent: 6 });
    await makeItem(t.app, deployer, product.id);
    await deploy(api, base, { environment: 'staging', numbers: '1,3,7', version: '1' });
    await deploy(api, base, { environment: 'production', numbers: '1,2,5,6,8', version: '1' });
    await api.delete(`${base}/items/8.json`);
    return s;
  }

  test('deployed_to and not_deployed_to, alone and with a status, with exact totals', async () => {
    const { api, base } = await deployedProduct();
    const all = 'backlog,in-progress,completed,accepted';
    assert.deepEqual(await list(api, base, { deployed_to: 'production' }), { numbers: [1, 6], total: 2 });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all }), {
      numbers: [1, 6, 2, 5],
      total: 4,
    });
    assert.deepEqual(await list(api, base, { not_deployed_to: 'production', status: all }), {
      numbers: [3, 4],
      total: 2,
    });
    // Done but not shipped.
    assert.deepEqual(await list(api, base, { status: 'completed,accepted', not_deployed_to: 'production' }), {
      numbers: [3, 4],
      total: 2,
    });
    // A list of environments: deployed to any of them; not deployed to any of them.
    assert.deepEqual(await list(api, base, { deployed_to: 'staging,production', status: all }), {
      numbers: [1, 6, 2, 3, 5],
      total: 5,
    });
    assert.deepEqual(await list(api, base, { not_deployed_to: 'staging,production', status: all }), {
      numbers: [4],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'staging', not_deployed_to: 'production', status: all }), {
      numbers: [3],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'nowhere', status: all }), { numbers: [], total: 0 });
    // Names are exact.
    assert.deepEqual(await list(api, base, { deployed_to: 'Production', status: all }), { numbers: [], total: 0 });
  });

  test('combined with type, tags, people, order_by, offset and limit', async () => {
    const { api, base, deployer } = await deployedProduct();
    const all = 'backlog,in-progress,completed,accepted';
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all, tags: 'ui' }), {
      numbers: [5],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { not_deployed_to: 'production', status: all, tags: 'ui' }), {
      numbers: [],
      total: 0,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all, type: 'story' }), {
      numbers: [6],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all, created_by: deployer.user.id }), {
      numbers: [1, 6, 2, 5],
      total: 4,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all, order_by: 'newest' }), {
      numbers: [6, 5, 2, 1],
      total: 4,
    });
    assert.deepEqual(
      await list(api, base, { deployed_to: 'production', status: all, order_by: 'newest', offset: 1, limit: 2 }),
      { numbers: [5, 2], total: 4 },
    );
    assert.deepEqual(
      await list(api, base, { not_deployed_to: 'staging', status: all, order_by: 'oldest', offset: 1, limit: 2 }),
      { numbers: [4, 5], total: 4 },
    );
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: all, offset: 4 }), {
      numbers: [],
      total: 4,
    });
  });

  test('children=true lists the matching stories with all their sub-items, counted alike', async () => {
    const { api, base } = await deployedProduct();
    // Story 6 is deployed to production, its sub-item 7 only to staging: it comes with the story.
    assert.deepEqual(await list(api, base, { deployed_to: 'production', children: 'true' }), {
      numbers: [1, 6, 7],
      total: 3,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', children: 'true', offset: 1, limit: 1 }), {
      numbers: [6],
      total: 3,
    });
    assert.deepEqual(await list(api, base, { not_deployed_to: 'staging', children: 'true' }), {
      numbers: [6, 7],
      total: 2,
    });
  });

  test('totals follow deploys at once (remembered totals are per version of the items)', async () => {
    const { api, base } = await deployedProduct();
    const query = { status: 'completed,accepted', not_deployed_to: 'production' };
    assert.deepEqual(await list(api, base, query), { numbers: [3, 4], total: 2 });
    await deploy(api, base, { environment: 'production', numbers: '3', version: '2' });
    assert.deepEqual(await list(api, base, query), { numbers: [4], total: 1 });
    assert.deepEqual(await list(api, base, { status: 'completed', deployed_to: 'production' }), {
      numbers: [2, 3],
      total: 2,
    });
  });
});

describe('rollback: failures', () => {
  test('a malformed rollback or dry_run flag is a 400 naming it; a rollback needs version and place', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    await deploy(api, base, { environment: 'production', numbers: '1', version: '1' });
    const before = await rowCounts();
    for (const value of ['yes', 'on', 'maybe', '2']) {
      assertError(
        await api.post(`${base}/deploys.json`, { environment: 'production', version: '1', rollback: value }),
        400,
        { errors: ['rollback'], label: value },
      );
      assertError(
        await api.post(`${base}/deploys.json`, { environment: 'production', numbers: '1', dry_run: value }),
        400,
        { errors: ['dry_run'], label: value },
      );
    }
    assertError(
      await api.postJson(`${base}/deploys.json`, { environment: 'production', version: '1', rollback: { yes: 1 } }),
      400,
      { errors: ['rollback'] },
    );
    assertError(await api.post(`${base}/deploys.json`, { environment: 'production', rollback: 'true' }), 400, {
      errors: ['version'],
    });
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'production', version: ' ', rollback: '1', numbers: 'x' }),
      400,
      { errors: ['version', 'numbers'] },
    );
    assertError(await api.post(`${base}/deploys.json`, { version: '1', rollback: 'true' }), 403, { errors: [] });
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'production', version: '1', rollback: 'false' }),
      403,
      { errors: [] },
    );
    assert.deepEqual(await rowCounts(), before);
  });

  test('422 when no deploy to the environment had the version, or all were rolled back; nothing written', async () => {
    const { api, base, deployer, alice, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await deploy(api, base, { environment: 'production', numbers: '1', version: '1' });
    await deploy(api, base, { environment: 'production', numbers: '1', version: '2' });
    await deploy(api, base, { environment: 'staging', numbers: '1', version: '3' });
    const before = await rowCounts();
    for (const params of [
      { environment: 'production', version: '3' }, // deployed, but to staging
      { environment: 'qa', version: '1' },
      { environment: 'production', version: '1.0' },
    ]) {
      assertError(await api.post(`${base}/deploys.json`, { ...params, rollback: 'true' }), 422, {
        message: /nothing to roll back to/,
        label: JSON.stringify(params),
      });
      assertError(await api.post(`${base}/deploys.json`, { ...params, rollback: 'true', dry_run: 'true' }), 422, {
        message: /without rollback/,
      });
    }
    assert.deepEqual(await rowCounts(), before);

    // Rolled back to 1, version 2 is undone: rolling "back" to it is refused, deploying it again is not.
    await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'production', version: '2', rollback: 'true' }),
      422,
      { message: /version 2/ },
    );
    const again = await deploy(api, base, { environment: 'production', numbers: '1', version: '2' });
    assert.equal(again.rollback, false);
    assert.deepEqual(await entry(api, base, 1, 'production'), {
      environment: 'production',
      version: '2',
      deployed_at: again.created_at,
      deploy_id: again.id,
      reverted: false,
    });
  });
});

describe('rollback', () => {
  /**
   * Production: deploy A (version 1) of items 1 and 2, deploy B (version 2) of items 2 and 3.
   * Staging got item 3 in version 2 as well. Alice follows 1 and 2, Bob 3, and the deployer all.
   */
  async function twoVersions() {
    const s = await setup();
    const { api, base, deployer, alice, bob, product } = s;
    await makeItem(t.app, deployer, product.id, { title: 'Login', assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { title: 'Signup', assigned_to: alice.user.id, status: 'completed' });
    await makeItem(t.app, deployer, product.id, { title: 'Search', assigned_to: bob.user.id, status: 'completed' });
    const a = await deploy(api, base, { environment: 'production', numbers: '1,2', version: '1' });
    const b = await deploy(api, base, { environment: 'production', numbers: '2,3', version: '2' });
    const staging = await deploy(api, base, { environment: 'staging', numbers: '3', version: '2' });
    return { ...s, a, b, staging };
  }

  test('restores items of the earlier version and reverts the others; the undone deploy shows it', async () => {
    const { api, base, a, b, staging } = await twoVersions();
    const before = await rowCounts();
    const rollback = await deploy(api, base, {
      environment: 'production',
      version: '1',
      rollback: 'true',
      notes: 'Signup broke',
    });
    assert.equal(rollback.rollback, true);
    assert.equal(rollback.reverted, false);
    assert.equal(rollback.version, '1');
    assert.equal(rollback.notes, 'Signup broke');
    assert.equal(rollback.dry_run, false);
    assert.ok(!('recipients' in rollback));
    assert.deepEqual(rollback.unknown_numbers, []);
    // Its items: those whose production entry it changed (2 restored, 3 reverted), not 1.
    assert.deepEqual(numbers(rollback.items), [2, 3]);

    assert.deepEqual(await entry(api, base, 1, 'production'), {
      environment: 'production',
      version: '1',
      deployed_at: a.created_at,
      deploy_id: a.id,
      reverted: false,
    });
    assert.deepEqual(await entry(api, base, 2, 'production'), {
      environment: 'production',
      version: '1',
      deployed_at: a.created_at,
      deploy_id: a.id,
      reverted: false,
    });
    assert.deepEqual(await entry(api, base, 3, 'production'), {
      environment: 'production',
      version: '2',
      deployed_at: b.created_at,
      deploy_id: b.id,
      reverted: true,
      reverted_at: rollback.created_at,
      reverted_by: rollback.id,
    });
    // Other environments are untouched.
    assert.deepEqual(await entry(api, base, 3, 'staging'), {
      environment: 'staging',
      version: '2',
      deployed_at: staging.created_at,
      deploy_id: staging.id,
      reverted: false,
    });

    // deployed_to.json shows the same entries.
    const all = await api.get(`${base}/items/3/deployed_to.json`);
    assert.deepEqual(all.json(), (await api.get(`${base}/items/3.json`)).json().deployed_to);
    assert.equal(all.headers['x-sprintly-deployed-to-count'], '2');

    // The deploys list: B undone by the rollback, the rollback marked as one.
    const deploys = (await api.get(`${base}/deploys.json`, { environment: 'production' })).json();
    assert.deepEqual(
      deploys.map((d: { id: number; rollback: boolean; reverted: boolean; reverted_by?: number }) => [
        d.id,
        d.rollback,
        d.reverted,
        d.reverted_by,
      ]),
      [
        [a.id, false, false, undefined],
        [b.id, false, true, rollback.id],
        [rollback.id, true, false, undefined],
      ],
    );
    assert.equal(deploys[1].reverted_at, rollback.created_at);

    // Item 3 left production: it drops out of deployed_to and counts for not_deployed_to.
    const done = { status: 'completed,accepted' };
    assert.deepEqual(await list(api, base, { ...done, deployed_to: 'production' }), { numbers: [2], total: 1 });
    assert.deepEqual(await list(api, base, { ...done, not_deployed_to: 'production' }), { numbers: [3], total: 1 });
    assert.deepEqual(await list(api, base, { ...done, deployed_to: 'staging' }), { numbers: [3], total: 1 });

    const after = await rowCounts();
    assert.equal(after.deploys, before.deploys + 1);
    assert.equal(after.deploy_items, before.deploy_items + 2);
    assert.equal(after.item_deployments, before.item_deployments);
  });

  test('followers of the items it rolled back get one message each, of its own kind; the deployer none', async () => {
    const { api, base, alice, bob, product, deployer } = await twoVersions();
    const carol = await makeUser(t.db);
    await client(t.app, carol).post(`${base}/items/1/follow.json`); // not a member: no mail anyway
    await client(t.app, bob).post(`${base}/items/2/follow.json`);
    const rollback = await deploy(api, base, {
      environment: 'production',
      version: '1',
      rollback: 'true',
      notes: 'Signup *broke*',
    });
    const messages = await messagesOf(rollback.id, product.id);
    assert.deepEqual(
      messages.map((m) => [m.kind, m.userId, m.numbers]),
      [
        ['rollback', alice.user.id, [2]],
        ['rollback', bob.user.id, [2, 3]],
      ],
    );
    assert.ok(!messages.some((m) => m.userId === deployer.user.id));
    assert.equal(rollback.emailed, 2);
    assert.equal(messages[1].row.subject, '[Rocket] Rolled back production to 1: #2 Signup and 1 more');

    await t.app.outbox.deliverDue();
    const sent = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', rollback.id).execute();
    assert.deepEqual(
      sent.map((m) => m.status),
      ['sent', 'sent'],
    );
    const bobs = sent.find((m) => m.user_id === bob.user.id)!;
    const mail = await readEml(
      fs.readFileSync(path.join(t.dataDir, 'mail', `${String(bobs.id).padStart(8, '0')}.eml`)),
    );
    assert.match(mail.text, /Dee Ployer rolled production back to version 1 on /);
    assert.match(mail.text, /#2 \[task\] Signup \(completed\)\s+Back to version 1, deployed /);
    assert.match(
      mail.text,
      /#3 \[task\] Search \(completed\)\s+No longer in production: no earlier deploy there had it\./,
    );
    assert.match(mail.text, /Signup \*broke\*/);
    assert.match(mail.html, /Signup <em>broke<\/em>/);
    assert.ok(mail.headers.get('list-unsubscribe')?.includes('/unsubscribe/'));
    assert.equal(mail.headers.get('list-unsubscribe-post'), 'List-Unsubscribe=One-Click');

    // Its unsubscribe link works like a deploy message's.
    const link = /\/unsubscribe\/[^>\s]+/.exec(mail.headers.get('list-unsubscribe')!)![0];
    const res = await t.app.inject({ method: 'POST', url: link });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().unfollowed, [2, 3]);
  });

  test('a repeated version without rollback=true is an ordinary redeploy', async () => {
    const { api, base, a } = await twoVersions();
    const again = await deploy(api, base, { environment: 'production', numbers: '1', version: '1' });
    assert.equal(again.rollback, false);
    const deploys = (await api.get(`${base}/deploys.json`, { environment: 'production' })).json();
    assert.ok(deploys.every((d: { reverted: boolean }) => !d.reverted));
    assert.deepEqual(await entry(api, base, 1, 'production'), {
      environment: 'production',
      version: '1',
      deployed_at: again.created_at,
      deploy_id: again.id,
      reverted: false,
    });
    assert.equal((await entry(api, base, 2, 'production')).version, '2');
    assert.notEqual(again.id, a.id);
  });

  test('a second rollback: back past an earlier rollback, and to the version a rollback restored', async () => {
    const { api, base, a, b, product, bob } = await twoVersions();
    const c = await deploy(api, base, { environment: 'production', numbers: '3', version: '3' });
    // Back to 2: C undone, item 3 back to B.
    const toTwo = await deploy(api, base, { environment: 'production', version: '2', rollback: 'true' });
    assert.deepEqual(numbers(toTwo.items), [3]);
    assert.deepEqual(await entry(api, base, 3, 'production'), {
      environment: 'production',
      version: '2',
      deployed_at: b.created_at,
      deploy_id: b.id,
      reverted: false,
    });
    // Then back to 1: B and the first rollback undone; 2 back to A, 3 reverted by this one.
    const toOne = await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assert.deepEqual(numbers(toOne.items), [2, 3]);
    assert.deepEqual(await entry(api, base, 2, 'production'), {
      environment: 'production',
      version: '1',
      deployed_at: a.created_at,
      deploy_id: a.id,
      reverted: false,
    });
    const three = await entry(api, base, 3, 'production');
    assert.equal(three.reverted, true);
    assert.equal(three.reverted_by, toOne.id);
    const states = (await api.get(`${base}/deploys.json`, { environment: 'production' }))
      .json()
      .map((d: { id: number; reverted_by?: number }) => [d.id, d.reverted_by]);
    assert.deepEqual(states, [
      [a.id, undefined],
      [b.id, toOne.id],
      [c.id, toTwo.id],
      [toTwo.id, toOne.id],
      [toOne.id, undefined],
    ]);
    // Bob follows item 3: one message per rollback.
    assert.deepEqual(
      (await messagesOf(toTwo.id, product.id)).map((m) => [m.userId, m.numbers]),
      [[bob.user.id, [3]]],
    );
    assert.deepEqual((await messagesOf(toOne.id, product.id)).find((m) => m.userId === bob.user.id)?.numbers, [3]);

    // New work on top, then back to 1 once more: the target is the latest rollback to 1, item 3
    // (reverted already, then deployed again) is reverted by this one, item 1 stays as it is.
    const d = await deploy(api, base, { environment: 'production', numbers: '1,3', version: '4' });
    const again = await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assert.deepEqual(numbers(again.items), [1, 3]);
    assert.deepEqual(await entry(api, base, 1, 'production'), {
      environment: 'production',
      version: '1',
      deployed_at: a.created_at,
      deploy_id: a.id,
      reverted: false,
    });
    assert.equal((await entry(api, base, 3, 'production')).reverted_by, again.id);
    const undone = (
      await api.get(`${base}/deploys.json`, { environment: 'production', order_by: 'newest', limit: 2 })
    ).json();
    assert.deepEqual(
      undone.map((x: { id: number; reverted_by?: number }) => [x.id, x.reverted_by]),
      [
        [again.id, undefined],
        [d.id, again.id],
      ],
    );
  });

  test('a rollback to the version the environment runs changes nothing and mails nobody, but is recorded', async () => {
    const { api, base, b, product } = await twoVersions();
    const rollback = await deploy(api, base, { environment: 'production', version: '2', rollback: 'true' });
    assert.deepEqual(rollback.items, []);
    assert.equal(rollback.emailed, 0);
    assert.deepEqual(await messagesOf(rollback.id, product.id), []);
    assert.equal((await entry(api, base, 3, 'production')).deploy_id, b.id);
  });

  test('numbers are optional on a rollback, checked when given, and do not choose its items', async () => {
    const { api, base } = await twoVersions();
    assertError(
      await api.post(`${base}/deploys.json`, {
        environment: 'production',
        version: '1',
        rollback: 'true',
        numbers: '1,x',
      }),
      400,
      { errors: ['numbers'] },
    );
    const rollback = await deploy(api, base, {
      environment: 'production',
      version: '1',
      rollback: '1',
      numbers: '1, 77, 3, 77',
    });
    assert.deepEqual(numbers(rollback.items), [2, 3]);
    assert.deepEqual(rollback.unknown_numbers, [77]);
  });
});

describe('receipt and dry run', () => {
  test('unknown_numbers in request order without repeats, and emailed counting the messages queued', async () => {
    const { api, base, deployer, alice, bob, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { assigned_to: bob.user.id });
    await makeItem(t.app, deployer, product.id);
    const receipt = await deploy(api, base, {
      environment: 'production',
      numbers: '9, 2, 99999999999, 1, 9, 3, 7',
      version: '1',
    });
    assert.deepEqual(receipt.unknown_numbers, [9, 99999999999, 7]);
    assert.deepEqual(numbers(receipt.items), [1, 2, 3]);
    assert.equal(receipt.emailed, 2);
    assert.equal((await messagesOf(receipt.id, product.id)).length, 2);
    assert.equal(receipt.dry_run, false);
    assert.ok(!('recipients' in receipt));
    assert.equal(receipt.rollback, false);
    // None known is still a 400.
    assertError(await api.post(`${base}/deploys.json`, { environment: 'production', numbers: '50,51' }), 400, {
      message: /None of the numbers/,
    });
  });

  test('an Idempotency-Key repeat answers the first receipt, though an unknown number names an item now', async () => {
    const { api, base, deployer, alice, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    const headers = { 'idempotency-key': 'release-42' };
    const first = await deploy(api, base, { environment: 'production', numbers: '2,1', version: '42' }, headers);
    assert.deepEqual(first.unknown_numbers, [2]);
    assert.equal(first.emailed, 1);
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id }); // number 2 exists now
    const before = await rowCounts();
    const again = await deploy(api, base, { environment: 'production', numbers: '1,2', version: '42' }, headers);
    assert.equal(again.id, first.id);
    assert.deepEqual(again.unknown_numbers, [2]);
    assert.equal(again.emailed, 1);
    assert.equal(again.dry_run, false);
    assert.deepEqual(numbers(again.items), [1]);
    assert.deepEqual(await rowCounts(), before);

    // A rollback is keyed the same way, its own flag part of what the key stands for.
    await deploy(api, base, { environment: 'production', numbers: '1', version: '43' });
    const rollbackKey = { 'idempotency-key': 'rollback-42' };
    const rollback = await deploy(
      api,
      base,
      { environment: 'production', version: '42', rollback: 'true' },
      rollbackKey,
    );
    const repeat = await deploy(api, base, { environment: 'production', version: '42', rollback: 'true' }, rollbackKey);
    assert.equal(repeat.id, rollback.id);
    assert.equal(repeat.rollback, true);
    assert.equal(repeat.emailed, rollback.emailed);
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'production', version: '42' }, rollbackKey),
      403,
      { errors: [] },
    );
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'production', numbers: '1', version: '42' }, rollbackKey),
      422,
      { message: /Idempotency-Key/ },
    );
  });

  test('a dry run writes nothing, queues nothing, and lists whom it would mail about what', async () => {
    const { api, base, deployer, alice, bob, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { assigned_to: bob.user.id });
    await client(t.app, alice).post(`${base}/items/2/follow.json`);
    await makeItem(t.app, deployer, product.id);
    const itemsBefore = (await api.get(`${base}/items.json`)).json();
    const before = await rowCounts();
    const headers = { 'idempotency-key': 'try-1' };
    const res = await api.post(
      `${base}/deploys.json`,
      { environment: 'production', numbers: '3,2,1,8', version: '1.0', notes: 'n', dry_run: 'true' },
      headers,
    );
    assert.equal(res.statusCode, 200, res.body);
    const receipt = res.json();
    assert.equal(receipt.id, null);
    assert.equal(receipt.dry_run, true);
    assert.equal(receipt.rollback, false);
    assert.equal(receipt.environment, 'production');
    assert.equal(receipt.version, '1.0');
    assert.match(receipt.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.equal(receipt.user.id, deployer.user.id);
    assert.deepEqual(numbers(receipt.items), [1, 2, 3]);
    assert.deepEqual(receipt.unknown_numbers, [8]);
    assert.equal(receipt.emailed, 2);
    assert.deepEqual(
      receipt.recipients,
      [
        { email: alice.email, first_name: 'Alice', last_name: 'A', numbers: [1, 2] },
        { email: bob.email, first_name: 'Bob', last_name: 'B', numbers: [2] },
      ].sort((x, y) => (x.email < y.email ? -1 : 1)),
    );
    assert.deepEqual(await rowCounts(), before);
    assert.deepEqual((await api.get(`${base}/items.json`)).json(), itemsBefore);

    // Its key was not used up: the real deploy with other parameters goes through, and a dry run
    // with a key used already is still a dry run.
    const real = await deploy(api, base, { environment: 'production', numbers: '1', version: '1.0' }, headers);
    assert.equal(real.dry_run, false);
    const dry = await deploy(api, base, { environment: 'staging', numbers: '2', dry_run: '1' }, headers);
    assert.equal(dry.id, null);
    assert.equal(dry.environment, 'staging');
  });

  test('deploys, rollbacks and dry runs leave out whoever chose other environments for their mail', async () => {
    const { api, base, deployer, alice, bob, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { assigned_to: bob.user.id });
    const chose = await client(t.app, bob).post(`${base}/notifications.json`, { environments: 'staging' });
    assert.equal(chose.statusCode, 200, chose.body);
    await deploy(api, base, { environment: 'production', numbers: '1,2', version: '1' });
    const dry = await deploy(api, base, { environment: 'production', numbers: '1,2', version: '2', dry_run: 'true' });
    assert.deepEqual(
      dry.recipients.map((r: { email: string }) => r.email),
      [alice.email],
    );
    const real = await deploy(api, base, { environment: 'production', numbers: '1,2', version: '2' });
    assert.equal(real.emailed, 1);
    const rollback = await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assert.deepEqual(
      (await messagesOf(rollback.id, product.id)).map((m) => [m.userId, m.numbers]),
      [[alice.user.id, [1]]],
    );
    const staging = await deploy(api, base, { environment: 'staging', numbers: '2', version: '1', dry_run: 'true' });
    assert.deepEqual(
      staging.recipients.map((r: { email: string }) => r.email),
      [bob.email],
    );
  });

  test('a dry run of a rollback shows its items and recipients and changes nothing', async () => {
    const { api, base, deployer, alice, bob, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { assigned_to: bob.user.id });
    await deploy(api, base, { environment: 'production', numbers: '1', version: '1' });
    await deploy(api, base, { environment: 'production', numbers: '1,2', version: '2' });
    const before = await rowCounts();
    const dry = await deploy(api, base, { environment: 'production', version: '1', rollback: 'true', dry_run: 'true' });
    assert.equal(dry.id, null);
    assert.equal(dry.rollback, true);
    assert.deepEqual(numbers(dry.items), [1, 2]);
    assert.deepEqual(
      dry.recipients.map((r: { email: string; numbers: number[] }) => [r.email, r.numbers]).sort(),
      [
        [alice.email, [1]],
        [bob.email, [2]],
      ].sort(),
    );
    assert.deepEqual(await rowCounts(), before);
    assert.equal((await entry(api, base, 2, 'production')).reverted, false);
    // The real one does what the dry run said.
    const real = await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assert.deepEqual(numbers(real.items), numbers(dry.items));
    assert.equal(real.emailed, dry.emailed);
  });
});

describe('the pages', () => {
  test('the deploys page marks rollbacks and undone deploys; an item page its reverted environments', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id, { title: 'Alpha' });
    await makeItem(t.app, deployer, product.id, { title: 'Beta' });
    await deploy(api, base, { environment: 'production', numbers: '1', version: 'v1' });
    await deploy(api, base, { environment: 'production', numbers: '2', version: 'v2' });
    await deploy(api, base, { environment: 'production', version: 'v1', rollback: 'true' });
    const cookie = await signInByMail(t, deployer.email);
    const pages = `/app/products/${product.id}`;
    const deploys = await t.app.inject({ method: 'GET', url: `${pages}/deploys`, headers: { cookie } });
    assert.equal(deploys.statusCode, 200, deploys.body);
    const sections = deploys.body.split('<section class="deploy"').slice(1);
    assert.equal(sections.length, 3);
    assert.match(sections[0], /v1<\/span> <span class="muted">rollback<\/span>/);
    assert.match(sections[1], /v2<\/span><\/h2>[\s\S]*rolled back \d{4}-/);
    assert.doesNotMatch(sections[2], /rolled back|rollback/);
    const item = await t.app.inject({ method: 'GET', url: `${pages}/items/2`, headers: { cookie } });
    assert.equal(item.statusCode, 200, item.body);
    assert.match(
      item.body,
      new RegExp(
        String.raw`<li class="reverted">.*\n<p><strong class="environment">production</strong> ` +
          String.raw`<a class="version" href="[^"]+">v2</a>.*\n` +
          '<p class="reverted-note"><strong>Rolled back</strong> <time',
      ),
    );
  });
});

describe('upgrading a database made before rollbacks', () => {
  test('deployments get their product and status, deploys their mail count, after later migrations', async () => {
    // Every migration but this change's (and the one that indexes its columns), as a database that
    // took the others first has them.
    const { options, old, id } = await olderDatabase([
      '2026_11_23_0010_deployed_where',
      '2026_11_23_0070_deployed_status',
    ]);
    const at = '2026-01-01T00:00:00+00:00';
    const user = await id('users', {
      email: 'old@example.com',
      first_name: 'O',
      last_name: 'Ld',
      api_key_hash: 'h',
      created_at: at,
    });
    const product = await id('products', {
      name: 'Old',
      archived: 0,
      created_at: at,
      last_number: 2,
      items_version: 0,
    });
    const item = (number: number) => ({
      product_id: product,
      number,
      type: 'task',
      status: 3,
      title: `Item ${number}`,
      description: '',
      score: '~',
      archived: 0,
      created_by_id: user,
      sort: number * 65536,
      created_at: at,
      last_modified: at,
      last_activity: at,
    });
    const items = [await id('items', item(1)), await id('items', item(2))];
    const deploy = await id('deploys', {
      product_id: product,
      user_id: user,
      environment: 'production',
      version: '1',
      notes: '',
      created_at: at,
    });
    const quiet = await id('deploys', {
      product_id: product,
      user_id: user,
      environment: 'staging',
      version: '1',
      notes: '',
      created_at: at,
    });
    for (const [deployId, itemId, environment] of [
      [deploy, items[0], 'production'],
      [deploy, items[1], 'production'],
      [quiet, items[1], 'staging'],
    ] as const) {
      await old.insertInto('deploy_items').values({ deploy_id: deployId, item_id: itemId }).execute();
      await old
        .insertInto('item_deployments')
        .values({ item_id: itemId, environment, deploy_id: deployId, version: '1', deployed_at: at })
        .execute();
    }
    for (const n of [1, 2]) {
      await old
        .insertInto('outbox')
        .values({
          deploy_id: deploy,
          user_id: user,
          to_address: 'old@example.com',
          subject: 's',
          item_ids: '[]',
          message_id: `<m${n}@x>`,
          status: 'sent',
          attempts: 1,
          next_attempt_at: at,
          retry_until: at,
          created_at: at,
        })
        .execute();
    }
    await old.destroy();

    const db = await openDatabase(options);
    try {
      const deployments = await db
        .selectFrom('item_deployments')
        .select(['item_id', 'environment', 'product_id', 'reverted_at', 'reverted_by'])
        .orderBy('item_id')
        .orderBy('environment')
        .execute();
      assert.deepEqual(deployments, [
        { item_id: items[0], environment: 'production', product_id: product, reverted_at: null, reverted_by: null },
        { item_id: items[1], environment: 'production', product_id: product, reverted_at: null, reverted_by: null },
        { item_id: items[1], environment: 'staging', product_id: product, reverted_at: null, reverted_by: null },
      ]);
      const deploys = await db
        .selectFrom('deploys')
        .select(['id', 'rollback', 'reverted_at', 'unknown_numbers', 'emailed'])
        .orderBy('id')
        .execute();
      assert.deepEqual(deploys, [
        { id: deploy, rollback: 0, reverted_at: null, unknown_numbers: '[]', emailed: 2 },
        { id: quiet, rollback: 0, reverted_at: null, unknown_numbers: '[]', emailed: 0 },
      ]);
      const restored = await db.selectFrom('deploy_items').select('restored_deploy_id').distinct().execute();
      assert.deepEqual(restored, [{ restored_deploy_id: null }]);
    } finally {
      await db.destroy();
    }
  });
});

describe('deployed_to follows status changes', () => {
  test('an item deployed, moved (by update, on the board), rolled back is listed under its new status', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id, { title: 'Done', status: 'completed' });
    await makeItem(t.app, deployer, product.id, { title: 'Also done', status: 'completed' });
    await deploy(api, base, { environment: 'production', numbers: '1,2', version: '1' });
    await deploy(api, base, { environment: 'production', numbers: '2', version: '2' });
    assert.deepEqual(await list(api, base, { deployed_to: 'production' }), { numbers: [], total: 0 });

    assert.equal((await api.post(`${base}/items/1.json`, { status: 'backlog' })).statusCode, 200);
    assert.deepEqual(await list(api, base, { deployed_to: 'production' }), { numbers: [1], total: 1 });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: 'completed' }), {
      numbers: [2],
      total: 1,
    });

    const scope = {
      user: await t.db.selectFrom('users').selectAll().where('id', '=', deployer.user.id).executeTakeFirstOrThrow(),
      product: await t.db.selectFrom('products').selectAll().where('id', '=', product.id).executeTakeFirstOrThrow(),
      admin: true,
    };
    await t.db
      .transaction()
      .execute((trx) =>
        moveItem(trx, scope, 2, { to: 'status', status: 'in-progress' }, t.app.listCounts, t.app.config),
      );
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: 'in-progress' }), {
      numbers: [2],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: 'completed' }), {
      numbers: [],
      total: 0,
    });

    // The rollback restores item 2's entry to version 1: still deployed, still in progress.
    await deploy(api, base, { environment: 'production', version: '1', rollback: 'true' });
    assert.deepEqual(await list(api, base, { deployed_to: 'production' }), { numbers: [1, 2], total: 2 });
    assert.equal((await api.post(`${base}/items/2.json`, { status: 'accepted' })).statusCode, 200);
    assert.deepEqual(await list(api, base, { deployed_to: 'production', status: 'accepted' }), {
      numbers: [2],
      total: 1,
    });
    assert.deepEqual(await list(api, base, { deployed_to: 'production', not_deployed_to: 'staging' }), {
      numbers: [1],
      total: 1,
    });
  });
});
