import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, describe, test, type TestContext } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { openDatabase } from '../src/db/connection.js';
import { MIGRATION_NAMES, MIGRATIONS } from '../src/db/migrate.js';
import { createItem } from '../src/items/service.js';
import { basic, makeProduct, makeUser, readEml, tempDir, type TestUser } from './helpers.js';
import { freePort, runCli, startServer, stopAll, stopProcess, waitFor, type CliRun, type Server } from './processes.js';
import { pgBase } from './storage.js';

// Backup and restore are about the embedded database: the servers and commands here run on SQLite
// under their data directories whatever database the suite runs on (DATABASE_URL set empty),
// except the PostgreSQL refusals at the end.

const root = tempDir('shiplog-backup-test-');
const newDir = (name: string): string => fs.mkdtempSync(path.join(root, `${name}-`));
const PUBLIC_URL = 'http://shiplog.test';
const sqliteEnv = (dataDir: string) => ({ DATA_DIR: dataDir, DATABASE_URL: '' });

const shiplog = (dataDir: string, ...args: string[]): Promise<CliRun> =>
  runCli(args, { env: sqliteEnv(dataDir), cwd: root, timeoutMs: 60_000 });

function assertRefused(run: CliRun, message: RegExp): void {
  assert.equal(run.code, 1, `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, message);
}

function assertDone(run: CliRun): void {
  assert.equal(run.code, 0, `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.stderr, '');
}

/** A number from the command's report, by its label (`items`, `pending mail`). */
function reported(run: CliRun, label: string): number {
  const match = new RegExp(`^${label} +(\\d+)`, 'm').exec(run.stdout);
  assert.ok(match, `no "${label}" in: ${run.stdout}`);
  return Number(match[1]);
}

const sha = (file: string): string => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/**
 * A sound Shiplog database of the test's own, under a fresh data directory and closed as a server
 * leaves it: a user, a product and 40 items (so that its indexes have entries to damage).
 */
async function shiplogData(name: string): Promise<{ dataDir: string; file: string; owner: TestUser }> {
  const dataDir = newDir(name);
  const db = await openDatabase({ dataDir });
  try {
    const owner = await makeUser(db);
    const product = await makeProduct(db, owner, [], `${name} product`);
    await db.transaction().execute(async (trx) => {
      const scope = { user: owner.user, product, admin: true };
      const urls = { publicUrl: PUBLIC_URL, mailDomain: 'items.shiplog.test' };
      for (let i = 1; i <= 40; i++) {
        const input = { type: 'task', title: `Task ${i}`, description: '', score: '~', status: 'backlog' } as const;
        await createItem(trx, scope, { ...input, assignedTo: undefined, createdBy: undefined, tags: [] }, urls);
      }
    });
    return { dataDir, file: path.join(dataDir, 'shiplog.db'), owner };
  } finally {
    await db.destroy();
  }
}

function startOn(dataDir: string, env: Record<string, string> = {}): Promise<Server> {
  return startServer({
    env: { LOG_LEVEL: 'error', PUBLIC_URL, MAIL_DOMAIN: 'items.shiplog.test', DATABASE_URL: '', ...env },
    dataDir,
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

interface Answer {
  status: number;
  body: any;
  location: string | null;
}

async function call(
  server: Server,
  user: TestUser | null,
  method: 'GET' | 'POST',
  url: string,
  params?: Record<string, string>,
): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (user) headers.authorization = user.auth;
  if (params) headers['content-type'] = 'application/x-www-form-urlencoded';
  const res = await fetch(`http://127.0.0.1:${server.port}${url}`, {
    method,
    headers,
    body: params ? new URLSearchParams(params) : undefined,
    redirect: 'manual',
    signal: AbortSignal.timeout(20_000),
  }).catch((err: Error) => {
    const state = server.child.exitCode ?? server.child.signalCode ?? 'running';
    throw new Error(
      `${method} ${url}: ${String(err.cause ?? err)}; server ${state}; stderr: ${server.stderr().slice(-2000)}`,
    );
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    location: res.headers.get('location'),
  };
}

/** One write of the load: when it was sent and when its answer came (performance.now()). */
interface Write {
  kind: 'create' | 'update' | 'deploy';
  /** The item's title (create), its new title (update), the deploy's version (deploy). */
  key: string;
  number?: number;
  sentAt: number;
  ackedAt?: number;
}

describe('backup during a write load, restore, and a server on the restored copy', () => {
  const source = newDir('source');
  const target = newDir('target');
  const backupFile = path.join(root, 'shiplog-backup.db');
  let owner: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  let productId: number;
  const writes: Write[] = [];
  let backupRun: CliRun;
  let backupStart = 0;
  let backupEnd = 0;

  after(stopAll);

  // One test in two steps: the restore checks the backup the load made, write by write.
  test('backup while six clients create, update and deploy; restored into a stopped data directory, ' +
    'a server on it has every write answered before the backup, none sent after', {
    timeout: 240_000,
  }, async (t) => {
    const db = await openDatabase({ dataDir: source });
    owner = await makeUser(db, { firstName: 'Olga', lastName: 'Owner' });
    alice = await makeUser(db, { firstName: 'Alice', lastName: 'Assignee' });
    bob = await makeUser(db, { firstName: 'Bob', lastName: 'Assignee' });
    productId = (await makeProduct(db, owner, [alice, bob], 'Backed-up product')).id;
    await db.destroy();
    await backupDuringLoad(t);
    await restoreAndServe();
  });

  async function backupDuringLoad(t: TestContext): Promise<void> {
    // Nothing listens at SMTP_URL, so every message the load queues stays in the outbox.
    const server = await startOn(source, {
      SMTP_URL: `smtp://127.0.0.1:${await freePort()}`,
      MAIL_PROBE_SECONDS: '3600',
      MAIL_LEASE_SECONDS: '2',
      MAIL_SEND_TIMEOUT_SECONDS: '1',
    });
    const base = `/api/products/${productId}`;
    const created: number[] = [];
    const notUpdated: number[] = [];
    let sequence = 0;
    let failed = false;
    const later = (kind: Write['kind']) => writes.filter((w) => w.kind === kind && w.sentAt > backupEnd).length;
    const done = () =>
      failed || (backupEnd > 0 && later('create') >= 5 && later('update') >= 5 && later('deploy') >= 5);

    async function write(
      kind: Write['kind'],
      key: string,
      url: string,
      params: Record<string, string>,
      number?: number,
    ) {
      const entry: Write = { kind, key, number, sentAt: performance.now() };
      writes.push(entry);
      try {
        const res = await call(server, owner, 'POST', url, params);
        assert.equal(res.status, 200, `${kind} ${key}: ${JSON.stringify(res.body)}`);
        entry.ackedAt = performance.now();
        entry.number ??= res.body.number;
        return res.body;
      } catch (err) {
        // One failed write stops every client.
        failed = true;
        throw err;
      }
    }

    async function client(): Promise<void> {
      while (!done()) {
        const i = sequence++;
        if (i % 4 === 1 && notUpdated.length) {
          const number = notUpdated.shift()!;
          await write(
            'update',
            `Item ${number} renamed`,
            `${base}/items/${number}.json`,
            { title: `Item ${number} renamed`, status: 'in-progress' },
            number,
          );
        } else if (i % 4 === 3 && created.length >= 3) {
          const numbers = created.slice(-3);
          await write('deploy', `v${i}`, `${base}/deploys.json`, {
            environment: 'production',
            numbers: numbers.join(','),
            version: `v${i}`,
          });
        } else {
          const title = `Load item ${i}`;
          const item = await write('create', title, `${base}/items.json`, {
            type: 'task',
            title,
            assigned_to: String((i % 2 ? alice : bob).user.id),
          });
          created.push(item.number);
          notUpdated.push(item.number);
        }
      }
    }

    async function backupWhenLoaded(): Promise<void> {
      await waitFor('100 writes answered', () => writes.filter((w) => w.ackedAt).length >= 100, 30_000);
      backupStart = performance.now();
      backupRun = await shiplog(source, 'backup', backupFile);
      backupEnd = performance.now();
    }

    // A reader holding a snapshot from before the load keeps the checkpointer from copying the
    // load's writes into the database file: they stay in the WAL, where only a backup that reads
    // through SQLite finds them (a copy of the file would miss every one).
    const reader = new SQLite(path.join(source, 'shiplog.db'), { readonly: true });
    reader.exec('begin');
    reader.prepare('select count(*) from items').get();
    try {
      await Promise.all([backupWhenLoaded(), ...Array.from({ length: 6 }, client)]);
    } finally {
      reader.close();
      await stopProcess(server.child);
    }
    const answeredBefore = writes.filter((w) => w.ackedAt! < backupStart).length;
    const sentAfter = writes.filter((w) => w.sentAt > backupEnd).length;
    t.diagnostic(
      `writes: ${answeredBefore} answered before the backup, ` +
        `${writes.length - answeredBefore - sentAfter} in flight, ${sentAfter} sent after it`,
    );
    assertDone(backupRun);
    assert.match(backupRun.stdout, new RegExp(`^Backed up ${source}/shiplog\\.db to ${backupFile}\\.$`, 'm'));
    assert.match(backupRun.stdout, /^size +\d+ bytes \(\d+ pages of \d+ bytes\)$/m);
    assert.match(backupRun.stdout, /^time +\d+\.\d\d s$/m);
    // The load ran on both sides of the backup.
    for (const kind of ['create', 'update', 'deploy'] as const) {
      assert.ok(
        writes.some((w) => w.kind === kind && w.ackedAt! < backupStart),
        `no ${kind} answered before the backup`,
      );
    }
    const names = fs.readdirSync(root).filter((n) => n.startsWith('shiplog-backup.db'));
    assert.deepEqual(names, ['shiplog-backup.db'], 'nothing but the backup itself is left beside it');
  }

  async function restoreAndServe(): Promise<void> {
    const run = await shiplog(target, 'restore', backupFile);
    assertDone(run);
    assert.match(run.stdout, new RegExp(`^Restored ${backupFile} to ${target}/shiplog\\.db\\.$`, 'm'));
    assert.equal(reported(run, 'items'), reported(backupRun, 'items'));
    assert.equal(reported(run, 'pending mail'), reported(backupRun, 'pending mail'));
    assert.deepEqual(
      fs.readdirSync(target).filter((n) => n.startsWith('shiplog.db')),
      ['shiplog.db'],
      'no stale -wal or -shm',
    );

    // The restored file as it is before any server touches it.
    const file = new SQLite(path.join(target, 'shiplog.db'), { readonly: true });
    assert.deepEqual(file.prepare('pragma integrity_check').pluck().all(), ['ok']);
    const waiting = file
      .prepare("select id, message_id from outbox where status in ('pending', 'sending') order by id")
      .all() as { id: number; message_id: string }[];
    const counts = file.prepare('select count(*) as items, max(number) as maxNumber from items').get() as {
      items: number;
      maxNumber: number;
    };
    file.close();
    assert.equal(counts.items, reported(backupRun, 'items'));
    assert.equal(waiting.length, reported(backupRun, 'pending mail'));
    assert.ok(waiting.length > 0, 'the backup holds mail not yet delivered');

    const server = await startOn(target);
    try {
      // API keys still authenticate, and a wrong one still does not.
      for (const user of [owner, alice, bob])
        assert.equal((await call(server, user, 'GET', '/api/user/whoami.json')).status, 200, user.email);
      assert.equal(
        (await call(server, { ...owner, auth: basic(owner.email, 'x'.repeat(32)) }, 'GET', '/api/user/whoami.json'))
          .status,
        403,
      );

      const base = `/api/products/${productId}`;
      const item = async (number: number) => call(server, owner, 'GET', `${base}/items/${number}.json`);
      const before = (w: Write) => w.ackedAt! < backupStart;
      const afterwards = (w: Write) => w.sentAt > backupEnd;
      const updateOf = (number: number) => writes.find((w) => w.kind === 'update' && w.number === number);
      for (const w of writes.filter((w) => w.kind === 'create')) {
        const res = await item(w.number!);
        if (before(w)) assert.equal(res.status, 200, `${w.key}, answered before the backup, is missing`);
        if (afterwards(w)) assert.equal(res.status, 404, `${w.key}, sent after the backup, is there`);
        if (res.status !== 200) continue;
        const update = updateOf(w.number!);
        if (update && before(update)) assert.equal(res.body.title, update.key);
        else if (!update || afterwards(update)) assert.equal(res.body.title, w.key);
        else assert.ok([w.key, update.key].includes(res.body.title), res.body.title);
      }
      /** Every entry of a list, page by page. */
      const all = async <T>(url: string): Promise<T[]> => {
        const entries: T[] = [];
        for (;;) {
          const page = await call(server, owner, 'GET', `${url}&offset=${entries.length}`);
          assert.equal(page.status, 200, url);
          if (page.body.length === 0) return entries;
          entries.push(...page.body);
        }
      };
      const versions = new Set(
        (await all<{ version: string }>(`${base}/deploys.json?limit=100`)).map((d) => d.version),
      );
      for (const w of writes.filter((w) => w.kind === 'deploy')) {
        if (before(w)) assert.ok(versions.has(w.key), `deploy ${w.key}, answered before the backup, is missing`);
        if (afterwards(w)) assert.ok(!versions.has(w.key), `deploy ${w.key}, sent after the backup, is there`);
      }

      // Item numbers run from 1 without a hole, and go on from the highest.
      const listed = await all<{ number: number }>(
        `${base}/items.json?status=someday,backlog,in-progress,completed,accepted&order_by=oldest&limit=500`,
      );
      const numbers = listed.map((i) => i.number).sort((a, b) => a - b);
      assert.deepEqual(
        numbers,
        Array.from({ length: counts.maxNumber }, (_, i) => i + 1),
      );
      const next = await call(server, owner, 'POST', `${base}/items.json`, {
        type: 'task',
        title: 'After the restore',
      });
      assert.equal(next.status, 200);
      assert.equal(next.body.number, counts.maxNumber + 1);
      assert.equal(
        (await call(server, owner, 'POST', `${base}/items.json`, { type: 'task', title: 'And one more' })).body.number,
        counts.maxNumber + 2,
      );

      // short_url links resolve, for a restored item and the new one.
      for (const number of [1, counts.maxNumber, counts.maxNumber + 1]) {
        const shown = await item(number);
        assert.equal(shown.body.short_url, `${PUBLIC_URL}/i/${productId}/${number}/`);
        const link = await call(server, null, 'GET', new URL(shown.body.short_url).pathname);
        assert.equal(link.status, 302);
        assert.equal(link.location, `${PUBLIC_URL}${base}/items/${number}.json`);
        const followed = await call(server, owner, 'GET', new URL(link.location!).pathname);
        assert.equal(followed.status, 200);
        assert.equal(followed.body.number, number);
      }

      // Mail that was waiting in the backup is delivered, as .eml files under the data directory.
      const mailDir = path.join(target, 'mail');
      const fileOf = (id: number) => path.join(mailDir, `${String(id).padStart(8, '0')}.eml`);
      await waitFor(
        `${waiting.length} messages written to ${mailDir}`,
        () => waiting.every((m) => fs.existsSync(fileOf(m.id))),
        30_000,
      );
      for (const m of waiting) {
        const mail = await readEml(fs.readFileSync(fileOf(m.id)));
        assert.equal(mail.headers.get('message-id'), m.message_id);
        assert.match(mail.text, new RegExp(`${PUBLIC_URL}/i/${productId}/\\d+/`));
      }
      let mail: Record<string, number> = {};
      const allSent = async () => {
        mail = (await call(server, null, 'GET', '/health')).body.mail;
        return mail.pending === 0 && mail.sending === 0 && mail.sent === waiting.length;
      };
      await waitFor(`all ${waiting.length} messages sent in the outbox`, allSent, 30_000).catch((err: Error) => {
        throw new Error(`${err.message}; last seen: ${JSON.stringify(mail)}`);
      });
    } finally {
      await stopProcess(server.child);
    }
  }
});

describe('backup and restore, each on a database of its own', () => {
  after(stopAll);

  test('an existing backup file is replaced only with --force', async () => {
    const { dataDir } = await shiplogData('source');
    const existing = path.join(root, 'existing.db');
    fs.writeFileSync(existing, 'an old file');
    const before = sha(existing);
    assertRefused(await shiplog(dataDir, 'backup', existing), /exists.*--force/);
    assert.equal(sha(existing), before);
    assertDone(await shiplog(dataDir, 'backup', existing, '--force'));
    const copy = new SQLite(existing, { readonly: true });
    assert.equal(copy.prepare('pragma integrity_check').pluck().get(), 'ok');
    copy.close();
  });

  test('restore is refused while a server runs on the target, even an idle one, and changes nothing', async () => {
    const { file, owner } = await shiplogData('backed-up');
    const target = newDir('target');
    const running = await startOn(target);
    try {
      assertRefused(await shiplog(target, 'restore', file), /in use/);
      // The running server still has its own (empty) database: the backup's users are unknown to it.
      assert.equal((await call(running, owner, 'GET', '/api/user/whoami.json')).status, 403);
      assert.equal((await call(running, null, 'GET', '/health')).status, 200);
    } finally {
      await stopProcess(running.child);
    }
  });
});

describe('restore refuses a file that is not a sound Shiplog database, and leaves the target alone', () => {
  /** A copy of a sound Shiplog database of the test's own, altered by `damage`. */
  async function damaged(name: string, damage: (file: string) => void): Promise<string> {
    const file = path.join(root, name);
    fs.copyFileSync((await shiplogData(name)).file, file);
    damage(file);
    return file;
  }

  async function refusedLeavingNothing(file: string, message: RegExp): Promise<void> {
    const dir = newDir('refused');
    assertRefused(await shiplog(dir, 'restore', file), message);
    assert.deepEqual(fs.readdirSync(dir), []);
  }

  test('bytes overwritten', async () => {
    const file = await damaged('overwritten.db', (f) => {
      const db = new SQLite(f, { readonly: true });
      const page = db
        .prepare("select rootpage from sqlite_master where type = 'index' and tbl_name = 'items'")
        .pluck()
        .get() as number;
      const size = db.pragma('page_size', { simple: true }) as number;
      db.close();
      // SQLite fills a page from its end: these bytes are index entries.
      const fd = fs.openSync(f, 'r+');
      fs.writeSync(fd, Buffer.alloc(50, 0xa5), 0, 50, page * size - 60);
      fs.closeSync(fd);
    });
    await refusedLeavingNothing(file, /is damaged/);
  });

  test('truncated', async () => {
    const file = await damaged('truncated.db', (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size * 0.4)));
    await refusedLeavingNothing(file, /is damaged/);
  });

  test('not SQLite at all', async () => {
    await refusedLeavingNothing(
      await damaged('text.db', (f) => fs.writeFileSync(f, 'just some text\n'.repeat(100))),
      /not a usable SQLite database/,
    );
  });

  test("an SQLite database that is not Shiplog's", async () => {
    const file = path.join(root, 'other.db');
    const other = new SQLite(file);
    other.exec("create table notes (id integer primary key, text text); insert into notes (text) values ('hello')");
    other.close();
    await refusedLeavingNothing(file, /not a Shiplog database/);
  });

  test('a Shiplog database from a newer version', async () => {
    const file = await damaged('newer.db', (f) => {
      const db = new SQLite(f);
      db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run(
        '2999_01_01_0001_future',
        new Date().toISOString(),
      );
      db.close();
    });
    await refusedLeavingNothing(file, /newer version.*2999_01_01_0001_future/);
  });

  test('a Shiplog database with a trigger, a view and a table added: refused, naming each', async () => {
    const file = await damaged('tampered.db', (f) => {
      const db = new SQLite(f);
      db.exec(`create table stolen (value text);
          create trigger web_sessions_copy after insert on web_sessions
            begin insert into stolen values (new.id_hash); end;
          create view everyone as select email from users;`);
      db.close();
    });
    const named = 'table stolen, trigger web_sessions_copy on web_sessions, view everyone';
    await refusedLeavingNothing(file, new RegExp(`does not create: ${named}\\b.*nothing was restored`, 's'));
  });

  test(
    'a Shiplog database with an index of its own name but another definition: refused, ' +
      'and the live database is left as it was',
    async () => {
      const file = await damaged('redefined.db', (f) => {
        const db = new SQLite(f);
        const index = db
          .prepare(
            "select name from sqlite_master where type = 'index' and tbl_name = 'items' and sql is not null limit 1",
          )
          .pluck()
          .get() as string;
        db.exec(`drop index "${index}"; create index "${index}" on items (title)`);
        db.close();
      });
      const dir = newDir('kept');
      assertDone(await shiplog(dir, 'restore', (await shiplogData('sound')).file));
      const before = sha(path.join(dir, 'shiplog.db'));
      assertRefused(
        await shiplog(dir, 'restore', file),
        /index \S+ on items \(defined otherwise than this version defines it\)/,
      );
      assert.equal(sha(path.join(dir, 'shiplog.db')), before);
      assert.deepEqual(fs.readdirSync(dir), ['shiplog.db']);
    },
  );

  test('an older Shiplog database is restored, and a server brings it up to date', async () => {
    // A database as the first version left it: the first migration only.
    const file = path.join(root, 'older.db');
    const first = MIGRATION_NAMES[0];
    const old = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
    const migrator = new Migrator({
      db: old,
      provider: { getMigrations: async () => ({ [first]: MIGRATIONS[first] }) },
    });
    assert.equal((await migrator.migrateToLatest()).error, undefined);
    await old.destroy();

    const dir = newDir('older');
    const run = await shiplog(dir, 'restore', file);
    assertDone(run);
    assert.match(
      run.stdout,
      new RegExp(`^schema +1 of ${MIGRATION_NAMES.length} migrations \\(a server applies the rest`, 'm'),
    );
    const server = await startOn(dir);
    try {
      const key = (
        await shiplog(dir, 'user', 'add', 'late@example.com', '--first', 'Late', '--last', 'Comer')
      ).stdout.trim();
      const me = await call(
        server,
        { auth: basic('late@example.com', key) } as TestUser,
        'GET',
        '/api/user/whoami.json',
      );
      assert.equal(me.status, 200);
    } finally {
      await stopProcess(server.child);
    }
  });
});

describe('backup and restore on PostgreSQL', () => {
  // Refused before any connection is made, so any PostgreSQL URL shows it; the suite's own when it has one.
  const env = (dataDir: string) => ({
    DATA_DIR: dataDir,
    DATABASE_URL: pgBase ?? 'postgres://shiplog@127.0.0.1:9/shiplog',
  });

  test('backup refuses and names pg_dump', async () => {
    const dir = newDir('pg');
    const file = path.join(dir, 'backup.db');
    const run = await runCli(['backup', file], { env: env(dir), cwd: root });
    assertRefused(run, /PostgreSQL.*pg_dump -Fc.*pg_restore/);
    assert.equal(fs.existsSync(file), false);
  });

  test('restore refuses and names pg_restore', async () => {
    const dir = newDir('pg');
    const file = path.join(dir, 'backup.db');
    fs.writeFileSync(file, '');
    assertRefused(await runCli(['restore', file], { env: env(dir), cwd: root }), /PostgreSQL.*pg_restore/);
    assert.deepEqual(fs.readdirSync(dir), ['backup.db']);
  });
});
