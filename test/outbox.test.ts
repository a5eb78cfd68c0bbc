import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { markAllSent } from '../src/mail/outbox.js';
import type { MailTransport } from '../src/mail/transport.js';
import { OutboxWorker, retryDelayMs } from '../src/mail/worker.js';
import { deployMessageRenderer } from '../src/deploys/index.js';
import type { FastifyBaseLogger } from 'fastify';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';
import { firstTransactionHangs, ManualClock, until } from './manual-clock.js';

/** A transport that fails for chosen addresses, and records what it sent. */
const sent: number[] = [];
const failures = new Map<string, Error & { responseCode?: number }>();
const transport: MailTransport = {
  async send(mail, outboxId) {
    for (const [needle, err] of failures) if (String(mail.to).includes(needle)) throw err;
    sent.push(outboxId);
  },
  reset() {},
  close() {},
};

let t: TestContext;
before(async () => {
  t = await makeApp({ mailTransport: transport });
});
after(() => t.close());

async function deployTo(followerCount: number) {
  const deployer = await makeUser(t.db);
  const followers = [];
  for (let i = 0; i < followerCount; i++) followers.push(await makeUser(t.db));
  const product = await makeProduct(t.db, deployer, followers);
  for (const f of followers) await makeItem(t.app, f, product.id);
  const numbers = followers.map((_, i) => i + 1).join(',');
  const res = await client(t.app, deployer).post(`/api/products/${product.id}/deploys.json`, {
    environment: 'prod',
    numbers,
  });
  assert.equal(res.statusCode, 200);
  return { followers, deployId: res.json().id as number };
}

const rowsOf = (deployId: number) =>
  t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deployId).orderBy('id').execute();

test('nothing is sent inside the request: messages wait in the outbox until the worker runs', async () => {
  const before = sent.length;
  const { deployId } = await deployTo(2);
  assert.equal(sent.length, before);
  assert.deepEqual(
    (await rowsOf(deployId)).map((r) => r.status),
    ['pending', 'pending'],
  );
  await t.app.outbox.deliverDue();
  assert.deepEqual(
    (await rowsOf(deployId)).map((r) => r.status),
    ['sent', 'sent'],
  );
});

test('a temporary failure is retried later with backoff; the others go out meanwhile', async () => {
  const { followers, deployId } = await deployTo(3);
  failures.set(followers[1].email, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), {}));
  await t.app.outbox.deliverDue();
  failures.clear();
  const rows = await rowsOf(deployId);
  assert.deepEqual(
    rows.map((r) => r.status),
    ['sent', 'pending', 'sent'],
  );
  const failed = rows[1];
  assert.equal(failed.attempts, 1);
  assert.match(failed.last_error!, /ECONNREFUSED/);
  assert.ok(Date.parse(failed.next_attempt_at) > Date.now(), 'retry is in the future');
  assert.ok(Date.parse(failed.next_attempt_at) <= Date.now() + 60_000, 'first retry within a minute');

  await t.app.outbox.deliverDue();
  assert.equal((await rowsOf(deployId))[1].status, 'pending', 'not retried before its time');
  await t.db
    .updateTable('outbox')
    .set({ next_attempt_at: '2000-01-01T00:00:00+00:00' })
    .where('id', '=', failed.id)
    .execute();
  await t.app.outbox.deliverDue();
  const retried = (await rowsOf(deployId))[1];
  assert.equal(retried.status, 'sent');
  assert.equal(retried.attempts, 2);
});

test('a permanent (5xx) failure is recorded and not retried', async () => {
  const { followers, deployId } = await deployTo(1);
  failures.set(followers[0].email, Object.assign(new Error('550 mailbox unavailable'), { responseCode: 550 }));
  await t.app.outbox.deliverDue();
  failures.clear();
  const [row] = await rowsOf(deployId);
  assert.equal(row.status, 'failed');
  assert.match(row.last_error!, /550/);
});

test('a message claimed by a worker that died is taken up again once its lease has run out', async () => {
  const { deployId } = await deployTo(1);
  const [row] = await rowsOf(deployId);
  await t.db
    .updateTable('outbox')
    .set({ status: 'sending', lease_until: '2000-01-01T00:00:00+00:00', attempts: 1 })
    .where('id', '=', row.id)
    .execute();
  await t.app.outbox.deliverDue();
  assert.equal((await rowsOf(deployId))[0].status, 'sent');
});

test('backoff grows exponentially from about 30 s, is capped, and is jittered', () => {
  assert.equal(
    retryDelayMs(1, () => 0.5),
    30_000,
  );
  assert.equal(
    retryDelayMs(2, () => 0.5),
    60_000,
  );
  assert.equal(
    retryDelayMs(20, () => 0.5),
    3600_000,
  );
  assert.equal(
    retryDelayMs(1, () => 0),
    15_000,
  );
  assert.equal(
    retryDelayMs(1, () => 0.999),
    44_970,
  );
});

test(
  'rows hold what a message is made of; its text and HTML are rendered when it is sent, with the items as ' +
    'they are then',
  async () => {
    const seen = new Map<number, { subject: string; text: string; html: string }>();
    const recording: MailTransport = {
      async send(mail, outboxId) {
        seen.set(outboxId, { subject: String(mail.subject), text: String(mail.text), html: String(mail.html) });
      },
      reset() {},
      close() {},
    };
    const own = await makeApp({ mailTransport: recording });
    try {
      const deployer = await makeUser(own.db);
      const follower = await makeUser(own.db);
      const product = await makeProduct(own.db, deployer, [follower]);
      await makeItem(own.app, follower, product.id, { title: 'Old title' });
      const api = client(own.app, deployer);
      const res = await api.post(`/api/products/${product.id}/deploys.json`, {
        environment: 'prod',
        numbers: '1',
        notes: 'Some *notes*',
      });
      assert.equal(res.statusCode, 200);
      const [row] = await own.db.selectFrom('outbox').selectAll().where('deploy_id', '=', res.json().id).execute();
      assert.equal(row.subject, `[${product.name}] Deployed to prod: #1 Old title`);

      assert.equal(
        (await api.post(`/api/products/${product.id}/items/1.json`, { title: 'New title' })).statusCode,
        200,
      );
      await own.app.outbox.deliverDue();
      const mail = seen.get(row.id)!;
      assert.ok(mail, 'the message was sent');
      assert.equal(mail.subject, row.subject, 'the subject is the one queued');
      assert.match(mail.text, /#1 \[task\] New title \(backlog\)/);
      assert.match(mail.text, /Some \*notes\*/);
      assert.match(mail.html, /<em>notes<\/em>/);
      assert.match(mail.html, />New title</);
      assert.equal(
        (await own.db.selectFrom('outbox').select('status').where('id', '=', row.id).executeTakeFirstOrThrow()).status,
        'sent',
      );
    } finally {
      await own.close();
    }
  },
);

test('a message whose deploy no longer exists is given up with a clear error, and not sent', async () => {
  const { deployId } = await deployTo(1);
  const [row] = await rowsOf(deployId);
  await t.db.updateTable('outbox').set({ deploy_id: null }).where('id', '=', row.id).execute();
  await t.app.outbox.deliverDue();
  const after = await t.db.selectFrom('outbox').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
  assert.equal(after.status, 'failed');
  assert.match(after.last_error!, /no longer exist/);
  assert.ok(!sent.includes(row.id));
});

test('sends run in a sliding window: a stuck message holds up only itself, each message goes out once, never ' +
  'more than the window at a time', {
  timeout: 30_000,
}, async () => {
  const WINDOW = 4;
  let release!: () => void;
  const stuck = new Promise<void>((resolve) => (release = resolve));
  let stuckAddress = '';
  let inFlight = 0;
  let most = 0;
  const deliveries = new Map<number, number>();
  const gated: MailTransport = {
    async send(mail, outboxId) {
      inFlight += 1;
      most = Math.max(most, inFlight);
      try {
        if (String(mail.to).includes(stuckAddress)) await stuck;
        else await new Promise((resolve) => setImmediate(resolve));
        deliveries.set(outboxId, (deliveries.get(outboxId) ?? 0) + 1);
      } finally {
        inFlight -= 1;
      }
    },
    reset() {},
    close() {},
  };
  const own = await makeApp({ mailTransport: gated, worker: { window: WINDOW } });
  try {
    const deployer = await makeUser(own.db);
    const followers = [];
    for (let i = 0; i < 12; i++) followers.push(await makeUser(own.db));
    const product = await makeProduct(own.db, deployer, followers);
    for (const f of followers) await makeItem(own.app, f, product.id);
    stuckAddress = followers[0].email;
    const numbers = followers.map((_, i) => i + 1).join(',');
    const res = await client(own.app, deployer).post(`/api/products/${product.id}/deploys.json`, {
      environment: 'prod',
      numbers,
    });
    assert.equal(res.statusCode, 200);

    const round = own.app.outbox.deliverDue();
    await until('the other messages to go out while one is stuck', () => deliveries.size === 11);
    // A delivery is recorded as sent a moment after the transport returns: wait for the records
    // rather than reading them the instant the 11th send lands.
    const unsent = async () =>
      (await own.db.selectFrom('outbox').select(['user_id', 'status']).execute())
        .filter((r) => r.status !== 'sent')
        .map((r) => r.user_id);
    await until('every message but the stuck one recorded as sent', async () => (await unsent()).length === 1);
    assert.deepEqual(await unsent(), [followers[0].user.id], 'every message but the stuck one is recorded as sent');

    release();
    assert.equal(await round, 12);
    assert.equal(deliveries.size, 12);
    assert.ok(
      [...deliveries.values()].every((n) => n === 1),
      'each message went out once',
    );
    assert.ok(most <= WINDOW, `${most} sends at once`);
    assert.ok((await own.db.selectFrom('outbox').select('status').execute()).every((r) => r.status === 'sent'));
  } finally {
    release();
    await own.close();
  }
});

test("deliveries are recorded together, each only while its claim is still this worker's", async () => {
  const { deployId } = await deployTo(3);
  const rows = await rowsOf(deployId);
  await t.db.updateTable('outbox').set({ status: 'sending', attempts: 1 }).where('deploy_id', '=', deployId).execute();
  // The third message's claim lapsed and another worker took it over (one attempt more).
  await t.db.updateTable('outbox').set({ attempts: 2 }).where('id', '=', rows[2].id).execute();
  const recorded = await markAllSent(
    t.db,
    rows.map((r) => ({ id: r.id, attempts: 1 })),
    '2026-01-01T00:00:00+00:00',
  );
  assert.deepEqual(
    [...recorded].sort((a, b) => a - b),
    [rows[0].id, rows[1].id],
  );
  assert.deepEqual(
    (await rowsOf(deployId)).map((r) => r.status),
    ['sent', 'sent', 'sending'],
  );
});

test('a round stuck outside any send (here: a claim the database never answers) is given up, logged, and a new ' +
  'round delivers', {
  timeout: 30_000,
}, async () => {
  const { deployId } = await deployTo(2);
  // The first claim hangs for good; later ones go to the database as usual.
  const db = firstTransactionHangs(t.db);
  const errors: string[] = [];
  const log = {
    info() {},
    warn() {},
    error: (_obj: unknown, msg: string) => errors.push(msg),
  } as unknown as FastifyBaseLogger;
  const renderers = { deploy: deployMessageRenderer('http://shiplog.test', t.app.unsubscribeLinks) };
  const clock = new ManualClock();
  const worker = new OutboxWorker(db, transport, 'x@shiplog.test', t.app.unsubscribeLinks, renderers, log, {
    intervalMs: 50,
    window: 20,
    leaseMs: 60_000,
    sendTimeoutMs: 1000,
    probeIntervalMs: 1000,
    stuckRoundMs: 500,
    clock,
  });
  worker.start();
  try {
    // The first round hangs in its claim; ticks within the watchdog's patience leave it be.
    await clock.tick(500);
    assert.deepEqual(errors, []);
    assert.deepEqual(
      (await rowsOf(deployId)).map((r) => r.status),
      ['pending', 'pending'],
    );
    // Past it: the next tick gives the round up and starts one that delivers.
    await clock.tick(100);
    await worker.settled();
    assert.deepEqual(
      (await rowsOf(deployId)).map((r) => r.status),
      ['sent', 'sent'],
    );
    assert.ok(
      errors.some((m) => /made no progress/.test(m)),
      `logged: ${JSON.stringify(errors)}`,
    );
  } finally {
    await worker.stop();
    clock.reset();
  }
});
