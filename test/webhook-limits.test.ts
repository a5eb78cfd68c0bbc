import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import type { ProductRow } from '../src/db/schema.js';
import { replayDelivery, type WebhookWorkerOptions } from '../src/webhooks/index.js';
import {
  assertError,
  client,
  makeApp,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';
import { olderDatabase } from './older-database.js';
import { Receiver, signatureValid, type Received } from './webhook-receiver.js';

// What a webhook event may weigh and how long it is kept, where deliveries may go, and what of
// a webhook's URL is shown back.

const SECRET = 'limits-secret-0123456789abcdef';
const DAY = 24 * 3600_000;
const MAX_EVENT_BYTES = 256 * 1024;

let receiver: Receiver;
const contexts: TestContext[] = [];
before(async () => {
  receiver = await Receiver.start();
});
after(async () => {
  for (const t of contexts) await t.close();
  await receiver.stop();
});

interface Setup {
  t: TestContext;
  admin: TestUser;
  product: ProductRow;
  api: string;
}

async function setup(worker: Partial<WebhookWorkerOptions> = {}): Promise<Setup> {
  const t = await makeApp({
    env: { WEBHOOKS_ALLOW_PRIVATE: '1', WEBHOOK_TIMEOUT_SECONDS: '2', WEBHOOK_LEASE_SECONDS: '5' },
    webhookWorker: { retryBaseMs: 10, retryMaxMs: 20, ...worker },
  });
  contexts.push(t);
  const admin = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const product = await makeProduct(t.db, admin, [], 'Bounded');
  return { t, admin, product, api: `/api/products/${product.id}` };
}

async function addWebhook(s: Setup, params: Record<string, string>): Promise<any> {
  const res = await client(s.t.app, s.admin).post(`${s.api}/webhooks.json`, { secret: SECRET, ...params });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** The same database and settings, without WEBHOOKS_ALLOW_PRIVATE: as an operator runs it. */
async function strictApp(s: Setup) {
  const config = loadConfig({
    DATA_DIR: s.t.dataDir,
    PUBLIC_URL: 'http://shiplog.test',
    MAIL_DOMAIN: 'items.shiplog.test',
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_ADDRESS: '0',
  });
  const app = await buildApp({ config, db: s.t.db, logger: false });
  await app.ready();
  return app;
}

function signed(r: Received): Received {
  assert.ok(signatureValid(r.headers['shiplog-signature'], SECRET, r.body), 'signed over the bytes sent');
  return r;
}

const counts = async (s: Setup) => ({
  events: (await s.t.db.selectFrom('webhook_events').select('id').where('product_id', '=', s.product.id).execute())
    .length,
  deliveries: (await s.t.db.selectFrom('webhook_deliveries').select('id').execute()).length,
});

describe('event bodies', () => {
  test('a deploy lists its first 50 items by number and counts them all; notes and old values are cut', async () => {
    const s = await setup();
    await addWebhook(s, { url: receiver.url('/big'), events: 'deploy.created,item.updated' });
    await addWebhook(s, { url: receiver.url('/big-slack'), events: 'deploy.created', format: 'slack' });
    const asAdmin = client(s.t.app, s.admin);
    const long = 'x'.repeat(20_000);
    for (let n = 1; n <= 60; n++) {
      const res = await asAdmin.post(`${s.api}/items.json`, {
        type: 'task',
        title: `${'"'.repeat(240)} ${n}`,
        description: long,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    const numbers = Array.from({ length: 60 }, (_, i) => 60 - i).join(',');
    assert.equal(
      (await asAdmin.post(`${s.api}/deploys.json`, { environment: 'production', numbers, notes: 'n'.repeat(5000) }))
        .statusCode,
      200,
    );
    assert.equal((await asAdmin.post(`${s.api}/items/7.json`, { description: 'shorter' })).statusCode, 200);
    await s.t.app.webhooks.deliverDue();

    const [deploy, update] = receiver.to('/big').map(signed);
    assert.ok(deploy.body.length <= MAX_EVENT_BYTES, `${deploy.body.length} bytes`);
    assert.equal(deploy.json.deploy.item_count, 60);
    assert.deepEqual(
      deploy.json.deploy.items.map((i: any) => i.number),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.deepEqual(Object.keys(deploy.json.deploy.items[0]), ['number', 'title', 'type', 'status', 'short_url']);
    assert.equal(deploy.json.deploy.notes, `${'n'.repeat(4000)}…`);
    assert.deepEqual(deploy.json.truncated, ['deploy.notes']);

    assert.deepEqual(Object.keys(update.json.item), ['number', 'title', 'type', 'status', 'short_url']);
    assert.equal(update.json.changes.description, `${'x'.repeat(1000)}…`);
    assert.deepEqual(update.json.truncated, ['changes.description']);

    const [slack] = receiver.to('/big-slack').map(signed);
    assert.match(slack.json.text, / and 35 more \(by Ada Lovelace\)$/);
    // What the database keeps of each event is as small.
    const rows = await s.t.db
      .selectFrom('webhook_events')
      .select(['body', 'slack_body'])
      .where('product_id', '=', s.product.id)
      .execute();
    for (const row of rows)
      assert.ok(Buffer.byteLength(row.body) + Buffer.byteLength(row.slack_body) <= MAX_EVENT_BYTES);
  });

  test('every attempt and replay sends the bytes written with the event, signed; a header names it', async () => {
    const s = await setup();
    receiver.answerInTurn('/again', { status: 500 }, { status: 503 });
    const hook = await addWebhook(s, { url: receiver.url('/again'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Same bytes' });
    for (let round = 0; round < 50 && receiver.to('/again').length < 3; round++) await s.t.app.webhooks.deliverDue();
    const [delivery] = await s.t.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', hook.id)
      .execute();
    await s.t.db.transaction().execute((trx) => replayDelivery(trx, delivery.uid));
    await s.t.app.webhooks.deliverDue();
    const got = receiver.to('/again').map(signed);
    assert.equal(got.length, 4, 'three attempts and a replay');
    const [stored] = await s.t.db
      .selectFrom('webhook_events')
      .select('body')
      .where('product_id', '=', s.product.id)
      .execute();
    for (const r of got) assert.equal(r.body, stored.body);
    assert.deepEqual(
      got.map((r) => r.headers['shiplog-delivery']),
      [delivery.uid, delivery.uid, delivery.uid, got[3].headers['shiplog-delivery']],
    );
    assert.notEqual(got[3].headers['shiplog-delivery'], delivery.uid);
    assert.equal('delivery_id' in got[0].json, false);
  });
});

describe('retention', () => {
  test('the worker deletes deliveries and events past retention, a batch per statement, keeps the rest', async () => {
    let now = Date.now();
    const s = await setup({ clock: () => now, retentionBatch: 2 });
    const hook = await addWebhook(s, { url: receiver.url('/kept'), events: 'item.created' });
    for (let n = 1; n <= 5; n++)
      await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: `Item ${n}` });
    await s.t.app.webhooks.deliverDue();
    assert.deepEqual(await s.t.app.webhooks.sweep(), { deliveries: 0, events: 0, statements: 2 }, 'nothing is old yet');

    const events = await s.t.db
      .selectFrom('webhook_events')
      .select(['id', 'uid'])
      .where('product_id', '=', s.product.id)
      .orderBy('id')
      .execute();
    const old = events.slice(0, 4).map((e) => e.id);
    const longAgo = `${new Date(now - 31 * DAY).toISOString().slice(0, 19)}+00:00`;
    await s.t.db.updateTable('webhook_events').set({ created_at: longAgo }).where('id', 'in', old).execute();
    await s.t.db.updateTable('webhook_deliveries').set({ created_at: longAgo }).where('event_id', 'in', old).execute();
    // An old event replayed now is kept with its new delivery.
    const [replayed] = await s.t.db
      .selectFrom('webhook_deliveries')
      .select('uid')
      .where('event_id', '=', old[3])
      .execute();
    await s.t.db.transaction().execute((trx) => replayDelivery(trx, replayed.uid));
    await s.t.app.webhooks.deliverDue();

    const swept = await s.t.app.webhooks.sweep();
    assert.deepEqual(swept, { deliveries: 4, events: 3, statements: 5 }, 'deliveries 2+2+0, events 2+1');
    const left = await s.t.db
      .selectFrom('webhook_events')
      .select('id')
      .where('product_id', '=', s.product.id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      left.map((e) => e.id),
      [old[3], events[4].id],
    );
    const log = (await client(s.t.app, s.admin).get(`${s.api}/webhooks/${hook.id}/deliveries.json`)).json();
    assert.deepEqual(
      log.map((d: any) => d.event_id),
      [events[3].uid, events[4].uid],
    );

    // A month on (WEBHOOK_RETENTION_DAYS is 30 by default), nothing is left.
    now += 31 * DAY;
    assert.deepEqual(await s.t.app.webhooks.sweep(), { deliveries: 2, events: 2, statements: 4 });
    assert.deepEqual(await counts(s), { events: 0, deliveries: 0 });
  });

  test('WEBHOOK_RETENTION_DAYS sets the retention; 30 days by default', () => {
    const base = { DATA_DIR: '/tmp/unused', PUBLIC_URL: 'http://shiplog.test' };
    assert.equal(loadConfig(base).webhookRetentionDays, 30);
    assert.equal(loadConfig({ ...base, WEBHOOK_RETENTION_DAYS: '7' }).webhookRetentionDays, 7);
    assert.throws(() => loadConfig({ ...base, WEBHOOK_RETENTION_DAYS: '0' }), /WEBHOOK_RETENTION_DAYS/);
  });

  test('deleting a webhook deletes its deliveries and the events only it got', async () => {
    const s = await setup();
    const shared = await addWebhook(s, { url: receiver.url('/shared'), events: 'item.created' });
    const own = await addWebhook(s, { url: receiver.url('/own'), events: 'item.created,item.updated' });
    const asAdmin = client(s.t.app, s.admin);
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'Both get this' });
    await asAdmin.post(`${s.api}/items/1.json`, { title: 'Only one gets this' });
    await asAdmin.post(`${s.api}/items/1.json`, { title: 'And this' });
    assert.deepEqual(await counts(s), { events: 3, deliveries: 4 });

    assert.equal((await asAdmin.delete(`${s.api}/webhooks/${own.id}.json`)).statusCode, 200);
    assert.deepEqual(await counts(s), { events: 1, deliveries: 1 });
    const [event] = await s.t.db
      .selectFrom('webhook_events')
      .select('type')
      .where('product_id', '=', s.product.id)
      .execute();
    assert.equal(event.type, 'item.created');
    assert.equal((await asAdmin.delete(`${s.api}/webhooks/${shared.id}.json`)).statusCode, 200);
    assert.deepEqual(await counts(s), { events: 0, deliveries: 0 });
  });
});

/** IPv6 forms that embed an IPv4 address, and other addresses that are no global unicast. */
const EMBEDDING = [
  'http://[64:ff9b::a9fe:a9fe]/x',
  'http://[64:ff9b::7f00:1]/x',
  'http://[2002:7f00:1::1]/x',
  'http://[::7f00:1]/x',
  'http://[::127.0.0.1]/x',
  'http://[::ffff:0:7f00:1]/x',
  'http://[fec0::1]/x',
  'http://[2001::1]/x',
  'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x',
  'http://[64:ff9b:1::a00:1]/x',
  'http://[100::1]/x',
  'http://[2001:db8::1]/x',
  'http://[3fff::1]/x',
  'http://255.255.255.255/x',
  'http://192.0.0.8/x',
];

describe('targets', () => {
  test('refused at creation: addresses that are no global unicast, IPv6 forms embedding IPv4 among them', async () => {
    const s = await setup();
    const app = await strictApp(s);
    try {
      const asAdmin = client(app, s.admin);
      for (const url of EMBEDDING) {
        const body = assertError(await asAdmin.post(`${s.api}/webhooks.json`, { url, events: 'item.created' }), 400, {
          errors: ['url'],
          label: url,
        });
        assert.match(body.errors!.url, /must lead to a public address \(.+ is (a|an|not a) /, url);
      }
      for (const url of ['http://[2606:4700:4700::1111]/hook', 'http://1.1.1.1/hook']) {
        const ok = await asAdmin.post(`${s.api}/webhooks.json`, { url, events: 'item.created' });
        assert.equal(ok.statusCode, 200, `${url}: ${ok.body}`);
      }
    } finally {
      await app.close();
    }
  });

  test('refused at delivery: a webhook stored with such an address before gets nothing sent', async () => {
    const s = await setup();
    const hooks = [];
    for (const url of EMBEDDING.slice(0, 10)) {
      const hook = await addWebhook(s, { url: receiver.url('/never'), events: 'item.created' });
      await s.t.db.updateTable('webhooks').set({ url }).where('id', '=', hook.id).execute();
      hooks.push(hook);
    }
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Nowhere' });
    const app = await strictApp(s);
    try {
      await app.webhooks.deliverDue();
    } finally {
      await app.close();
    }
    for (const hook of hooks) {
      const [d] = await s.t.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', hook.id).execute();
      assert.deepEqual([d.status, d.attempts, d.response_code], ['failed', 1, null], `webhook ${hook.id}`);
      assert.match(d.last_error!, / is (a|an|not a) /);
    }
  });
});

describe('credentials in a webhook URL', () => {
  test('masked in answers, pages and the log; sent to the receiver; a masked URL sent back keeps them', async () => {
    const s = await setup();
    receiver.answerInTurn('/creds', { status: 400, body: 'refused' });
    const url = receiver.url('/creds').replace('http://', 'http://hook-user:s3cret-pass@');
    const made = await addWebhook(s, { url, events: 'item.created,item.updated' });
    const masked = receiver.url('/creds').replace('http://', 'http://***:***@');
    assert.equal(made.url, masked);
    const asAdmin = client(s.t.app, s.admin);
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'Authenticated' });
    await s.t.app.webhooks.deliverDue();

    // Masked credentials are kept only for the same receiver, never carried to another host.
    const elsewhere = await asAdmin.post(`${s.api}/webhooks/${made.id}.json`, {
      url: masked.replace('127.0.0.1', 'localhost'),
    });
    assert.equal(elsewhere.statusCode, 400, elsewhere.body);
    assert.match(elsewhere.json().errors.url, /same scheme, host and port/);
    const changed = await asAdmin.post(`${s.api}/webhooks/${made.id}.json`, { url: masked, events: 'item.updated' });
    assert.equal(changed.json().url, masked);
    await asAdmin.post(`${s.api}/items/1.json`, { title: 'Still authenticated' });
    await s.t.app.webhooks.deliverDue();
    const expected = `Basic ${Buffer.from('hook-user:s3cret-pass').toString('base64')}`;
    assert.deepEqual(
      receiver.to('/creds').map((r) => r.headers.authorization),
      [expected, expected],
    );

    const cookie = await signInByMail(s.t, s.admin.email);
    const shown = [
      (await asAdmin.get(`${s.api}/webhooks.json`)).body,
      (await asAdmin.get(`${s.api}/webhooks/${made.id}.json`)).body,
      (await asAdmin.get(`${s.api}/webhooks/${made.id}/deliveries.json`)).body,
      changed.body,
      (await s.t.app.inject({ method: 'GET', url: `/app/products/${s.product.id}/webhooks`, headers: { cookie } }))
        .body,
      (
        await s.t.app.inject({
          method: 'GET',
          url: `/app/products/${s.product.id}/webhooks/${made.id}`,
          headers: { cookie },
        })
      ).body,
    ];
    for (const body of shown) {
      assert.equal(body.includes('s3cret-pass') || body.includes('hook-user'), false, body.slice(0, 300));
    }
    assert.ok(shown[4].includes('***:***@'), 'the page shows where, masked');
  });
});

describe('upgrading a database with events written before their bodies were kept', () => {
  test("deliveries send the stored payload with the event's id, time and type; Slack's rendered from it", async () => {
    const { dataDir, options, old, id } = await olderDatabase(['2026_11_26_0030_webhook_bodies']);
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
      last_number: 1,
      items_version: 0,
    });
    const hook = (url: string, format: string) => ({
      product_id: product,
      url,
      events: 'deploy.created',
      format,
      secret: SECRET,
      created_by_id: user,
      created_at: at,
    });
    const hooks = [
      await id('webhooks', hook(receiver.url('/old-shiplog'), 'shiplog')),
      await id('webhooks', hook(receiver.url('/old-slack'), 'slack')),
    ];
    const item = {
      number: 1,
      title: 'Old item',
      type: 'task',
      status: 'accepted',
      short_url: 'http://shiplog.test/i/1/1/',
      description: 'All of it',
    };
    const payload = JSON.stringify({
      product: { id: product, name: 'Old' },
      actor: { id: user, first_name: 'O', last_name: 'Ld', email: 'old@example.com' },
      deploy: { id: 1, environment: 'production', version: 'v1', notes: '', items: [item] },
    });
    const event = await id('webhook_events', {
      uid: 'old-event',
      product_id: product,
      type: 'deploy.created',
      payload,
      created_at: at,
    });
    const due = `${new Date().toISOString().slice(0, 19)}+00:00`;
    for (const [n, webhook] of hooks.entries()) {
      await old
        .insertInto('webhook_deliveries')
        .values({
          uid: `old-delivery-${n}`,
          webhook_id: webhook,
          event_id: event,
          status: 'pending',
          next_attempt_at: at,
          retry_until: '2099-01-01T00:00:00+00:00',
          created_at: due,
        })
        .execute();
    }
    await old.destroy();

    const db = await openDatabase(options);
    const config = loadConfig({ DATA_DIR: dataDir, PUBLIC_URL: 'http://shiplog.test', WEBHOOKS_ALLOW_PRIVATE: '1' });
    const app = await buildApp({ config, db, logger: false });
    try {
      await app.ready();
      await app.webhooks.deliverDue();
    } finally {
      await app.close();
      await db.destroy();
    }
    const [sent] = receiver.to('/old-shiplog').map(signed);
    assert.equal(sent.body, `{"id":"old-event","timestamp":"${at}","type":"deploy.created",${payload.slice(1)}`);
    assert.equal(sent.headers['shiplog-delivery'], 'old-delivery-0');
    const [slack] = receiver.to('/old-slack').map(signed);
    assert.equal(slack.json.text, 'v1 to production: <http://shiplog.test/i/1/1/|#1 Old item> (by O Ld)');
  });
});
