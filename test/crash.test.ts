import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase, type Db } from '../src/db/connection.js';
import { databaseOptionsFor } from './storage.js';
import type { ItemRow } from '../src/db/schema.js';
import { createItem } from '../src/items/service.js';
import { DEFAULT_WORKER_OPTIONS } from '../src/mail/worker.js';
import { nowTimestamp } from '../src/time.js';
import { makeProduct, makeUser, tempDir } from './helpers.js';
import { startServer, stopAll, stopProcess, waitFor, type Server } from './processes.js';
import { SmtpSink } from './smtp-sink.js';

const MESSAGES = 1000;
const ITEMS = 4;
const KILL_AFTER = 325;
// At most one window of messages is held (claimed, outcome not yet written) when the process
// dies; only those may arrive twice.
const IN_FLIGHT_LIMIT = DEFAULT_WORKER_OPTIONS.window;

const root = tempDir('shiplog-crash-test-');
let db: Db | undefined;
let sink: SmtpSink | undefined;

after(async () => {
  await stopAll();
  await sink?.stop();
  await db?.destroy();
});

/** A deployer, ITEMS items, and MESSAGES members each following one item: one message each per deploy. */
async function seed(database: Db) {
  const deployer = await makeUser(database, { firstName: 'Dee', lastName: 'Ployer' });
  const product = await makeProduct(database, deployer, [], 'Rocket');
  const now = nowTimestamp();
  return database.transaction().execute(async (trx) => {
    const scope = { user: deployer.user, product, admin: true };
    const items: ItemRow[] = [];
    for (let i = 1; i <= ITEMS; i++) {
      items.push(
        await createItem(
          trx,
          scope,
          {
            type: 'task',
            title: `Crash-proof task ${i}`,
            description: '',
            score: '~',
            status: 'in-progress',
            assignedTo: undefined,
            createdBy: undefined,
            tags: [],
          },
          { publicUrl: 'http://shiplog.test', mailDomain: 'items.shiplog.test' },
        ),
      );
    }
    const users = await trx
      .insertInto('users')
      .values(
        Array.from({ length: MESSAGES }, (_, i) => ({
          email: `follower${i}@example.com`,
          first_name: 'Follower',
          last_name: String(i),
          api_key_hash: crypto.randomBytes(32).toString('hex'),
          created_at: now,
          last_login: null,
        })),
      )
      .returning(['id', 'email'])
      .execute();
    await trx
      .insertInto('memberships')
      .values(users.map((u) => ({ product_id: product.id, user_id: u.id, admin: 0, created_at: now })))
      .execute();
    await trx
      .insertInto('followers')
      .values(users.map((u, i) => ({ item_id: items[i % ITEMS].id, user_id: u.id, created_at: now })))
      .execute();
    return { deployer, product, users };
  });
}

async function mailCounts(server: Server): Promise<Record<string, number>> {
  const res = await fetch(`http://127.0.0.1:${server.port}/health`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { mail: Record<string, number> }).mail;
}

test('SIGKILL while 1,000 messages are being delivered: after a restart all arrive, repeats only in flight', {
  timeout: 180_000,
}, async (t) => {
  const dataDir = fs.mkdtempSync(path.join(root, 'data-'));
  db = await openDatabase(await databaseOptionsFor(dataDir));
  const { deployer, product, users } = await seed(db);

  // Slow enough that the kill lands in the middle of the run, not after it.
  sink = await SmtpSink.create({ delayMs: 10 });
  const env = {
    SMTP_URL: sink.url,
    // The messages in flight at the kill are sent again once their lease ends after the restart.
    MAIL_LEASE_SECONDS: '5',
    MAIL_SEND_TIMEOUT_SECONDS: '4',
    LOG_LEVEL: 'warn',
    PUBLIC_URL: 'http://shiplog.test',
    MAIL_DOMAIN: 'items.shiplog.test',
  };
  const first = await startServer({ env, dataDir, cwd: root });

  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${first.port}/api/products/${product.id}/deploys.json`, {
    method: 'POST',
    headers: { authorization: deployer.auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      environment: 'production',
      numbers: '1,2,3,4',
      version: '9.9.9',
      notes: 'Everything at once',
    }),
    signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200, await res.text());
  const deployed = Date.now();
  const rows = await db.selectFrom('outbox').select(['id', 'message_id', 'to_address']).execute();
  assert.equal(rows.length, MESSAGES);

  let killedAt = 0;
  try {
    await waitFor(`${KILL_AFTER} messages at the sink`, () => sink!.received.length >= KILL_AFTER, 30_000);
    process.kill(first.child.pid!, 'SIGKILL');
    killedAt = Date.now();
    await waitFor(
      'the killed server to exit',
      () => first.child.exitCode !== null || first.child.signalCode !== null,
      10_000,
    );
  } finally {
    await stopProcess(first.child);
  }
  const receivedAtKill = sink.received.length;

  // Frozen while no server runs: rows still 'sending' are exactly the ones that were in flight.
  const atKill = await db.selectFrom('outbox').select(['message_id', 'status']).execute();
  const byStatus = (s: string) => atKill.filter((r) => r.status === s).length;
  const inFlight = new Set(atKill.filter((r) => r.status === 'sending').map((r) => r.message_id));
  t.diagnostic(
    `at the kill (${killedAt - deployed} ms after the deploy): sink had ${receivedAtKill}, ` +
      `outbox sent ${byStatus('sent')}, ` +
      `sending ${byStatus('sending')}, pending ${byStatus('pending')}`,
  );
  assert.ok(byStatus('sent') < MESSAGES, 'the kill landed before delivery was complete');
  assert.ok(inFlight.size <= IN_FLIGHT_LIMIT, `${inFlight.size} messages in flight at the kill`);
  assert.equal(byStatus('failed'), 0);

  const second = await startServer({ env, dataDir, cwd: root });
  const restarted = Date.now();
  try {
    let counts: Record<string, number> = {};
    try {
      await waitFor(
        `all ${MESSAGES} Message-IDs at the sink and ${MESSAGES} sent in the outbox`,
        async () => {
          counts = await mailCounts(second);
          return sink!.counts().size === MESSAGES && counts.sent === MESSAGES;
        },
        60_000,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; sink: ${sink.counts().size} distinct of ${sink.received.length} received, ` +
          `${sink.openConnections} connection(s) open; outbox: ${JSON.stringify(counts)}; ` +
          `restarted server ${second.child.exitCode ?? second.child.signalCode ?? 'running'}; ` +
          `stdout: ${second.stdout().slice(-2000)} stderr: ${second.stderr().slice(-2000)}`,
      );
    }
    const done = Date.now();
    assert.deepEqual(
      { pending: counts.pending, sending: counts.sending, failed: counts.failed },
      { pending: 0, sending: 0, failed: 0 },
    );

    const received = sink.counts();
    assert.deepEqual(
      new Set(received.keys()),
      new Set(rows.map((r) => r.message_id)),
      'the sink got exactly the outbox messages',
    );
    for (const u of users) {
      assert.equal(new Set(sink.to(u.email).map((m) => m.messageId)).size, 1, `${u.email} got one message`);
    }

    const duplicates = sink.duplicates();
    const extraCopies = [...duplicates.values()].reduce((sum, n) => sum + n - 1, 0);
    const outside = [...duplicates.keys()].filter((id) => !inFlight.has(id));
    const figures = [
      `messages: ${MESSAGES}, deliveries at the sink: ${sink.received.length}, distinct: ${received.size}`,
      `duplicates: ${extraCopies} extra cop${extraCopies === 1 ? 'y' : 'ies'} of ${duplicates.size} message(s); ` +
        `in flight at the kill: ${inFlight.size}; outside those in flight: ${outside.length}`,
      `deploy request: ${deployed - started} ms; deploy to kill: ${killedAt - deployed} ms ` +
        `(${receivedAtKill} delivered, sink delay ${sink.delayMs} ms per message)`,
      `restart to all delivered: ${done - restarted} ms (lease ${env.MAIL_LEASE_SECONDS} s); ` +
        `deploy to all delivered: ${done - deployed} ms`,
    ];
    for (const line of figures) {
      t.diagnostic(line);
      console.log(`crash test: ${line}`);
    }
    for (const [id, n] of duplicates)
      console.log(`crash test: duplicate ${id} x${n}${inFlight.has(id) ? '' : ' (NOT in flight at the kill)'}`);

    assert.deepEqual(outside, [], 'a message that was not in flight at the kill arrived twice');
    assert.ok(
      extraCopies <= inFlight.size && extraCopies <= IN_FLIGHT_LIMIT,
      `${extraCopies} duplicates, ${inFlight.size} in flight`,
    );

    // Only the messages in flight needed a second attempt.
    const final = await db.selectFrom('outbox').select(['message_id', 'status', 'attempts', 'last_error']).execute();
    for (const row of final) {
      assert.equal(row.status, 'sent');
      assert.equal(row.attempts, inFlight.has(row.message_id) ? 2 : 1, `${row.message_id} attempts`);
      assert.equal(row.last_error, null);
    }
  } finally {
    await stopProcess(second.child);
  }
});
