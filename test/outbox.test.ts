import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { MailTransport } from '../src/mail/transport.js';
import { retryDelayMs } from '../src/mail/worker.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

/** A transport that fails for chosen addresses, and records what it sent. */
const sent: number[] = [];
const failures = new Map<string, Error & { responseCode?: number }>();
const transport: MailTransport = {
  async send(mail, outboxId) {
    for (const [needle, err] of failures) if (String(mail.to).includes(needle)) throw err;
    sent.push(outboxId);
  },
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
  const res = await client(t.app, deployer).post(`/api/products/${product.id}/deploys.json`, { environment: 'prod', numbers });
  assert.equal(res.statusCode, 200);
  return { followers, deployId: res.json().id as number };
}

const rowsOf = (deployId: number) => t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deployId).orderBy('id').execute();

test('nothing is sent inside the request: messages wait in the outbox until the worker runs', async () => {
  const before = sent.length;
  const { deployId } = await deployTo(2);
  assert.equal(sent.length, before);
  assert.deepEqual((await rowsOf(deployId)).map((r) => r.status), ['pending', 'pending']);
  await t.app.outbox.deliverDue();
  assert.deepEqual((await rowsOf(deployId)).map((r) => r.status), ['sent', 'sent']);
});

test('a temporary failure is retried later with backoff; the others go out meanwhile', async () => {
  const { followers, deployId } = await deployTo(3);
  failures.set(followers[1].email, Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), {}));
  await t.app.outbox.deliverDue();
  failures.clear();
  const rows = await rowsOf(deployId);
  assert.deepEqual(rows.map((r) => r.status), ['sent', 'pending', 'sent']);
  const failed = rows[1];
  assert.equal(failed.attempts, 1);
  assert.match(failed.last_error!, /ECONNREFUSED/);
  assert.ok(Date.parse(failed.next_attempt_at) > Date.now(), 'retry is in the future');
  assert.ok(Date.parse(failed.next_attempt_at) <= Date.now() + 60_000, 'first retry within a minute');

  await t.app.outbox.deliverDue();
  assert.equal((await rowsOf(deployId))[1].status, 'pending', 'not retried before its time');
  await t.db.updateTable('outbox').set({ next_attempt_at: '2000-01-01T00:00:00+00:00' }).where('id', '=', failed.id).execute();
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
  await t.db.updateTable('outbox').set({ status: 'sending', lease_until: '2000-01-01T00:00:00+00:00', attempts: 1 }).where('id', '=', row.id).execute();
  await t.app.outbox.deliverDue();
  assert.equal((await rowsOf(deployId))[0].status, 'sent');
});

test('backoff grows exponentially from about 30 s, is capped, and is jittered', () => {
  assert.equal(retryDelayMs(1, () => 0.5), 30_000);
  assert.equal(retryDelayMs(2, () => 0.5), 60_000);
  assert.equal(retryDelayMs(20, () => 0.5), 3600_000);
  assert.equal(retryDelayMs(1, () => 0), 15_000);
  assert.equal(retryDelayMs(1, () => 0.999), 44_970);
});
