import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  assertError,
  client,
  deployTeam,
  makeApp,
  makeItem,
  makeUser,
  type ParsedMail,
  readEml,
  type TestContext,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const setup = () => deployTeam(t);

/** The .eml files written so far for one deploy's messages, by recipient address. */
async function deliveredFor(deployId: number): Promise<Map<string, ParsedMail>> {
  await t.app.outbox.deliverDue();
  const rows = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deployId).execute();
  const files = new Map<string, ParsedMail>();
  for (const row of rows) {
    assert.equal(row.status, 'sent');
    const file = path.join(t.dataDir, 'mail', `${String(row.id).padStart(8, '0')}.eml`);
    const email = /<([^>]+)>$/.exec(row.to_address)![1];
    files.set(email, await readEml(fs.readFileSync(file)));
  }
  return files;
}

describe('create deploy: failures', () => {
  test('missing or empty environment or numbers is 403 (docs/INTERFACE.md §7.8, §3)', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    for (const params of [
      { numbers: '1' },
      { environment: 'prod' },
      { environment: '', numbers: '1' },
      { environment: 'prod', numbers: ' , ' },
    ]) {
      assertError(await api.post(`${base}/deploys.json`, params), 403, { errors: [], label: JSON.stringify(params) });
    }
  });

  test('a number that is not an integer is 400; no existing item is 400; nothing written', async () => {
    const { api, base, deployer, alice, product } = await setup();
    const item = await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    for (const numbers of ['1,abc', '1.5', '-1']) {
      assertError(await api.post(`${base}/deploys.json`, { environment: 'prod', numbers }), 400, {
        errors: ['numbers'],
        label: numbers,
      });
    }
    assertError(await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '77,78' }), 400, {
      message: /none of the numbers/i,
    });
    assert.deepEqual((await api.get(`${base}/deploys.json`)).json(), []);
    // A deploy of item 1 would have queued a message to alice, who follows it.
    assert.deepEqual(await t.db.selectFrom('outbox').select('id').where('user_id', '=', alice.user.id).execute(), []);
    const after = (await api.get(`${base}/items/1.json`)).json();
    assert.deepEqual(after.deployed_to, []);
    assert.equal(after.last_activity, item.last_activity);
  });

  test('too long environment or version is 400', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    assertError(await api.post(`${base}/deploys.json`, { environment: 'e'.repeat(256), numbers: '1' }), 400, {
      errors: ['environment'],
    });
    assertError(
      await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1', version: 'v'.repeat(256) }),
      400,
      { errors: ['version'] },
    );
    assert.deepEqual((await api.get(`${base}/deploys.json`)).json(), []);
  });
});

describe('create deploy', () => {
  test('records the deploy with its items, skipping unknown numbers and duplicates', async () => {
    const { api, base, deployer, product } = await setup();
    for (let i = 0; i < 3; i++) await makeItem(t.app, deployer, product.id);
    const res = await api.post(`${base}/deploys.json`, {
      environment: 'production',
      numbers: '3, 1,1,99',
      version: '1.4.2',
      notes: 'Fixes *everything*',
    });
    assert.equal(res.statusCode, 200);
    const deploy = res.json();
    assert.equal(typeof deploy.id, 'number');
    assert.equal(deploy.environment, 'production');
    assert.equal(deploy.version, '1.4.2');
    assert.equal(deploy.notes, 'Fixes *everything*');
    assert.match(deploy.created_at, /\+00:00$/);
    assert.equal(deploy.user.id, deployer.user.id);
    assert.deepEqual(
      deploy.items.map((i: { number: number }) => i.number),
      [1, 3],
    );
    assert.deepEqual(deploy.items[0].deployed_to, [
      {
        environment: 'production',
        version: '1.4.2',
        deployed_at: deploy.created_at,
        deploy_id: deploy.id,
        reverted: false,
      },
    ]);
  });

  test('version and notes default to empty strings; JSON bodies and arrays work', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    const res = await api.postJson(`${base}/deploys.json`, { environment: 'staging', numbers: [1] });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().version, '');
    assert.equal(res.json().notes, '');
  });

  test('deployed_to keeps the latest deploy per environment, latest first; archived items deploy too', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    await api.delete(`${base}/items/1.json`);
    await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '1', version: '1' });
    await api.post(`${base}/deploys.json`, { environment: 'production', numbers: '1', version: '1' });
    const last = (
      await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '1', version: '2' })
    ).json();
    const item = (await api.get(`${base}/items/1.json`)).json();
    assert.deepEqual(
      item.deployed_to.map((d: { environment: string; version: string }) => [d.environment, d.version]),
      [
        ['staging', '2'],
        ['production', '1'],
      ],
    );
    assert.equal(item.deployed_to[0].deploy_id, last.id);
  });

  test('a deploy moves last_activity, not last_modified', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    await t.db
      .updateTable('items')
      .set({ last_modified: '2020-01-01T00:00:00+00:00', last_activity: '2020-01-01T00:00:00+00:00' })
      .where('product_id', '=', product.id)
      .execute();
    const deploy = (await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1' })).json();
    const item = (await api.get(`${base}/items/1.json`)).json();
    assert.equal(item.last_modified, '2020-01-01T00:00:00+00:00');
    assert.equal(item.last_activity, deploy.created_at);
  });
});

describe('deploy email', () => {
  test("one message per follower, listing that follower's items; the deployer gets none", async () => {
    const { api, base, deployer, alice, bob, product } = await setup();
    const carol = await makeUser(t.db);
    // 1: deployer, alice
    await makeItem(t.app, deployer, product.id, { title: 'Login page', assigned_to: alice.user.id });
    await makeItem(t.app, alice, product.id, { title: 'Signup <form>' }); // 2: alice
    await makeItem(t.app, deployer, product.id, { title: 'Nobody else' }); // 3: deployer only
    await client(t.app, bob).post(`${base}/items/2/follow.json`); // 2: + bob
    const deploy = (
      await api.post(`${base}/deploys.json`, {
        environment: 'production',
        numbers: '1,2,3',
        version: '1.4.2',
        notes: 'Big one',
      })
    ).json();

    const mails = await deliveredFor(deploy.id);
    assert.deepEqual([...mails.keys()].sort(), [alice.email, bob.email].sort());
    assert.ok(!mails.has(deployer.email));
    assert.ok(!mails.has(carol.email));

    const a = mails.get(alice.email)!;
    assert.equal(a.headers.get('from'), 'Shiplog <shiplog@items.shiplog.test>');
    assert.equal(a.headers.get('to'), `Alice A <${alice.email}>`);
    assert.equal(a.headers.get('subject'), '[Rocket] Deployed to production: #1 Login page and 1 more');
    assert.match(a.headers.get('message-id')!, /^<deploy-\d+-\d+\.[0-9a-f]+@items\.shiplog\.test>$/);
    assert.ok(!Number.isNaN(Date.parse(a.headers.get('date')!)));
    assert.doesNotMatch(a.raw, /(^|[^\r])\n/, 'CRLF line ends throughout');
    assert.match(a.text, /#1 \[task\] Login page \(backlog\)/);
    assert.match(a.text, /#2 \[task\] Signup <form> \(backlog\)/);
    assert.match(a.text, /http:\/\/shiplog\.test\/i\/\d+\/1\//);
    assert.match(a.text, /version 1\.4\.2/);
    assert.match(a.text, /Big one/);
    assert.match(a.text, /Dee Ployer deployed/);
    assert.doesNotMatch(a.text, /Nobody else/);

    const b = mails.get(bob.email)!;
    assert.equal(b.headers.get('subject'), '[Rocket] Deployed to production: #2 Signup <form>');
    assert.doesNotMatch(b.text, /Login page/);
  });

  test('notes are Markdown up to the longest notes a deploy takes, raw HTML shown as text', async () => {
    const { api, base, deployer, alice, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    const notes = (length: number) => `Fixes *this* <b>now</b> ${'x'.repeat(length - 24)}`;
    const longest = (
      await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1', notes: notes(65535) })
    ).json();
    const mail = (await deliveredFor(longest.id)).get(alice.email)!;
    assert.match(mail.html, /Fixes <em>this<\/em> &lt;b&gt;now&lt;\/b&gt; x+/);
    assert.ok(mail.text.includes(notes(65535)));
  });

  test('a follower who is no longer a member is not emailed', async () => {
    const { api, base, deployer, alice, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await t.db.deleteFrom('memberships').where('user_id', '=', alice.user.id).execute();
    const deploy = (await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1' })).json();
    assert.equal((await deliveredFor(deploy.id)).size, 0);
  });

  test('Idempotency-Key: a repeat returns the first deploy and sends nothing; other parameters are 422', async () => {
    const { api, base, deployer, alice, product } = await setup();
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
    const headers = { 'idempotency-key': 'deploy-abc-123' };
    const first = await api.post(
      `${base}/deploys.json`,
      { environment: 'prod', numbers: '1,2', version: '7' },
      headers,
    );
    const again = await api.post(
      `${base}/deploys.json`,
      { environment: 'prod', numbers: '2,1', version: '7' },
      headers,
    );
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().id, first.json().id);
    const other = await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1', version: '7' }, headers);
    assertError(other, 422, { message: /Idempotency-Key/ });
    assert.equal((await api.get(`${base}/deploys.json`)).json().length, 1);
    assert.equal((await deliveredFor(first.json().id)).size, 1);
    const outbox = await t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', first.json().id).execute();
    assert.equal(outbox.length, 1);
  });
});

describe('list deploys', () => {
  test('oldest first, filtered by environment, with offset and limit', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    const ids: number[] = [];
    for (const env of ['staging', 'production', 'staging', 'staging']) {
      ids.push((await api.post(`${base}/deploys.json`, { environment: env, numbers: '1' })).json().id);
    }
    const all = (await api.get(`${base}/deploys.json`)).json();
    assert.deepEqual(
      all.map((d: { id: number }) => d.id),
      ids,
    );
    assert.equal(all[0].items[0].number, 1);
    assert.equal(all[0].user.id, deployer.user.id);
    const staging = (await api.get(`${base}/deploys.json`, { environment: 'staging' })).json();
    assert.deepEqual(
      staging.map((d: { id: number }) => d.id),
      [ids[0], ids[2], ids[3]],
    );
    const page = (await api.get(`${base}/deploys.json`, { environment: 'staging', offset: 1, limit: 1 })).json();
    assert.deepEqual(
      page.map((d: { id: number }) => d.id),
      [ids[2]],
    );
    const skip = (await api.get(`${base}/deploys.json`, { offset: 3 })).json();
    assert.deepEqual(
      skip.map((d: { id: number }) => d.id),
      [ids[3]],
    );
    for (const q of [{ limit: '0' }, { limit: 'x' }, { offset: '-1' }]) {
      assertError(await api.get(`${base}/deploys.json`, q), 400, { errors: Object.keys(q), label: JSON.stringify(q) });
    }
  });

  test('pages: 20 by default, at most 100, the total in X-Sprintly-Deploy-Count, newest first on request', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    await makeItem(t.app, deployer, product.id);
    const ids: number[] = [];
    for (let i = 0; i < 105; i++) {
      ids.push(
        (
          await api.post(`${base}/deploys.json`, {
            environment: i % 2 ? 'staging' : 'production',
            numbers: '1,2',
            version: `v${i}`,
          })
        ).json().id,
      );
    }
    const first = await api.get(`${base}/deploys.json`);
    assert.equal(first.headers['x-sprintly-deploy-count'], '105');
    assert.deepEqual(
      first.json().map((d: { id: number }) => d.id),
      ids.slice(0, 20),
    );
    const most = await api.get(`${base}/deploys.json`, { limit: 1000, offset: 2 });
    assert.deepEqual(
      most.json().map((d: { id: number }) => d.id),
      ids.slice(2, 102),
    );
    const newest = await api.get(`${base}/deploys.json`, { order_by: 'newest', limit: 3 });
    assert.deepEqual(
      newest.json().map((d: { id: number }) => d.id),
      ids.slice(-3).reverse(),
    );
    const staging = await api.get(`${base}/deploys.json`, {
      environment: 'staging',
      order_by: 'newest',
      offset: 1,
      limit: 2,
    });
    assert.equal(staging.headers['x-sprintly-deploy-count'], '52');
    assert.deepEqual(
      staging.json().map((d: { id: number }) => d.id),
      [ids[101], ids[99]],
    );
    assert.deepEqual((await api.get(`${base}/deploys.json`, { order_by: 'oldest', limit: 1 })).json()[0].id, ids[0]);
    assert.deepEqual((await api.get(`${base}/deploys.json`, { offset: 105 })).json(), []);
    assertError(await api.get(`${base}/deploys.json`, { order_by: 'priority', limit: '0' }), 400, {
      errors: ['limit', 'order_by'],
    });
  });

  test('a page stops before the deploy that would take it past 1,000 items, but never comes back empty', async () => {
    const { api, base, deployer, product } = await setup();
    const numbers = Array.from({ length: 600 }, (_, i) => i + 1);
    await t.db
      .insertInto('items')
      .values(
        numbers.map((number) => ({
          product_id: product.id,
          number,
          type: 'task',
          status: 1,
          title: `Item ${number}`,
          who: null,
          what: null,
          why: null,
          description: '',
          score: '~',
          archived: 0,
          created_by_id: deployer.user.id,
          assigned_to_id: null,
          parent_id: null,
          sort: number * 1000,
          close_reason: null,
          started_at: null,
          closed_at: null,
          accepted_at: null,
          created_at: '2026-01-01T00:00:00+00:00',
          last_modified: '2026-01-01T00:00:00+00:00',
          last_activity: '2026-01-01T00:00:00+00:00',
        })),
      )
      .execute();
    const sizes = [600, 300, 100, 5, 600];
    const ids: number[] = [];
    for (const size of sizes)
      ids.push(
        (
          await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: numbers.slice(0, size).join(',') })
        ).json().id,
      );
    const pages: number[][] = [];
    for (let offset = 0; offset < sizes.length; ) {
      const res = await api.get(`${base}/deploys.json`, { offset });
      assert.equal(res.headers['x-sprintly-deploy-count'], String(sizes.length));
      const page = res.json() as { id: number; items: unknown[] }[];
      assert.ok(page.length > 0);
      assert.ok(page.length === 1 || page.reduce((n, d) => n + d.items.length, 0) <= 1000);
      pages.push(page.map((d) => d.id));
      offset += page.length;
    }
    assert.deepEqual(pages, [
      [ids[0], ids[1], ids[2]],
      [ids[3], ids[4]],
    ]);
  });

  test('items are summarised as they were when the deploy was recorded; the receipt shows them whole', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id, { title: 'Before', description: 'Long text' });
    const receipt = (await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1' })).json();
    assert.equal(receipt.items[0].description, 'Long text');
    assert.equal(receipt.items[0].deployed_to[0].environment, 'prod');
    await api.post(`${base}/items/1.json`, { title: 'After', status: 'in-progress' });
    const summary = {
      number: 1,
      title: 'Before',
      type: 'task',
      status: 'backlog',
      product: { id: product.id, name: 'Rocket', archived: false },
      short_url: `http://shiplog.test/i/${product.id}/1/`,
    };
    const listed = await api.get(`${base}/deploys.json`);
    assert.deepEqual(listed.json()[0].items, [summary]);
    // Keys in the order the schema gives them.
    assert.deepEqual(Object.keys(listed.json()[0].items[0]), Object.keys(summary));
    assert.equal((await api.get(`${base}/items/1.json`)).json().title, 'After');
    // The product and the public address are the current ones, not kept with the summary.
    await t.db.updateTable('products').set({ name: 'Renamed "rocket"' }).where('id', '=', product.id).execute();
    const afresh = await t.app.inject({
      method: 'GET',
      url: `${base}/deploys.json`,
      headers: { authorization: deployer.auth, 'cache-control': 'no-cache' },
    });
    assert.deepEqual(afresh.json()[0].items, [
      { ...summary, product: { ...summary.product, name: 'Renamed "rocket"' } },
    ]);
  });

  test('a rollback lists the items whose entry it changed, summarised as they were then', async () => {
    const { api, base, deployer, product } = await setup();
    for (const title of ['One', 'Two', 'Three']) await makeItem(t.app, deployer, product.id, { title });
    await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '1', version: 'v1' });
    await api.post(`${base}/deploys.json`, { environment: 'prod', numbers: '3,2', version: 'v2' });
    await api.post(`${base}/items/2.json`, { title: 'Two, renamed' });
    await api.post(`${base}/deploys.json`, { environment: 'prod', version: 'v1', rollback: 'true' });
    await api.post(`${base}/items/3.json`, { title: 'Three, renamed' });
    const [, undone, rollback] = (await api.get(`${base}/deploys.json`)).json();
    assert.deepEqual(
      undone.items.map((i: { title: string }) => i.title),
      ['Two', 'Three'],
    );
    assert.equal(undone.reverted, true);
    assert.equal(rollback.rollback, true);
    assert.deepEqual(
      rollback.items.map((i: { number: number; title: string }) => [i.number, i.title]),
      [
        [2, 'Two, renamed'],
        [3, 'Three'],
      ],
    );
  });

  test('deploys recorded before summaries were kept are summarised when first listed, and stay so', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id, { title: 'First' });
    await makeItem(t.app, deployer, product.id, { title: 'Second' });
    const ids: number[] = [];
    for (const numbers of ['2,1', '2'])
      ids.push((await api.post(`${base}/deploys.json`, { environment: 'prod', numbers })).json().id);
    // As a deploy written before the columns existed, or copied from elsewhere, has them.
    await t.db.updateTable('deploys').set({ item_summaries: null, item_count: null }).where('id', 'in', ids).execute();
    await api.post(`${base}/items/1.json`, { title: 'First, as listed' });
    const titles = async (query = {}) =>
      (await api.get(`${base}/deploys.json`, query))
        .json()
        .map((d: { items: { title: string }[] }) => d.items.map((i) => i.title));
    // A page of the second deploy alone keeps only its own.
    assert.deepEqual(await titles({ offset: 1 }), [['Second']]);
    const kept = () =>
      t.db.selectFrom('deploys').select(['id', 'item_count']).where('id', 'in', ids).orderBy('id').execute();
    assert.deepEqual(await kept(), [
      { id: ids[0], item_count: null },
      { id: ids[1], item_count: 1 },
    ]);
    assert.deepEqual(await titles(), [['First, as listed', 'Second'], ['Second']]);
    assert.deepEqual(await kept(), [
      { id: ids[0], item_count: 2 },
      { id: ids[1], item_count: 1 },
    ]);
    await api.post(`${base}/items/1.json`, { title: 'First, later' });
    assert.deepEqual(await titles(), [['First, as listed', 'Second'], ['Second']]);
  });

  test('pages of one environment from any offset, oldest or newest first', async () => {
    const { api, base, deployer, product } = await setup();
    await makeItem(t.app, deployer, product.id);
    const byEnvironment = new Map<string, number[]>();
    for (let i = 0; i < 30; i++) {
      const environment = ['production', 'staging', 'qa'][i % 3 === 2 ? 2 : i % 2];
      const id = (await api.post(`${base}/deploys.json`, { environment, numbers: '1' })).json().id;
      byEnvironment.set(environment, [...(byEnvironment.get(environment) ?? []), id]);
    }
    for (const [environment, ids] of byEnvironment)
      for (const newest of [false, true]) {
        const order = newest ? [...ids].reverse() : ids;
        for (let offset = 0; offset <= ids.length; offset += 3) {
          const query = { environment, offset, limit: 4, ...(newest ? { order_by: 'newest' } : {}) };
          const res = await api.get(`${base}/deploys.json`, query);
          const label = JSON.stringify(query);
          assert.equal(res.headers['x-sprintly-deploy-count'], String(ids.length), label);
          const page = res.json() as { id: number; environment: string }[];
          assert.deepEqual(
            page.map((d) => d.id),
            order.slice(offset, offset + 4),
            label,
          );
          assert.ok(
            page.every((d) => d.environment === environment),
            label,
          );
          const next = offset + 4 < ids.length ? String(offset + 4) : undefined;
          assert.equal(res.headers['x-sprintly-next-offset'], next, label);
        }
      }
  });
});
