import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { ProductRow } from '../src/db/schema.js';
import { DEFAULT_WEBHOOK_WORKER_OPTIONS, WebhookWorker, type WebhookWorkerOptions } from '../src/webhooks/index.js';
import { assertError, client, makeApp, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';
import { ManualClock, until } from './manual-clock.js';
import { runCli, waitFor } from './processes.js';
import { Receiver, signatureValid, type Received } from './webhook-receiver.js';

const ALL_EVENTS = 'deploy.created,deploy.rolled_back,item.created,item.updated,item.status_changed';
const SECRET = 'test-secret-0123456789abcdef';

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
  member: TestUser;
  /** A member who is neither creator nor assignee of anything: sees people as webhooks show them. */
  observer: TestUser;
  product: ProductRow;
  api: string;
}

/**
 * An app of its own (the receiver is on 127.0.0.1, so private targets are allowed), retries after
 * milliseconds instead of seconds, and a product with an admin and two members.
 */
async function setup(
  env: Record<string, string> = {},
  options: { file?: boolean; worker?: Partial<WebhookWorkerOptions>; clock?: ManualClock } = {},
): Promise<Setup> {
  const t = await makeApp({
    file: options.file,
    clock: options.clock,
    env: { WEBHOOKS_ALLOW_PRIVATE: '1', WEBHOOK_TIMEOUT_SECONDS: '2', WEBHOOK_LEASE_SECONDS: '5', ...env },
    webhookWorker: { retryBaseMs: 10, retryMaxMs: 20, ...options.worker },
  });
  contexts.push(t);
  const admin = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const member = await makeUser(t.db, { firstName: 'Bob', lastName: 'Builder' });
  const observer = await makeUser(t.db, { firstName: 'Olga', lastName: 'Observer' });
  const product = await makeProduct(t.db, admin, [member, observer], 'World Domination');
  return { t, admin, member, observer, product, api: `/api/products/${product.id}` };
}

/** Adds a webhook as the admin; fails the test on any other answer than 200. */
async function addWebhook(s: Setup, params: Record<string, string>): Promise<any> {
  const res = await client(s.t.app, s.admin).post(`${s.api}/webhooks.json`, {
    events: ALL_EVENTS,
    secret: SECRET,
    ...params,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function deliveries(s: Setup, webhookId: number): Promise<any[]> {
  const res = await client(s.t.app, s.admin).get(`${s.api}/webhooks/${webhookId}/deliveries.json`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Runs delivery rounds until `done` holds (retries fall due within milliseconds here). */
async function deliverUntil(s: Setup, what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  await waitFor(
    what,
    async () => {
      if (await done()) return true;
      await s.t.app.webhooks.deliverDue();
      return false;
    },
    20_000,
  );
}

const withoutPrivateSetting = async (s: Setup) => {
  const config = loadConfig({
    DATA_DIR: s.t.dataDir,
    PUBLIC_URL: 'http://shiplog.test',
    MAIL_DOMAIN: 'items.shiplog.test',
  });
  const app = await buildApp({ config, db: s.t.db, logger: false });
  await app.ready();
  return app;
};

describe('managing webhooks', () => {
  test('only admins see and change them; members get 403', async () => {
    const s = await setup();
    const asMember = client(s.t.app, s.member);
    assertError(await asMember.get(`${s.api}/webhooks.json`), 403, { message: /admins/ });
    assertError(
      await asMember.post(`${s.api}/webhooks.json`, { url: receiver.url('/x'), events: 'item.created' }),
      403,
    );
    const hook = await addWebhook(s, { url: receiver.url('/x') });
    assertError(await asMember.delete(`${s.api}/webhooks/${hook.id}.json`), 403);
    assertError(await asMember.get(`${s.api}/webhooks/${hook.id}/deliveries.json`), 403);
    const outsider = await makeUser(s.t.db);
    assertError(await client(s.t.app, outsider).get(`${s.api}/webhooks.json`), 403);
  });

  test('bad parameters are a 400 naming each; unknown webhooks 404', async () => {
    const s = await setup();
    const asAdmin = client(s.t.app, s.admin);
    assertError(await asAdmin.post(`${s.api}/webhooks.json`, {}), 400, { errors: ['url', 'events'] });
    assertError(
      await asAdmin.post(`${s.api}/webhooks.json`, { url: 'ftp://example.com/x', events: 'item.created' }),
      400,
      { errors: ['url'] },
    );
    assertError(await asAdmin.post(`${s.api}/webhooks.json`, { url: 'not a url', events: 'item.created' }), 400, {
      errors: ['url'],
    });
    assertError(
      await asAdmin.post(`${s.api}/webhooks.json`, {
        url: receiver.url('/x'),
        events: 'item.created,item.deleted',
        format: 'teams',
        secret: 'short',
      }),
      400,
      { errors: ['events', 'format', 'secret'] },
    );
    assertError(await asAdmin.post(`${s.api}/webhooks.json`, { url: receiver.url('/x'), events: ',' }), 400, {
      errors: ['events'],
    });
    assertError(await asAdmin.get(`${s.api}/webhooks/999.json`), 404);
    assertError(await asAdmin.get(`${s.api}/webhooks/abc/deliveries.json`), 404);
    assertError(await asAdmin.delete(`${s.api}/webhooks/99999999999999999999.json`), 404);
    // Another product's webhook is not this product's.
    const other = await makeProduct(s.t.db, s.admin, [], 'Other');
    const theirs = (
      await asAdmin.post(`/api/products/${other.id}/webhooks.json`, { url: receiver.url('/x'), events: 'item.created' })
    ).json();
    assertError(await asAdmin.get(`${s.api}/webhooks/${theirs.id}.json`), 404);
  });

  test('create shows a generated secret once; update, re-enable and delete', async () => {
    const s = await setup();
    const asAdmin = client(s.t.app, s.admin);
    const res = await asAdmin.postJson(`${s.api}/webhooks.json`, {
      url: receiver.url('/made'),
      events: ['item.created', 'deploy.created'],
    });
    assert.equal(res.statusCode, 200, res.body);
    const made = res.json();
    assert.match(made.secret, /^whsec_[A-Za-z0-9_-]{32}$/);
    assert.deepEqual(made.events, ['item.created', 'deploy.created']);
    assert.equal(made.format, 'shiplog');
    assert.equal(made.enabled, true);
    assert.equal(made.created_by.email, s.admin.email);
    const listed = (await asAdmin.get(`${s.api}/webhooks.json`)).json();
    assert.equal(listed.length, 1);
    assert.equal('secret' in listed[0], false, 'the secret is shown only when made');
    assert.equal(JSON.stringify(listed).includes(made.secret), false);

    const changed = (
      await asAdmin.post(`${s.api}/webhooks/${made.id}.json`, {
        events: 'item.status_changed',
        format: 'slack',
        enabled: 'false',
      })
    ).json();
    assert.deepEqual([changed.events, changed.format, changed.enabled], [['item.status_changed'], 'slack', false]);
    assert.match(changed.disabled_reason, /Disabled by Ada Lovelace/);
    const again = (await asAdmin.post(`${s.api}/webhooks/${made.id}.json`, { enabled: 'true' })).json();
    assert.deepEqual([again.enabled, again.disabled_reason, again.disabled_at], [true, null, null]);

    const deleted = await asAdmin.delete(`${s.api}/webhooks/${made.id}.json`);
    assert.equal(deleted.statusCode, 200);
    assert.equal(deleted.json().id, made.id);
    assertError(await asAdmin.get(`${s.api}/webhooks/${made.id}.json`), 404);
    assert.deepEqual((await asAdmin.get(`${s.api}/webhooks.json`)).json(), []);
  });

  test('a product has at most 20 webhooks', async () => {
    const s = await setup();
    for (let i = 0; i < 20; i++) await addWebhook(s, { url: receiver.url(`/many/${i}`), events: 'item.created' });
    assertError(
      await client(s.t.app, s.admin).post(`${s.api}/webhooks.json`, {
        url: receiver.url('/many/20'),
        events: 'item.created',
      }),
      422,
      {
        message: /at most 20/,
      },
    );
  });
});

describe('private targets', () => {
  test('refused without WEBHOOKS_ALLOW_PRIVATE: loopback, private, link-local, names resolving to them', async () => {
    const s = await setup();
    const app = await withoutPrivateSetting(s);
    try {
      const asAdmin = client(app, s.admin);
      const refused = [
        'http://127.0.0.1:9/x',
        'http://localhost:9/x',
        'http://[::1]/x',
        'http://0.0.0.0/x',
        'http://[::]/x',
        'http://10.1.2.3/x',
        'http://172.20.0.1/x',
        'http://192.168.1.1/x',
        'http://100.64.0.1/x',
        'http://169.254.169.254/latest/meta-data/',
        'http://[fd00:ec2::254]/x',
        'http://[fe80::1]/x',
        'http://[::ffff:127.0.0.1]/x',
        'http://2130706433/x',
      ];
      for (const url of refused) {
        const body = assertError(await asAdmin.post(`${s.api}/webhooks.json`, { url, events: 'item.created' }), 400, {
          errors: ['url'],
          label: url,
        });
        assert.match(body.errors!.url, /public address/, url);
      }
      // A public address is fine (nothing is sent until an event happens).
      const ok = await asAdmin.post(`${s.api}/webhooks.json`, {
        url: 'http://93.184.215.14/hook',
        events: 'item.created',
      });
      assert.equal(ok.statusCode, 200, ok.body);
      // Changing the URL is checked the same way.
      assertError(await asAdmin.post(`${s.api}/webhooks/${ok.json().id}.json`, { url: 'http://127.0.0.1/x' }), 400, {
        errors: ['url'],
      });
    } finally {
      await app.close();
    }
  });

  test('refused again at delivery: a worker without the setting sends nothing to a private address', async () => {
    const s = await setup();
    const byName = await addWebhook(s, { url: receiver.url('/private-name', 'localhost'), events: 'item.created' });
    const byAddress = await addWebhook(s, { url: receiver.url('/private-address'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Anything' });
    const strict = await withoutPrivateSetting(s);
    try {
      await strict.webhooks.deliverDue();
    } finally {
      await strict.close();
    }
    assert.equal(receiver.to('/private-name').length + receiver.to('/private-address').length, 0);
    const [viaName] = await deliveries(s, byName.id);
    const [viaAddress] = await deliveries(s, byAddress.id);
    for (const d of [viaName, viaAddress])
      assert.deepEqual([d.status, d.attempts, d.response_code], ['failed', 1, null]);
    assert.match(viaName.last_error, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    assert.match(viaAddress.last_error, /127\.0\.0\.1 is a loopback address/);
    // With the setting, the name is resolved and the connection made to the address checked.
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Allowed' });
    await s.t.app.webhooks.deliverDue();
    assert.equal(verified(receiver.to('/private-name')[0]).item.title, 'Allowed');
  });
});

/**
 * What a webhook got, signatures checked, in the order its events happened (two deliveries to a
 * webhook may be in flight at once, so they can arrive in another).
 */
async function received(s: Setup, hookId: number, path: string): Promise<any[]> {
  const order = (await deliveries(s, hookId)).map((d) => d.delivery_id).reverse();
  const byDelivery = (r: Received) => order.indexOf(String(r.headers['shiplog-delivery']));
  return receiver
    .to(path)
    .sort((a, b) => byDelivery(a) - byDelivery(b))
    .map((r) => verified(r));
}

/** Checks the signature and headers of a delivery and returns its JSON. */
function verified(r: Received, secret = SECRET): any {
  assert.ok(signatureValid(r.headers['shiplog-signature'], secret, r.body), `signature of ${r.body.slice(0, 100)}`);
  const t = Number(/t=(\d+)/.exec(String(r.headers['shiplog-signature']))![1]);
  assert.ok(Math.abs(t - Date.now() / 1000) < 300, 'a current timestamp');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.match(String(r.headers['shiplog-delivery']), /^[0-9a-f-]{36}$/);
  if (r.json.type) {
    assert.equal(r.headers['shiplog-event'], r.json.type);
    assert.equal(
      'delivery_id' in r.json,
      false,
      'the delivery is named by its header: the body is the same in every delivery',
    );
  }
  return r.json;
}

describe('deliveries', () => {
  test('every event type: signed, with the resource as the API renders it and previous values of changes', async () => {
    const s = await setup();
    const hook = await addWebhook(s, { url: receiver.url('/all') });
    const asAdmin = client(s.t.app, s.admin);
    const asObserver = client(s.t.app, s.observer);
    const seen = async (n: number) => (await asObserver.get(`${s.api}/items/${n}.json`)).json();

    assert.equal(
      (await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'Checkout fix', tags: 'ui' })).statusCode,
      200,
    );
    const created = await seen(1);
    await asAdmin.post(`${s.api}/items.json`, {
      type: 'story',
      who: 'a shopper',
      what: 'faster search',
      why: 'I find things',
    });
    await asAdmin.post(`${s.api}/items/1.json`, {
      title: 'Checkout fix, again',
      tags: 'ui,payments',
      assigned_to: s.member.user.id,
    });
    const updated = await seen(1);
    await asAdmin.post(`${s.api}/items/1.json`, { status: 'in-progress' });
    const moved = await seen(1);
    await asAdmin.delete(`${s.api}/items/2.json`);
    const archived = await seen(2);
    // Changes that change nothing are no events.
    await asAdmin.post(`${s.api}/items/1.json`, { title: 'Checkout fix, again' });
    const deploy = await asAdmin.post(`${s.api}/deploys.json`, {
      environment: 'production',
      numbers: '1,2',
      version: '1.4.0',
      notes: 'Friday',
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
    const deployed = (await asObserver.get(`${s.api}/deploys.json`)).json()[0];
    const later = await asAdmin.post(`${s.api}/deploys.json`, {
      environment: 'production',
      numbers: '1',
      version: '1.5.0',
    });
    // Back to 1.4.0: 1.5.0 is undone, and item 1 is as 1.4.0 left it.
    const rollback = await asAdmin.post(`${s.api}/deploys.json`, {
      environment: 'production',
      version: '1.4.0',
      rollback: 'true',
    });
    assert.equal(rollback.statusCode, 200, rollback.body);
    const rolledBackSeen = (await asObserver.get(`${s.api}/deploys.json`))
      .json()
      .find((d: any) => d.id === rollback.json().id);

    await s.t.app.webhooks.deliverDue();
    const log = await deliveries(s, hook.id);
    const got = await received(s, hook.id, '/all');
    assert.deepEqual(
      got.map((e) => e.type),
      [
        'item.created',
        'item.created',
        'item.updated',
        'item.status_changed',
        'item.updated',
        'deploy.created',
        'deploy.created',
        'deploy.rolled_back',
      ],
    );
    const actor = { id: s.admin.user.id, first_name: 'Ada', last_name: 'Lovelace', email: s.admin.email };
    for (const e of got) {
      assert.deepEqual(Object.keys(e).slice(0, 5), ['id', 'timestamp', 'type', 'product', 'actor']);
      assert.deepEqual(e.product, { id: s.product.id, name: 'World Domination' });
      assert.deepEqual(e.actor, actor, 'people as other members see them');
      assert.match(e.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    }
    assert.equal(new Set(got.map((e) => e.id)).size, got.length, 'an event id each');
    const deliveryIds = receiver.to('/all').map((r) => r.headers['shiplog-delivery']);
    assert.equal(new Set(deliveryIds).size, got.length, 'a delivery id each');

    // Items as summaries; deploys with their items so, and how many they have.
    const summary = (i: any) => ({
      number: i.number,
      title: i.title,
      type: i.type,
      status: i.status,
      short_url: i.short_url,
    });
    const deploySummary = (d: any) => ({
      id: d.id,
      environment: d.environment,
      version: d.version,
      notes: d.notes,
      created_at: d.created_at,
      rollback: d.rollback,
      item_count: d.items.length,
      items: d.items.map(summary),
    });
    const [itemCreated, , itemUpdated, statusChanged, itemArchived, deployCreated, , rolledBack] = got;
    assert.deepEqual(itemCreated.item, summary(created));
    assert.equal('changes' in itemCreated, false);
    assert.deepEqual(itemUpdated.item, summary(updated));
    assert.deepEqual(itemUpdated.changes, { title: 'Checkout fix', assigned_to: null, tags: ['ui'] });
    assert.deepEqual(statusChanged.item, summary(moved));
    assert.deepEqual(statusChanged.changes, { status: 'backlog' });
    assert.deepEqual(itemArchived.item, summary(archived));
    assert.deepEqual(itemArchived.changes, { archived: false });
    assert.deepEqual(deployCreated.deploy, deploySummary(deployed));
    assert.deepEqual(
      deployCreated.deploy.items.map((i: any) => i.number),
      [1, 2],
    );
    assert.deepEqual(rolledBack.deploy, deploySummary(rolledBackSeen));
    assert.equal(rolledBack.deploy.rollback, true);
    assert.deepEqual(rolledBack.reverted, [1]);
    assert.deepEqual(rolledBack.reverted_deploys, [later.json().id]);

    assert.equal(log.length, 8);
    assert.equal(log[0].event, 'deploy.rolled_back', 'newest first');
    for (const d of log) {
      assert.equal(d.status, 'delivered');
      assert.equal(d.response_code, 200);
      assert.equal(d.attempts, 1);
      assert.equal(typeof d.duration_ms, 'number');
      assert.equal(d.next_attempt_at, null);
      assert.ok(d.delivered_at);
    }
    assert.deepEqual(new Set(log.map((d) => d.delivery_id)), new Set(deliveryIds));
    const page = await client(s.t.app, s.admin).get(`${s.api}/webhooks/${hook.id}/deliveries.json`, {
      offset: 5,
      limit: 1,
    });
    assert.equal(page.headers['x-sprintly-delivery-count'], '8');
    assert.deepEqual(page.json(), [log[5]]);
  });

  test('the changes of assignee and parent name what they were', async () => {
    const s = await setup();
    const asAdmin = client(s.t.app, s.admin);
    await asAdmin.post(`${s.api}/items.json`, { type: 'story', who: 'a', what: 'b', why: 'c' });
    await asAdmin.post(`${s.api}/items.json`, { type: 'story', who: 'd', what: 'e', why: 'f' });
    await asAdmin.post(`${s.api}/items.json`, {
      type: 'task',
      title: 'Child',
      parent: 1,
      assigned_to: s.member.user.id,
    });
    const hook = await addWebhook(s, { url: receiver.url('/relations'), events: 'item.updated' });
    await asAdmin.post(`${s.api}/items/3.json`, { parent: 2, assigned_to: s.observer.user.id });
    await asAdmin.post(`${s.api}/items/2.json`, { what: 'g' });
    await s.t.app.webhooks.deliverDue();
    const [reparented, renamed] = await received(s, hook.id, '/relations');
    assert.deepEqual(reparented.changes, {
      assigned_to: { id: s.member.user.id, first_name: 'Bob', last_name: 'Builder', email: s.member.email },
      parent: { number: 1 },
    });
    assert.deepEqual(renamed.changes, { title: 'As a d, I want e so that f.', what: 'e' });
  });

  test('a product without webhooks for an event queues nothing; a change rolled back queues nothing', async () => {
    const s = await setup();
    await addWebhook(s, { url: receiver.url('/deploys-only'), events: 'deploy.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Quiet' });
    // A refused deploy (no item with these numbers) rolls back whatever it wrote.
    assertError(
      await client(s.t.app, s.admin).post(`${s.api}/deploys.json`, { environment: 'production', numbers: '77' }),
      400,
    );
    const events = await s.t.db.selectFrom('webhook_events').selectAll().execute();
    assert.deepEqual(events, []);
  });

  test('retried after 500s until it succeeds, with the same ids each time', async () => {
    const s = await setup();
    receiver.answerInTurn('/flaky', { status: 500, body: 'broken' }, { status: 503 });
    const hook = await addWebhook(s, { url: receiver.url('/flaky'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Retry me' });
    await deliverUntil(
      s,
      'the third attempt succeeds',
      async () => (await deliveries(s, hook.id))[0].status === 'delivered',
    );
    const got = receiver.to('/flaky');
    assert.equal(got.length, 3);
    assert.equal(new Set(got.map((r) => r.headers['shiplog-delivery'])).size, 1);
    assert.equal(new Set(got.map((r) => r.json.id)).size, 1);
    const [d] = await deliveries(s, hook.id);
    assert.deepEqual([d.attempts, d.response_code, d.last_error], [3, 200, null]);
    const [webhook] = (await client(s.t.app, s.admin).get(`${s.api}/webhooks.json`)).json();
    assert.deepEqual([webhook.consecutive_failures, webhook.failing_since], [0, null], 'a success clears the failures');
  });

  test('a 400 is final; a 429 is retried no sooner than its Retry-After', async () => {
    const s = await setup();
    receiver.answer('/bad', () => ({ status: 400, body: 'no such hook' }));
    const bad = await addWebhook(s, { url: receiver.url('/bad'), events: 'item.created' });
    receiver.answerInTurn('/busy', { status: 429, headers: { 'retry-after': '3' } });
    const busy = await addWebhook(s, { url: receiver.url('/busy'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Once' });
    const attempted = Date.now();
    await s.t.app.webhooks.deliverDue();
    await s.t.app.webhooks.deliverDue();
    const [refused] = await deliveries(s, bad.id);
    assert.deepEqual([refused.status, refused.attempts, refused.response_code], ['failed', 1, 400]);
    assert.equal(refused.last_error, 'HTTP 400: no such hook');
    assert.equal(receiver.to('/bad').length, 1, 'not retried');

    const [waiting] = await deliveries(s, busy.id);
    assert.deepEqual([waiting.status, waiting.attempts, waiting.response_code], ['pending', 1, 429]);
    assert.ok(Date.parse(waiting.next_attempt_at) >= attempted + 2000, `due at ${waiting.next_attempt_at}`);
    assert.equal(receiver.to('/busy').length, 1, 'not yet retried');
    await deliverUntil(
      s,
      'the retry after Retry-After',
      async () => (await deliveries(s, busy.id))[0].status === 'delivered',
    );
    assert.equal(receiver.to('/busy').length, 2);
  });

  test('a receiver that hangs times out without holding up another webhook', async () => {
    // The deadline runs on a clock this test moves; retries an hour off, so the round ends after the timeouts.
    const clock = new ManualClock();
    try {
      // A deadline of a minute: a test that waited for it on the wall clock would give up first.
      const s = await setup(
        { WEBHOOK_TIMEOUT_SECONDS: '60', WEBHOOK_LEASE_SECONDS: '300' },
        { clock, worker: { retryBaseMs: 3_600_000, retryMaxMs: 3_600_000 } },
      );
      receiver.answer('/hangs', () => 'hang');
      const hangs = await addWebhook(s, { url: receiver.url('/hangs'), events: 'item.created' });
      const quick = await addWebhook(s, { url: receiver.url('/quick'), events: 'item.created' });
      await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'One' });
      await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Two' });
      await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Three' });
      const round = s.t.app.webhooks.deliverDue();
      await until('the other webhook to get all three', () => receiver.to('/quick').length === 3);
      await until('the hanging receiver to hold its requests', () => receiver.hanging === 2);
      await clock.tick(59_999);
      assert.equal(receiver.hanging, 2, 'nothing is given up before its deadline');
      await clock.tick(1);
      // Two at a time per webhook: the third goes out as the first two are given up, and hangs too.
      await until('the third request to go out', () => receiver.to('/hangs').length === 3);
      await clock.tick(60_000);
      await round;
      await until('the hanging requests to be given up', () => receiver.hanging === 0);
      const held = await deliveries(s, hangs.id);
      for (const d of held) {
        assert.deepEqual(
          [d.status, d.attempts, d.response_code, d.last_error],
          ['pending', 1, null, 'No answer within 60 s.'],
        );
      }
      assert.deepEqual(
        (await deliveries(s, quick.id)).map((d) => d.status),
        ['delivered', 'delivered', 'delivered'],
      );
      await client(s.t.app, s.admin).delete(`${s.api}/webhooks/${hangs.id}.json`);
    } finally {
      clock.reset();
    }
  });

  test('disabled after repeated failures, with the reason; no events queued then; re-enabled by an admin', async () => {
    const s = await setup({ WEBHOOK_DISABLE_AFTER_FAILURES: '3' });
    receiver.answer('/down', () => ({ status: 500, body: 'down' }));
    const hook = await addWebhook(s, { url: receiver.url('/down'), events: 'item.created' });
    const asAdmin = client(s.t.app, s.admin);
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'First' });
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'Second' });
    await deliverUntil(
      s,
      'the webhook is disabled',
      async () => !(await asAdmin.get(`${s.api}/webhooks/${hook.id}.json`)).json().enabled,
    );
    // A delivery in flight as it was disabled is given up on the next round.
    await s.t.app.webhooks.deliverDue();
    const disabled = (await asAdmin.get(`${s.api}/webhooks/${hook.id}.json`)).json();
    assert.match(disabled.disabled_reason, /^Disabled after 3 failed deliveries in a row; the last: HTTP 500: down$/);
    assert.ok(disabled.disabled_at);
    assert.equal(disabled.consecutive_failures, 3);
    const log = await deliveries(s, hook.id);
    assert.deepEqual(
      log.map((d) => d.status),
      ['failed', 'failed'],
      'what waited is given up',
    );
    const tried = receiver.to('/down').length;
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'While disabled' });
    await s.t.app.webhooks.deliverDue();
    assert.equal((await deliveries(s, hook.id)).length, 2, 'no delivery queued while disabled');
    assert.equal(receiver.to('/down').length, tried);

    receiver.answer('/down', () => ({ status: 204 }));
    const enabled = (await asAdmin.post(`${s.api}/webhooks/${hook.id}.json`, { enabled: 'true' })).json();
    assert.deepEqual([enabled.enabled, enabled.consecutive_failures, enabled.disabled_reason], [true, 0, null]);
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'After' });
    await s.t.app.webhooks.deliverDue();
    assert.equal((await deliveries(s, hook.id))[0].status, 'delivered');
  });

  test('disabled after failing for 24 hours, however few the failures', async () => {
    const s = await setup();
    receiver.answer('/long-down', () => ({ status: 502, body: '' }));
    const hook = await addWebhook(s, { url: receiver.url('/long-down'), events: 'item.created' });
    const since = `${new Date(Date.now() - 25 * 3600_000).toISOString().slice(0, 19)}+00:00`;
    await s.t.db
      .updateTable('webhooks')
      .set({ consecutive_failures: 1, failing_since: since })
      .where('id', '=', hook.id)
      .execute();
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Long' });
    await s.t.app.webhooks.deliverDue();
    const disabled = (await client(s.t.app, s.admin).get(`${s.api}/webhooks/${hook.id}.json`)).json();
    assert.equal(disabled.enabled, false);
    assert.equal(disabled.disabled_reason, `Disabled after failing since ${since} (24 hours); the last: HTTP 502`);
  });

  test('at most one delivery of an event to a webhook: the database refuses a second', async () => {
    const s = await setup();
    const hook = await addWebhook(s, { url: receiver.url('/once'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Once' });
    const row = await s.t.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', hook.id)
      .executeTakeFirstOrThrow();
    const { id: _id, ...copy } = row;
    await assert.rejects(
      s.t.db
        .insertInto('webhook_deliveries')
        .values({ ...copy, uid: 'another' })
        .execute(),
    );
  });

  test('two workers on one database send each delivery once', async () => {
    const s = await setup({}, { file: true });
    const hook = await addWebhook(s, { url: receiver.url('/two-workers'), events: 'item.created' });
    for (let i = 0; i < 30; i++)
      await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: `Item ${i}` });
    const second = new WebhookWorker(s.t.db, s.t.app.log, { ...DEFAULT_WEBHOOK_WORKER_OPTIONS, allowPrivate: true });
    try {
      // A round may end early while the other worker holds what is due; the next round takes it.
      await waitFor('all 30 delivered', async () => {
        await Promise.all([s.t.app.webhooks.deliverDue(), second.deliverDue()]);
        return receiver.to('/two-workers').length >= 30;
      });
    } finally {
      await second.stop();
    }
    const got = receiver.to('/two-workers').map((r) => r.headers['shiplog-delivery']);
    assert.equal(got.length, 30);
    assert.equal(new Set(got).size, 30);
    assert.deepEqual(new Set((await deliveries(s, hook.id)).map((d) => d.status)), new Set(['delivered']));
  });
});

describe('slack format', () => {
  test('posts {text, blocks} with linked items and who did it', async () => {
    const s = await setup();
    const hook = await addWebhook(s, { url: receiver.url('/slack'), format: 'slack' });
    const asAdmin = client(s.t.app, s.admin);
    await asAdmin.post(`${s.api}/items.json`, { type: 'task', title: 'Checkout fix' });
    await asAdmin.post(`${s.api}/items.json`, { type: 'defect', title: 'Faster <search> & more' });
    await asAdmin.post(`${s.api}/items/1.json`, { status: 'completed' });
    await asAdmin.post(`${s.api}/items/2.json`, { title: 'Faster search', score: 'M' });
    await asAdmin.post(`${s.api}/deploys.json`, {
      environment: 'production',
      numbers: '1,2',
      version: 'v1.4.0',
      notes: 'Ship it',
    });
    await asAdmin.post(`${s.api}/deploys.json`, { environment: 'production', numbers: '2', version: 'v1.5.0' });
    await asAdmin.post(`${s.api}/deploys.json`, { environment: 'production', version: 'v1.4.0', rollback: 'true' });
    await s.t.app.webhooks.deliverDue();
    const got = await received(s, hook.id, '/slack');
    const link = (n: number, title: string) => `<http://shiplog.test/i/${s.product.id}/${n}/|#${n} ${title}>`;
    assert.deepEqual(
      got.map((m) => m.text),
      [
        `Ada Lovelace created task ${link(1, 'Checkout fix')}`,
        `Ada Lovelace created defect ${link(2, 'Faster &lt;search&gt; &amp; more')}`,
        `Ada Lovelace moved ${link(1, 'Checkout fix')} from backlog to completed`,
        `Ada Lovelace updated ${link(2, 'Faster search')}: title, score`,
        `v1.4.0 to production: ${link(1, 'Checkout fix')}, ${link(2, 'Faster search')} (by Ada Lovelace)`,
        `v1.5.0 to production: ${link(2, 'Faster search')} (by Ada Lovelace)`,
        `production rolled back to v1.4.0: ${link(2, 'Faster search')} reverted (by Ada Lovelace)`,
      ],
    );
    const deploy = got[4];
    assert.deepEqual(deploy.blocks, [
      { type: 'section', text: { type: 'mrkdwn', text: deploy.text } },
      { type: 'section', text: { type: 'mrkdwn', text: 'Ship it' } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'World Domination' }] },
    ]);
  });
});

describe('the command line', () => {
  test('replay sends the same event again with a new delivery id; log lists the deliveries', async () => {
    const s = await setup({}, { file: true });
    const hook = await addWebhook(s, { url: receiver.url('/replayed'), events: 'item.created' });
    const other = await addWebhook(s, { url: receiver.url('/other'), events: 'item.created' });
    await client(s.t.app, s.admin).post(`${s.api}/items.json`, { type: 'task', title: 'Again' });
    await s.t.app.webhooks.deliverDue();
    const [first] = receiver.to('/replayed');

    const firstDelivery = String(first.headers['shiplog-delivery']);
    const replay = await runCli(['webhooks', 'replay', firstDelivery], { dataDir: s.t.dataDir });
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(
      replay.stdout,
      new RegExp(`^Queued delivery [0-9a-f-]{36} of event ${first.json.id} to webhook ${hook.id} `),
    );
    await s.t.app.webhooks.deliverDue();
    const [, second] = receiver.to('/replayed');
    assert.ok(second, 'replayed');
    verified(second);
    assert.equal(second.json.id, first.json.id, 'the same event');
    const secondDelivery = String(second.headers['shiplog-delivery']);
    assert.notEqual(secondDelivery, firstDelivery, 'a new delivery');
    assert.equal(second.body, first.body, 'the same bytes');
    assert.equal(receiver.to('/other').length, 1, 'other webhooks get nothing again');

    const log = await runCli(['webhooks', 'log', String(s.product.id), '--webhook', String(hook.id)], {
      dataDir: s.t.dataDir,
    });
    assert.equal(log.code, 0, log.stderr);
    const lines = log.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.ok(lines[0].includes(secondDelivery) && lines[1].includes(firstDelivery), log.stdout);
    for (const line of lines)
      assert.match(
        line,
        new RegExp(
          `webhook ${hook.id}  item\\.created \\(event ${first.json.id}\\)  delivered  200 \\d+ ms  1 attempt\\(s\\)`,
        ),
      );
    const all = await runCli(['webhooks', 'log', String(s.product.id), '--json'], { dataDir: s.t.dataDir });
    assert.deepEqual(new Set(JSON.parse(all.stdout).map((d: any) => d.webhook_id)), new Set([hook.id, other.id]));

    const unknown = await runCli(['webhooks', 'replay', 'no-such-delivery'], { dataDir: s.t.dataDir });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No webhook delivery no-such-delivery/);
    await client(s.t.app, s.admin).post(`${s.api}/webhooks/${hook.id}.json`, { enabled: 'false' });
    const refused = await runCli(['webhooks', 'replay', firstDelivery], { dataDir: s.t.dataDir });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is disabled \(Disabled by Ada Lovelace\.\); enable it first/);
    const badLog = await runCli(['webhooks', 'log', String(s.product.id), '--webhook', '999999'], {
      dataDir: s.t.dataDir,
    });
    assert.equal(badLog.code, 1);
  });
});
