import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MIGRATION_NAMES } from '../src/db/migrate.js';
import { openDatabase } from '../src/db/connection.js';
import { createProduct } from '../src/products/service.js';
import { insertMembership } from '../src/products/repository.js';
import { createUser } from '../src/users/service.js';
import { basic, tempDir } from './helpers.js';
import { runCli, startServer, stopAll, waitFor, type Server } from './processes.js';
import { SmtpSink } from './smtp-sink.js';
import { databaseOptionsFor } from './storage.js';

// Two server processes on one database (the SQLite file, or one PostgreSQL schema in the
// PostgreSQL run), as several instances behind a load balancer, with one mail server.
const dataDir = tempDir();
let sink: SmtpSink;
let servers: Server[] = [];
let owner: { email: string; key: string };
const followers: { email: string; key: string }[] = [];
let productId: number;
/** A product of the resort test's own, so that it needs no other test's items. */
let resortedId: number;

before(async () => {
  const db = await openDatabase(await databaseOptionsFor(dataDir));
  const made = await db
    .transaction()
    .execute((trx) => createUser(trx, { email: 'owner@example.com', firstName: 'Owen', lastName: 'Owner' }));
  owner = { email: made.user.email, key: made.apiKey };
  productId = (await db.transaction().execute((trx) => createProduct(trx, made.user, 'Scaled'))).id;
  resortedId = (await db.transaction().execute((trx) => createProduct(trx, made.user, 'Resorted'))).id;
  for (let i = 0; i < 6; i++) {
    const f = await db
      .transaction()
      .execute((trx) => createUser(trx, { email: `f${i}@example.com`, firstName: 'F', lastName: String(i) }));
    await db
      .transaction()
      .execute((trx) => insertMembership(trx, productId, f.user.id, false, '2026-01-01T00:00:00+00:00'));
    followers.push({ email: f.user.email, key: f.apiKey });
  }
  await db.destroy();
  sink = await SmtpSink.create();
  servers = await Promise.all(
    [0, 1].map(() =>
      startServer({ dataDir, env: { SMTP_URL: sink.url, LOG_LEVEL: 'info', MAIL_DOMAIN: 'items.shiplog.test' } }),
    ),
  );
});

after(async () => {
  await stopAll();
  await sink?.stop();
});

async function call(
  i: number,
  who: { email: string; key: string },
  method: string,
  path: string,
  form?: Record<string, string>,
  product = productId,
) {
  const res = await fetch(`http://127.0.0.1:${servers[i % 2].port}/api/products/${product}${path}`, {
    method,
    headers: {
      authorization: basic(who.email, who.key),
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}

test('200 parallel creates through both instances give 200 distinct numbers and positions', async () => {
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => call(i, owner, 'POST', '/items.json', { type: 'task', title: `Item ${i}` })),
  );
  for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(
    results.map((r) => r.body.number).sort((a, b) => a - b),
    Array.from({ length: 200 }, (_, i) => i + 1),
  );
  assert.equal(new Set(results.map((r) => r.body.sort)).size, 200);
});

test('concurrent resorts through both instances never leave two items of a status at one position', async () => {
  const created = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      call(i, owner, 'POST', '/items.json', { type: 'task', title: `Item ${i}` }, resortedId),
    ),
  );
  for (const r of created) assert.equal(r.status, 200, JSON.stringify(r.body));
  const results = await Promise.all(
    Array.from({ length: 120 }, (_, i) => {
      const moved = 2 + ((i * 37) % 150);
      const anchor: Record<string, string> =
        i % 3 === 0 ? { before: '1' } : i % 3 === 1 ? { after: '200' } : { before: String(151 + (i % 40)) };
      return call(i, owner, 'POST', `/items/${moved}/resort.json`, anchor, resortedId);
    }),
  );
  for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
  const list = await call(0, owner, 'GET', '/items.json?limit=500', undefined, resortedId);
  const sorts = list.body.map((item: { sort: number }) => item.sort);
  assert.equal(list.body.length, 200);
  assert.equal(new Set(sorts).size, 200, 'every position distinct');
  assert.deepEqual(
    [...sorts].sort((a: number, b: number) => a - b),
    sorts,
    'listed in position order',
  );
});

test('a board read through one instance shows a change made through the other at once', async () => {
  const link = await runCli(['user', 'login-link', owner.email], { dataDir });
  assert.equal(link.code, 0, link.stderr);
  const signedIn = await fetch(`http://127.0.0.1:${servers[0].port}${new URL(link.stdout.trim()).pathname}`, {
    method: 'POST',
    redirect: 'manual',
  });
  assert.equal(signedIn.status, 303);
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const board = async (i: number) => {
    const res = await fetch(`http://127.0.0.1:${servers[i].port}/app/products/${productId}/board?tags=instances`, {
      headers: { cookie },
    });
    assert.equal(res.status, 200);
    return res.text();
  };
  const first = await call(1, owner, 'POST', '/items.json', {
    type: 'task',
    title: 'Seen everywhere',
    tags: 'instances',
  });
  const second = await call(1, owner, 'POST', '/items.json', { type: 'task', title: 'Also here', tags: 'instances' });
  const order = (body: string) => [...body.matchAll(/<li class="card" id="item-(\d+)"/g)].map((m) => Number(m[1]));
  for (const i of [0, 1]) assert.deepEqual(order(await board(i)), [first.body.number, second.body.number]);

  assert.equal(
    (await call(1, owner, 'POST', `/items/${first.body.number}.json`, { title: 'Renamed through the other' })).status,
    200,
  );
  assert.match(await board(0), /Renamed through the other/);
  assert.equal(
    (await call(0, owner, 'POST', `/items/${second.body.number}/resort.json`, { after: first.body.number })).status,
    200,
  );
  assert.deepEqual(order(await board(1)), [second.body.number, first.body.number]);
  assert.deepEqual(order(await board(0)), [second.body.number, first.body.number]);
});

test('item and deploy lists read through one instance show a change made through the other at once', async () => {
  const list = async (i: number) => {
    const res = await call(i, owner, 'GET', '/items.json?tags=kept-lists&status=backlog');
    assert.equal(res.status, 200);
    return res.body.map(
      (item: any) => `${item.number}:${item.title}:${item.deployed_to.map((d: any) => d.version).join('+')}`,
    );
  };
  const deploys = async (i: number) => {
    const res = await call(i, owner, 'GET', '/deploys.json?environment=kept-lists&order_by=newest');
    assert.equal(res.status, 200);
    return res.body.map((d: any) => `${d.version}:${d.items.map((item: any) => item.title).join('+')}`);
  };
  const a = await call(0, owner, 'POST', '/items.json', { type: 'task', title: 'Kept A', tags: 'kept-lists' });
  const b = await call(0, owner, 'POST', '/items.json', { type: 'task', title: 'Kept B', tags: 'kept-lists' });
  // Both instances have answered (and kept) each list before every change.
  const both = async (expectedList: string[], expectedDeploys: string[]) => {
    for (const i of [0, 1, 0, 1]) {
      assert.deepEqual(await list(i), expectedList, `items through instance ${i}`);
      assert.deepEqual(await deploys(i), expectedDeploys, `deploys through instance ${i}`);
    }
  };
  const [na, nb] = [a.body.number, b.body.number];
  await both([`${na}:Kept A:`, `${nb}:Kept B:`], []);
  assert.equal((await call(1, owner, 'POST', `/items/${na}.json`, { title: 'Kept A, renamed' })).status, 200);
  await both([`${na}:Kept A, renamed:`, `${nb}:Kept B:`], []);
  assert.equal((await call(0, owner, 'POST', `/items/${nb}/resort.json`, { after: na })).status, 200);
  await both([`${nb}:Kept B:`, `${na}:Kept A, renamed:`], []);
  assert.equal(
    (await call(1, owner, 'POST', '/deploys.json', { environment: 'kept-lists', version: 'k1', numbers: String(na) }))
      .status,
    200,
  );
  await both([`${nb}:Kept B:`, `${na}:Kept A, renamed:k1`], ['k1:Kept A, renamed']);
  assert.equal((await call(0, owner, 'POST', `/items/${na}.json`, { title: 'Kept A, again' })).status, 200);
  // A deploy page shows its items as they were deployed.
  await both([`${nb}:Kept B:`, `${na}:Kept A, again:k1`], ['k1:Kept A, renamed']);
  assert.equal((await call(1, owner, 'POST', `/items/${nb}.json`, { status: 'in-progress' })).status, 200);
  await both([`${na}:Kept A, again:k1`], ['k1:Kept A, renamed']);
});

test('reads streaming through one instance: the next one sees a change made through the other at once', async () => {
  // Reads of one caller that wait for a connection together share the read of the caller and the
  // product (db/shared-reads.ts): one asked after a change was answered must not be given the
  // answer of a read sent before it.
  const made = await call(0, owner, 'POST', '/items.json', { type: 'task', title: 'Read 0', tags: 'shared-reads' });
  assert.equal(made.status, 200);
  // By priority (kept by order version) and by time (pages cut from the stamps read per revision).
  const titles = async () => {
    const seen = [];
    for (const order of ['priority', 'recent']) {
      const res = await call(0, owner, 'GET', `/items.json?tags=shared-reads&order_by=${order}`);
      assert.equal(res.status, 200);
      seen.push(...res.body.map((item: any) => item.title));
    }
    return seen;
  };
  let reading = true;
  // A bounded stream: the caller's key has a rate limit of its own, shared by the instances.
  const readers = Array.from({ length: 20 }, async () => {
    for (let n = 0; reading && n < 10; n++) await titles();
  });
  try {
    for (let i = 1; i <= 6; i++) {
      const changed = await call(1, owner, 'POST', `/items/${made.body.number}.json`, { title: `Read ${i}` });
      assert.equal(changed.status, 200);
      assert.deepEqual(await titles(), [`Read ${i}`, `Read ${i}`], `read after change ${i}`);
    }
  } finally {
    reading = false;
    await Promise.all(readers);
  }
});

test(
  'concurrent deploys: one message per follower per deploy, delivered once by the workers of both ' + 'instances',
  async () => {
    const numbers: string[] = [];
    for (const [i, f] of followers.entries()) {
      const item = await call(i, f, 'POST', '/items.json', { type: 'task', title: `Followed by ${f.email}` });
      numbers.push(String(item.body.number));
    }
    const deploys = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(i, owner, 'POST', '/deploys.json', {
          environment: 'production',
          numbers: numbers.join(','),
          version: `1.0.${i}`,
        }),
      ),
    );
    for (const d of deploys) assert.equal(d.status, 200, JSON.stringify(d.body));
    const expected = 20 * followers.length;

    const db = await openDatabase(await databaseOptionsFor(dataDir));
    try {
      // Once every message is recorded as sent, no worker holds a claim on any: no other copy can be
      // on its way (a message goes again only when its claim lapses or its attempt failed).
      await waitFor(
        `${expected} messages recorded as sent`,
        async () => {
          const rows = await db.selectFrom('outbox').select('status').execute();
          return rows.length === expected && rows.every((r) => r.status === 'sent');
        },
        30_000,
      );
      const rows = await db.selectFrom('outbox').select(['deploy_id', 'user_id', 'status']).execute();
      assert.equal(
        new Set(rows.map((r) => `${r.deploy_id}:${r.user_id}`)).size,
        expected,
        'one row per follower per deploy',
      );
    } finally {
      await db.destroy();
    }
    assert.equal(sink.counts().size, expected);
    assert.deepEqual([...sink.duplicates()], [], 'no message delivered twice');
    for (const f of followers) assert.equal(sink.to(f.email).length, 20, f.email);
    assert.equal(sink.to(owner.email).length, 0, 'the deployer gets none');

    // Each delivery is logged once its outcome is written: the lines may still be on their way.
    const deliveredLines = () =>
      servers.map(
        (s) =>
          s
            .stdout()
            .split('\n')
            .filter((l) => l.includes('"mail delivered"')).length,
      );
    await waitFor('the deliveries logged', () => deliveredLines()[0] + deliveredLines()[1] >= expected);
    const lines = deliveredLines();
    assert.equal(lines[0] + lines[1], expected, `each message delivered by exactly one worker (${lines.join(' + ')})`);
  },
);

test('several processes starting at once on an empty database migrate it once, without errors', async () => {
  // Separate processes, as instances are: each opens the database, which migrates it.
  const fresh = tempDir();
  const runs = await Promise.all([0, 1, 2, 3].map(() => runCli(['mail', 'status'], { dataDir: fresh })));
  for (const run of runs) assert.equal(run.code, 0, run.stderr);
  const db = await openDatabase(await databaseOptionsFor(fresh));
  try {
    const applied = await db
      .selectFrom('kysely_migration' as never)
      .select('name' as never)
      .execute();
    assert.deepEqual(applied.map((r) => (r as { name: string }).name).sort(), [...MIGRATION_NAMES]);
  } finally {
    await db.destroy();
  }
});
