import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { openDatabase, sqliteFile } from '../src/db/connection.js';
import { LOW_SPACE_BYTES } from '../src/db/storage.js';
import { diskTestSkip, SmallDisk } from './disk.js';
import { assertError, basic, makeProduct, makeUser, type AnswerLike, type TestUser } from './helpers.js';
import { startServer, stopAll, stopProcess, waitFor, type Server } from './processes.js';
import { SmtpSink } from './smtp-sink.js';

// The embedded SQLite on a small file system of its own, under a running server: the disk fills
// up, or stops taking writes, and comes back. Always SQLite, also in the suite's PostgreSQL run:
// it is SQLite's files that meet the disk here.

const BOUNDED = { timeout: 120_000, skip: diskTestSkip() };
// As long as a description may be (64 KiB): a new item then needs pages the database does not have.
const BIG = 'Lorem ipsum dolor sit amet. '.repeat(2340);

let disk: SmallDisk | undefined;
let server: Server;
let sink: SmtpSink;
let dataDir: string;
let owner: TestUser;
let member: TestUser;
/** Users who have not called yet: their first call notes last_login, a write. */
const newcomers: TestUser[] = [];
let productId: number;
/** Every item whose creation was answered 200, by number: it must be there at the end. */
const acknowledged = new Map<number, string>();

before(async () => {
  if (BOUNDED.skip) return;
  disk = SmallDisk.mount(32);
  dataDir = path.join(disk.dir, 'data');
  const db = await openDatabase({ dataDir });
  owner = await makeUser(db, { firstName: 'Owen' });
  member = await makeUser(db, { firstName: 'Mem' });
  for (let i = 0; i < 2; i++) newcomers.push(await makeUser(db, { firstName: `New${i}` }));
  productId = (await makeProduct(db, owner, [member, ...newcomers], 'Cramped')).id;
  await db.destroy();
  sink = await SmtpSink.create();
  server = await startServer({
    dataDir,
    // SQLite whatever the suite runs on; short leases and probes so mail resumes soon after.
    env: {
      DATABASE_URL: '',
      SMTP_URL: sink.url,
      MAIL_LEASE_SECONDS: '4',
      MAIL_SEND_TIMEOUT_SECONDS: '3',
      MAIL_PROBE_SECONDS: '1',
      LOG_LEVEL: 'info',
    },
  });
});

after(async () => {
  await stopAll();
  await sink?.stop();
  if (!disk) return;
  try {
    // Writable again, whatever a failed test left behind.
    disk.refuseWrites(databaseFiles(), false);
  } finally {
    disk.unmount();
  }
});

const databaseFiles = () => [sqliteFile(dataDir), `${sqliteFile(dataDir)}-wal`];

interface Answer extends AnswerLike {
  json: any;
}

async function call(who: TestUser, method: string, url: string, form?: Record<string, string>): Promise<Answer> {
  const res = await fetch(`http://127.0.0.1:${server.port}${url}`, {
    method,
    headers: {
      authorization: basic(who.email, who.apiKey),
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form ? new URLSearchParams(form).toString() : undefined,
    signal: AbortSignal.timeout(20_000),
  });
  const body = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { statusCode: res.status, headers: Object.fromEntries(res.headers), body, json };
}

const api = (rest: string) => `/api/products/${productId}${rest}`;

async function createItem(title: string, description = ''): Promise<Answer> {
  const res = await call(owner, 'POST', api('/items.json'), { type: 'task', title, description });
  if (res.statusCode === 200) acknowledged.set(res.json.number, title);
  return res;
}

/** A write during the trouble: done (200) or refused with the 503 `expected` says; nothing else. */
function assertDoneOrRefused(res: Answer, expected: RegExp, label: string): boolean {
  if (res.statusCode === 200) return true;
  assertError(res, 503, { message: expected, label });
  assert.equal(res.headers['retry-after'], '30', label);
  return false;
}

async function health(): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${server.port}/health`, { signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: await res.json() };
}

/** Reads work whatever the disk does, also for a caller whose first request tries to note last_login. */
async function assertReadsWork(reader: TestUser): Promise<void> {
  for (const url of [
    api('/items.json?status=backlog,in-progress,completed'),
    api('/items/1.json'),
    api('/deploys.json'),
    '/api/user/whoami.json',
  ]) {
    const res = await call(reader, 'GET', url);
    assert.equal(res.statusCode, 200, `GET ${url}: ${res.body.slice(0, 300)}`);
  }
}

/** Once the trouble is over: writes go through again, in the same process, without a restart. */
async function assertWritesResume(pid: number | undefined, expected: RegExp, label: string): Promise<void> {
  await waitFor(
    `a new item to be stored again (${label})`,
    async () => assertDoneOrRefused(await createItem(`After ${label}`, BIG), expected, label),
    30_000,
  );
  for (const [form, url] of [
    [{ title: `Renamed after ${label}` }, '/items/1.json'],
    [{ before: '2' }, '/items/1/resort.json'],
    [{ environment: 'production', numbers: '1,2' }, '/deploys.json'],
  ] as const) {
    const res = await call(owner, 'POST', api(url), form);
    assert.equal(res.statusCode, 200, `${url} after ${label}: ${res.body.slice(0, 300)}`);
  }
  await waitFor(`/health to be ok again (${label})`, async () => (await health()).status === 200, 30_000);
  assert.equal(server.child.pid, pid, 'the same server process');
  assert.equal(server.child.exitCode, null, 'the server is still running');
}

/** Every acknowledged item is there with its title, and SQLite finds the database sound. */
async function assertNothingLost(): Promise<void> {
  for (const [number, title] of acknowledged) {
    const res = await call(owner, 'GET', api(`/items/${number}.json`));
    assert.equal(res.statusCode, 200, `item ${number}`);
    if (number !== 1) assert.equal(res.json.title, title, `item ${number}`);
  }
  const check = new SQLite(sqliteFile(dataDir), { readonly: true });
  try {
    assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
  } finally {
    check.close();
  }
}

test(
  'the disk fills up: writes answer 503 "out of space", reads and /health work, nothing is lost, ' +
    'and service resumes once space is freed',
  BOUNDED,
  async (t) => {
    const started = Date.now();
    const pid = server.child.pid;
    for (let i = 1; i <= 3; i++) assert.equal((await createItem(`Before ${i}`)).statusCode, 200);
    assert.equal((await call(member, 'POST', api('/items/1/follow.json'))).statusCode, 200);
    // Mail that waits through the outage: the mail server is down when the deploy is made.
    await sink.stop();
    const deployed = await call(owner, 'POST', api('/deploys.json'), {
      environment: 'production',
      numbers: '1',
      version: 'v-before-full',
    });
    assert.equal(deployed.statusCode, 200, deployed.body);

    const filler = disk!.fill();
    t.diagnostic(`filler: ${filler} bytes; ${disk!.freeBytes()} bytes left`);

    // The first writes may still fit in room the database had set aside; soon none does.
    const refusals: Answer[] = [];
    for (let i = 0; i < 30 && refusals.length === 0; i++) {
      const res = await createItem(`Big ${i}`, BIG);
      if (!assertDoneOrRefused(res, /^The database is out of space; try again later\.$/, `big item ${i}`))
        refusals.push(res);
    }
    assert.ok(refusals.length > 0, 'a write was refused once the disk was full');
    // Every kind of write answers the same way: done if it fits, else the 503.
    for (const [form, url] of [
      [{ type: 'task', title: 'Small', description: BIG }, '/items.json'],
      [{ description: BIG }, '/items/2.json'],
      [{ before: '3' }, '/items/2/resort.json'],
      [{ environment: 'staging', numbers: '1,2,3', notes: BIG }, '/deploys.json'],
    ] as const) {
      const res = await call(owner, 'POST', api(url), form);
      if (assertDoneOrRefused(res, /out of space/, url) && url === '/items.json')
        acknowledged.set(res.json.number, form.title!);
    }

    await assertReadsWork(newcomers[0]);
    const full = await health();
    assert.equal(full.status, 503, JSON.stringify(full.body));
    assert.equal(full.body.database, 'out of space');
    assert.match(full.body.reason, /out of space/);
    assert.ok(full.body.storage.free_bytes < LOW_SPACE_BYTES, JSON.stringify(full.body));

    disk!.empty();
    await sink.start();
    await assertWritesResume(pid, /out of space/, 'the disk was full');
    // The deploy acknowledged before the disk filled has its mail delivered after all.
    await waitFor(
      'the deploy made before the disk filled to be mailed',
      () => sink.to(member.email).length > 0,
      60_000,
    );
    assert.match(sink.to(member.email)[0].mail.headers.get('subject') ?? '', /Deployed to production/);
    await assertNothingLost();
    t.diagnostic(`disk full test: ${Date.now() - started} ms`);
  },
);

test(
  'the database files stop taking writes: writes answer 503 "read-only", reads and /health work, ' +
    'and service resumes without a restart',
  BOUNDED,
  async (t) => {
    const started = Date.now();
    const pid = server.child.pid;
    const sentBefore = sink.to(member.email).length;
    const before = await createItem('Before read-only');
    assert.equal(before.statusCode, 200, before.body);

    disk!.refuseWrites(databaseFiles(), true);
    const readOnly =
      /^The database cannot take changes right now \(its storage is read-only or failing\); try again later\.$/;
    for (const [form, url] of [
      [{ type: 'task', title: 'Refused' }, '/items.json'],
      [{ title: 'Refused rename' }, '/items/1.json'],
      [{ before: '3' }, '/items/2/resort.json'],
      [{ environment: 'production', numbers: '1', version: 'v-during-read-only' }, '/deploys.json'],
    ] as const) {
      const res = await call(owner, 'POST', api(url), form);
      assertError(res, 503, { message: readOnly, label: url });
      assert.equal(res.headers['retry-after'], '30', url);
    }
    await assertReadsWork(newcomers[1]);
    const down = await health();
    assert.equal(down.status, 503, JSON.stringify(down.body));
    assert.equal(down.body.database, 'read-only');

    // Mail waiting meanwhile: the mail server is down when the deploy is made, so the worker keeps
    // the message due and tries it every second; each try claims it, a write, which is refused.
    disk!.refuseWrites(databaseFiles(), false);
    await sink.stop();
    const deployed = await call(owner, 'POST', api('/deploys.json'), {
      environment: 'production',
      numbers: '1',
      version: 'v-before-read-only',
    });
    assert.equal(deployed.statusCode, 200, deployed.body);
    const logFrom = server.stdout().length;
    const log = () => server.stdout().slice(logFrom).split('\n');
    disk!.refuseWrites(databaseFiles(), true);
    await waitFor(
      'the mail worker to meet the refusal',
      () => log().some((l) => l.includes('mail delivery round failed')),
      30_000,
    );
    disk!.refuseWrites(databaseFiles(), false);
    await sink.start();

    await assertWritesResume(pid, readOnly, 'the files refused writes');
    await waitFor(
      'the deploy made before the refusal to be mailed',
      () => sink.to(member.email).length > sentBefore,
      60_000,
    );
    // The worker lived through it: it said so once when its rounds began to fail and once when they
    // worked again, not at every round.
    await waitFor(
      'the mail worker to say its rounds work again',
      () => log().some((l) => l.includes('mail delivery rounds work again')),
      30_000,
    );
    assert.equal(
      log().filter((l) => l.includes('mail delivery round failed; trying again')).length,
      1,
      log().join('\n').slice(-3000),
    );
    assert.equal(
      log().filter((l) => l.includes('mail delivery rounds work again')).length,
      1,
      log().join('\n').slice(-3000),
    );
    await assertNothingLost();
    t.diagnostic(`read-only test: ${Date.now() - started} ms`);
  },
);

test('stopping the server after both leaves a database that opens cleanly', BOUNDED, async () => {
  await stopProcess(server.child);
  const db = await openDatabase({ dataDir });
  try {
    const count = await db
      .selectFrom('items')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.ok(Number(count.n) >= acknowledged.size);
  } finally {
    await db.destroy();
  }
});
