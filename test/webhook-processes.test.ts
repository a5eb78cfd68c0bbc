import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase, type Db } from '../src/db/connection.js';
import { createWebhook, parseCreateWebhook } from '../src/webhooks/index.js';
import { basic, makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { startServer, stopAll, stopProcess, waitFor, type Server } from './processes.js';
import { databaseOptionsFor } from './storage.js';
import { Receiver, signatureValid } from './webhook-receiver.js';

// The built server, as operators run it: a delivery survives the process being killed, and two
// instances on one database send each delivery once.

const root = tempDir('shiplog-webhook-processes-');
const SECRET = 'processes-secret-0123456789';
let receiver: Receiver;
const databases: Db[] = [];

after(async () => {
  await stopAll();
  await receiver?.stop();
  for (const db of databases) await db.destroy();
});

/** A data directory with an admin, a product and a webhook to `url` for item.created. */
async function seed(url: string) {
  const dataDir = fs.mkdtempSync(path.join(root, 'data-'));
  const db = await openDatabase(await databaseOptionsFor(dataDir));
  databases.push(db);
  const admin = await makeUser(db, { firstName: 'Ada', lastName: 'Lovelace' });
  const product = await makeProduct(db, admin, [], 'Durable');
  const scope = { user: admin.user, product, admin: true };
  const input = parseCreateWebhook({ url, events: 'item.created', secret: SECRET });
  const { webhook } = await db.transaction().execute((trx) => createWebhook(trx, scope, input));
  return { dataDir, db, admin, product, webhook };
}

async function createItem(server: Server, admin: TestUser, productId: number, title: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${server.port}/api/products/${productId}/items.json`, {
    method: 'POST',
    headers: { authorization: basic(admin.email, admin.apiKey), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ type: 'task', title }),
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200, await res.text());
}

const env = { WEBHOOKS_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn', PUBLIC_URL: 'http://shiplog.test' };

test('a server killed mid-delivery: after a restart the claim lapses and the delivery arrives', {
  timeout: 60_000,
}, async () => {
  receiver ??= await Receiver.start();
  let calls = 0;
  // The first attempt is held until the server is gone; the next is answered.
  receiver.answer('/crash', () => (++calls === 1 ? 'hang' : { status: 200 }));
  const { dataDir, db, admin, product, webhook } = await seed(receiver.url('/crash'));
  const settings = { ...env, WEBHOOK_TIMEOUT_SECONDS: '5', WEBHOOK_LEASE_SECONDS: '6' };

  const first = await startServer({ env: settings, dataDir, cwd: root });
  try {
    await createItem(first, admin, product.id, 'Survives a crash');
    await waitFor('the first attempt to reach the receiver', () => receiver.to('/crash').length === 1);
    process.kill(first.child.pid!, 'SIGKILL');
    await first.exited;
  } finally {
    await stopProcess(first.child);
  }
  const atKill = await db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhook.id).execute();
  assert.deepEqual(
    atKill.map((d) => [d.status, d.attempts]),
    [['sending', 1]],
    'claimed, outcome never written',
  );
  // As if the lease had run out meanwhile (the restarted server takes the claim over then).
  await db.updateTable('webhook_deliveries').set({ lease_until: '2000-01-01T00:00:00+00:00' }).execute();

  const second = await startServer({ env: settings, dataDir, cwd: root });
  try {
    await waitFor(
      'the delivery to be taken over and delivered',
      async () => {
        const [d] = await db
          .selectFrom('webhook_deliveries')
          .select('status')
          .where('webhook_id', '=', webhook.id)
          .execute();
        return d.status === 'delivered';
      },
      30_000,
    );
  } finally {
    await stopProcess(second.child);
  }
  const got = receiver.to('/crash');
  assert.equal(got.length, 2);
  for (const r of got) assert.ok(signatureValid(r.headers['shiplog-signature'], SECRET, r.body));
  assert.equal(got[1].headers['shiplog-delivery'], atKill[0].uid, 'the same delivery, taken over');
  assert.equal(got[1].body, got[0].body, 'the same bytes');
  assert.equal(got[1].json.id, got[0].json.id);
  const [done] = await db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhook.id).execute();
  assert.deepEqual([done.status, done.attempts, done.response_code], ['delivered', 2, 200]);
});

test('two instances on one database deliver each event to a webhook once', { timeout: 90_000 }, async () => {
  receiver ??= await Receiver.start();
  const { dataDir, db, admin, product, webhook } = await seed(receiver.url('/instances'));
  const servers = await Promise.all([0, 1].map(() => startServer({ env, dataDir, cwd: root })));
  const ITEMS = 40;
  try {
    await Promise.all(
      Array.from({ length: ITEMS }, (_, i) => createItem(servers[i % 2], admin, product.id, `Item ${i}`)),
    );
    await waitFor(
      `${ITEMS} deliveries`,
      async () => {
        const rows = await db
          .selectFrom('webhook_deliveries')
          .select('status')
          .where('webhook_id', '=', webhook.id)
          .where('status', '=', 'delivered')
          .execute();
        return rows.length === ITEMS;
      },
      60_000,
    );
  } finally {
    await Promise.all(servers.map((s) => stopProcess(s.child)));
  }
  const got = receiver.to('/instances');
  assert.equal(got.length, ITEMS, 'no delivery sent twice');
  assert.equal(new Set(got.map((r) => r.headers['shiplog-delivery'])).size, ITEMS);
  assert.equal(new Set(got.map((r) => r.json.id)).size, ITEMS);
  assert.deepEqual(
    new Set(got.map((r) => r.json.item.title)),
    new Set(Array.from({ length: ITEMS }, (_, i) => `Item ${i}`)),
  );
});
