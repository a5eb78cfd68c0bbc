import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { DEFAULT_WEBHOOK_WORKER_OPTIONS, WebhookWorker } from '../src/webhooks/index.js';
import { client, makeApp, makeProduct, makeUser, type TestContext } from './helpers.js';
import { firstTransactionHangs, ManualClock } from './manual-clock.js';
import { Receiver } from './webhook-receiver.js';

// The background jobs as the server runs them (on their own timers), on a clock the test moves:
// what the one runner gives every kind of job.

let receiver: Receiver;
before(async () => {
  receiver = await Receiver.start();
});
after(() => receiver.stop());

const DAY = 24 * 3600_000;

/** An app whose jobs run on `clock`, with an admin, a product and a webhook for item.created to `path`. */
async function appWithWebhook(clock: ManualClock, path: string, env: Record<string, string> = {}, startWorker = true) {
  const t = await makeApp({
    startWorker,
    clock,
    env: { WEBHOOKS_ALLOW_PRIVATE: '1', ...env },
    // Rounds by hand here, so that a day of the clock is not 86,400 rounds.
    webhookWorker: { intervalMs: 3600_000 },
    worker: { intervalMs: 3600_000 },
  });
  const admin = await makeUser(t.db);
  const product = await makeProduct(t.db, admin, [], 'Jobs');
  const api = `/api/products/${product.id}`;
  const res = await client(t.app, admin).post(`${api}/webhooks.json`, {
    url: receiver.url(path),
    events: 'item.created',
    secret: 'jobs-secret-0123456789abcdef',
  });
  assert.equal(res.statusCode, 200, res.body);
  return { t, admin, api, webhookId: res.json().id as number };
}

const rowCount = async (t: TestContext, table: 'webhook_deliveries' | 'webhook_events') =>
  Number(
    (
      await t.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

test('webhook retention is a periodic job: it runs on its own as the clock passes the retention, with no ' +
  'one calling it', { timeout: 30_000 }, async () => {
  const clock = new ManualClock();
  const { t, admin, api, webhookId } = await appWithWebhook(clock, '/retained', { WEBHOOK_RETENTION_DAYS: '1' });
  try {
    assert.equal(
      (await client(t.app, admin).post(`${api}/items.json`, { type: 'task', title: 'Kept a day' })).statusCode,
      200,
    );
    await t.app.webhooks.deliverDue();
    const log = async () => (await client(t.app, admin).get(`${api}/webhooks/${webhookId}/deliveries.json`)).json();
    assert.deepEqual(
      (await log()).map((d: { status: string }) => d.status),
      ['delivered'],
    );
    // Half the retention, then all of it: the sweeps that ran (every 10 minutes) kept it.
    await clock.tick(DAY / 2);
    await t.app.webhooks.settled();
    assert.equal((await log()).length, 1);
    await clock.tick(DAY / 2);
    await t.app.webhooks.settled();
    assert.equal((await log()).length, 1);
    // The next sweep finds it older than the retention.
    await clock.tick(600_000);
    await t.app.webhooks.settled();
    assert.deepEqual(await log(), []);
    assert.equal(await rowCount(t, 'webhook_deliveries'), 0);
  } finally {
    await t.close();
    clock.reset();
  }
});

test('a webhook round that makes no progress (a claim the database never answers) is given up, logged, and ' +
  'a new round delivers', { timeout: 30_000 }, async () => {
  const clock = new ManualClock();
  // The app's own worker stays off: the one under test is built below.
  const { t, admin, api } = await appWithWebhook(clock, '/watched', {}, false);
  // The first claim hangs for good; later ones go to the database as usual.
  const db = firstTransactionHangs(t.db);
  const errors: string[] = [];
  const log = { info() {}, warn() {}, debug() {}, error: (_obj: unknown, msg: string) => errors.push(msg) };
  const worker = new WebhookWorker(db, log as unknown as FastifyBaseLogger, {
    ...DEFAULT_WEBHOOK_WORKER_OPTIONS,
    allowPrivate: true,
    intervalMs: 100,
    stuckRoundMs: 1000,
    jobClock: clock,
  });
  try {
    assert.equal(
      (await client(t.app, admin).post(`${api}/items.json`, { type: 'task', title: 'Watched' })).statusCode,
      200,
    );
    worker.start();
    await clock.tick(1000);
    assert.deepEqual(errors, [], 'a round quiet for no longer than stuckRoundMs is left to run');
    assert.equal(receiver.to('/watched').length, 0);
    await clock.tick(100);
    await worker.settled();
    assert.equal(receiver.to('/watched').length, 1, 'a new round delivered');
    assert.ok(
      errors.some((m) => /webhook delivery round made no progress/.test(m)),
      `logged: ${JSON.stringify(errors)}`,
    );
  } finally {
    await worker.stop();
    await t.close();
    clock.reset();
  }
});
