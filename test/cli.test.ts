import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/connection.js';
import { basic, tempDir } from './helpers.js';
import { runCli, runCliHere, startServer, stopAll, type CliRun } from './processes.js';
import { databaseOptionsFor, storageEnv } from './storage.js';

const KEY_PATTERN = /^[A-Za-z0-9]{32}$/;

// One removal hook for the whole file; each test takes a fresh data directory inside it.
const root = tempDir('shiplog-cli-test-');
const newDataDir = (): string => fs.mkdtempSync(path.join(root, 'data-'));

type Run = CliRun;

/**
 * Runs the admin command line on `dataDir`: its code in this process, as runCliHere explains. The
 * installed command itself, its exit codes and streams, is what "the installed command" runs.
 */
const shiplog = (dataDir: string, ...args: string[]): Promise<Run> => runCliHere(args, { dataDir });

/** Runs the installed command (bin/shiplog.js) in a process of its own on `dataDir`. */
const installed = (dataDir: string, ...args: string[]): Promise<Run> => runCli(args, { dataDir });

/** Runs a command that must succeed and returns its trimmed output. */
async function ok(dataDir: string, ...args: string[]): Promise<string> {
  const run = await shiplog(dataDir, ...args);
  assert.equal(run.code, 0, `shiplog ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

/** A refusal: the exit code (1 refused, 2 bad usage), nothing on stdout, a message matching `message` on stderr. */
function assertRefused(run: Run, code: 1 | 2, message: RegExp): void {
  assert.equal(run.code, code, `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, message);
}

/** GET as a user against the database under `dataDir`, through the same app the server builds. */
async function apiGet(
  dataDir: string,
  email: string,
  key: string,
  url: string,
): Promise<{ status: number; body: any }> {
  const db = await openDatabase(await databaseOptionsFor(dataDir));
  const app = await buildApp({ config: loadConfig(await storageEnv(dataDir)), db, logger: false });
  try {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: basic(email, key) } });
    return { status: res.statusCode, body: res.json() };
  } finally {
    await app.close();
    await db.destroy();
  }
}

describe('shiplog user add', () => {
  test('prints a generated 32-character key that authenticates the user', async () => {
    const dir = newDataDir();
    const run = await shiplog(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    const key = run.stdout.trim();
    assert.match(key, KEY_PATTERN);

    const other = await ok(dir, 'user', 'add', 'bob@example.com', '--first', 'Bob', '--last', 'Babbage');
    assert.match(other, KEY_PATTERN);
    assert.notEqual(other, key);

    const me = await apiGet(dir, 'ada@example.com', key, '/api/user/whoami.json');
    assert.equal(me.status, 200);
    assert.equal(me.body.email, 'ada@example.com');
    assert.equal(me.body.first_name, 'Ada');
    assert.equal(me.body.last_name, 'Lovelace');
  });

  test('--api-key sets the key', async () => {
    const dir = newDataDir();
    const key = 'Abcdefghij0123456789KLMNOPqrstuv';
    assert.equal(
      await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace', '--api-key', key),
      key,
    );
    assert.equal((await apiGet(dir, 'ada@example.com', key, '/api/user/whoami.json')).status, 200);
  });

  test('a duplicate email is refused, whatever its case', async () => {
    const dir = newDataDir();
    await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    const run = await shiplog(dir, 'user', 'add', 'ADA@example.com', '--first', 'Ada', '--last', 'Again');
    assertRefused(run, 1, /already exists/);
    assert.match(run.stderr, /ada@example\.com/);
  });

  test('a malformed email is refused and creates nothing', async () => {
    const dir = newDataDir();
    const run = await shiplog(dir, 'user', 'add', 'not-an-email', '--first', 'Ada', '--last', 'Lovelace');
    assertRefused(run, 1, /email/i);
    // The same address corrected must still be free.
    await ok(dir, 'user', 'add', 'not-an-email@example.com', '--first', 'Ada', '--last', 'Lovelace');
  });

  test('--first and --last are required (usage error)', async () => {
    const dir = newDataDir();
    assertRefused(await shiplog(dir, 'user', 'add', 'ada@example.com', '--last', 'Lovelace'), 2, /--first/);
    assertRefused(await shiplog(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada'), 2, /--last/);
    // Neither attempt may have created the user.
    await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
  });

  test('a malformed --api-key is refused', async () => {
    const dir = newDataDir();
    for (const key of ['short', 'Abcdefghij0123456789KLMNOPqrst-v', 'Abcdefghij0123456789KLMNOPqrstuvw']) {
      const run = await shiplog(
        dir,
        'user',
        'add',
        'ada@example.com',
        '--first',
        'Ada',
        '--last',
        'Lovelace',
        '--api-key',
        key,
      );
      assertRefused(run, 1, /api.key/i);
    }
  });

  test('an unknown option or a missing EMAIL is a usage error', async () => {
    const dir = newDataDir();
    const unknown = await shiplog(
      dir,
      'user',
      'add',
      'ada@example.com',
      '--first',
      'Ada',
      '--last',
      'Lovelace',
      '--nickname',
      'al',
    );
    assertRefused(unknown, 2, /nickname/);
    assert.match(unknown.stderr, /Usage: shiplog user add/);
    assertRefused(await shiplog(dir, 'user', 'add', '--first', 'Ada', '--last', 'Lovelace'), 2, /EMAIL/);
  });
});

describe('shiplog product add', () => {
  test('prints the new product id; the owner is its admin', async () => {
    const dir = newDataDir();
    const key = await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    const first = await ok(dir, 'product', 'add', 'Web site', '--owner', 'ada@example.com');
    assert.match(first, /^\d+$/);
    const second = await ok(dir, 'product', 'add', 'Mobile app', '--owner', 'ada@example.com');
    assert.match(second, /^\d+$/);
    assert.notEqual(second, first);

    const res = await apiGet(dir, 'ada@example.com', key, `/api/products/${first}.json`);
    assert.equal(res.status, 200);
    assert.equal(res.body.id, Number(first));
    assert.equal(res.body.name, 'Web site');
    assert.equal(res.body.admin, true);
  });

  test('an unknown owner is refused with exit 1', async () => {
    const dir = newDataDir();
    assertRefused(
      await shiplog(dir, 'product', 'add', 'Web site', '--owner', 'nobody@example.com'),
      1,
      /nobody@example\.com/,
    );
  });

  test('a missing --owner is a usage error', async () => {
    const dir = newDataDir();
    assertRefused(await shiplog(dir, 'product', 'add', 'Web site'), 2, /--owner/);
  });
});

describe('shiplog member add', () => {
  test('makes a user a member, or with --admin an admin', async () => {
    const dir = newDataDir();
    await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    const bobKey = await ok(dir, 'user', 'add', 'bob@example.com', '--first', 'Bob', '--last', 'Babbage');
    const carlKey = await ok(dir, 'user', 'add', 'carl@example.com', '--first', 'Carl', '--last', 'Gauss');
    const id = await ok(dir, 'product', 'add', 'Web site', '--owner', 'ada@example.com');

    assert.equal((await apiGet(dir, 'bob@example.com', bobKey, `/api/products/${id}.json`)).status, 403);

    assert.match(await ok(dir, 'member', 'add', id, 'bob@example.com'), /bob@example\.com/);
    assert.match(await ok(dir, 'member', 'add', id, 'carl@example.com', '--admin'), /admin/);

    const bob = await apiGet(dir, 'bob@example.com', bobKey, `/api/products/${id}.json`);
    assert.equal(bob.status, 200);
    assert.equal(bob.body.admin, false);
    const carl = await apiGet(dir, 'carl@example.com', carlKey, `/api/products/${id}.json`);
    assert.equal(carl.status, 200);
    assert.equal(carl.body.admin, true);
  });

  test('an unknown product is refused', async () => {
    const dir = newDataDir();
    await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    assertRefused(await shiplog(dir, 'member', 'add', '999', 'ada@example.com'), 1, /product/i);
  });

  test('an unknown user is refused', async () => {
    const dir = newDataDir();
    await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    const id = await ok(dir, 'product', 'add', 'Web site', '--owner', 'ada@example.com');
    assertRefused(await shiplog(dir, 'member', 'add', id, 'ghost@example.com'), 1, /ghost@example\.com/);
  });

  test('a non-numeric product id is a usage error', async () => {
    const dir = newDataDir();
    assertRefused(await shiplog(dir, 'member', 'add', 'abc', 'ada@example.com'), 2, /PRODUCT_ID/);
  });
});

describe('shiplog user key', () => {
  test('prints a new key; the old one stops working', async () => {
    const dir = newDataDir();
    const oldKey = await ok(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    const newKey = await ok(dir, 'user', 'key', 'ada@example.com');
    assert.match(newKey, KEY_PATTERN);
    assert.notEqual(newKey, oldKey);
    assert.equal((await apiGet(dir, 'ada@example.com', oldKey, '/api/user/whoami.json')).status, 403);
    assert.equal((await apiGet(dir, 'ada@example.com', newKey, '/api/user/whoami.json')).status, 200);
  });

  test('an unknown email is refused', async () => {
    const dir = newDataDir();
    assertRefused(await shiplog(dir, 'user', 'key', 'ghost@example.com'), 1, /ghost@example\.com/);
  });
});

describe('shiplog secrets rotate', () => {
  /** Runs `use` on an app started on the database under `dir`, as a restarted server would be. */
  async function started<T>(dir: string, use: (app: FastifyInstance, db: Db) => T | Promise<T>): Promise<T> {
    const db = await openDatabase(await databaseOptionsFor(dir));
    const app = await buildApp({ config: loadConfig(await storageEnv(dir)), db, logger: false });
    try {
      return await use(app, db);
    } finally {
      await app.close();
      await db.destroy();
    }
  }

  const keys = (dir: string) =>
    started(dir, async (_app, db) =>
      Object.fromEntries(
        (await db.selectFrom('settings').select(['name', 'value']).execute()).map((r) => [r.name, r.value]),
      ),
    );
  const unsubscribeTokenWorks = (dir: string, token: string) =>
    started(dir, (app) => app.unsubscribeLinks.verify(token) !== undefined);

  test('replaces the unsubscribe key: links signed before stop working after a restart; nothing else', async () => {
    const dir = newDataDir();
    const oldToken = await started(dir, (app) => app.unsubscribeLinks.token('<deploy-1@items.shiplog.test>'));
    const before = await keys(dir);
    assert.ok(await unsubscribeTokenWorks(dir, oldToken));

    const out = await ok(dir, 'secrets', 'rotate', 'unsubscribe');
    assert.match(
      out,
      /Restart every instance; from then on unsubscribe and invitation links already mailed stop working\./,
    );
    const after = await keys(dir);
    assert.notEqual(after.unsubscribe_key, before.unsubscribe_key);
    assert.match(after.unsubscribe_key, /^[0-9a-f]{64}$/);
    assert.deepEqual({ ...after, unsubscribe_key: undefined }, { ...before, unsubscribe_key: undefined });
    assert.equal(await unsubscribeTokenWorks(dir, oldToken), false);

    await ok(dir, 'secrets', 'rotate', 'session');
    assert.notEqual((await keys(dir)).session_cookie_key, after.session_cookie_key);
  });

  test('an unknown key is a usage error', async () => {
    assertRefused(
      await shiplog(newDataDir(), 'secrets', 'rotate', 'everything'),
      2,
      /NAME must be one of unsubscribe, sign-in, session, got "everything"/,
    );
  });
});

describe('the installed command', () => {
  test('exits 0 with its answer on stdout, 1 on a refusal and 2 on bad usage, with the reason on stderr', async () => {
    const dir = newDataDir();
    const added = await installed(dir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace');
    assert.equal(added.code, 0, added.stderr);
    assert.equal(added.stderr, '');
    assert.match(added.stdout.trim(), KEY_PATTERN);
    assert.equal((await apiGet(dir, 'ada@example.com', added.stdout.trim(), '/api/user/whoami.json')).status, 200);
    assertRefused(await installed(dir, 'product', 'add', 'Web site', '--owner', 'nobody@example.com'), 1, /nobody@/);
    assertRefused(await installed(dir, 'user', 'add', 'bob@example.com', '--last', 'Babbage'), 2, /--first/);
    assertRefused(await installed(dir, 'frobnicate', 'now'), 2, /unknown command/);
  });

  test('--help prints the overview and exits 0', async () => {
    const run = await installed(newDataDir(), '--help');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /^Usage: shiplog/);
  });
});

describe('shiplog help', () => {
  const commands = [
    'user add',
    'user key',
    'product add',
    'member add',
    'backup',
    'restore',
    'deploy',
    'secrets rotate',
  ];

  test('--help prints the usage of every command and exits 0', async () => {
    const run = await shiplog(newDataDir(), '--help');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /Usage: shiplog/);
    for (const command of commands) assert.ok(run.stdout.includes(`shiplog ${command}`), `overview lacks "${command}"`);
  });

  for (const command of commands) {
    test(`${command} --help prints its usage and exits 0`, async () => {
      const run = await shiplog(newDataDir(), ...command.split(' '), '--help');
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      assert.ok(run.stdout.startsWith(`Usage: shiplog ${command}`), run.stdout);
    });
  }

  test('an unknown command is a usage error', async () => {
    const run = await shiplog(newDataDir(), 'frobnicate', 'now');
    assertRefused(run, 2, /unknown command/);
    assert.match(run.stderr, /frobnicate/);
  });
});

describe('shiplog against a running server', () => {
  let dir: string;
  let port: number;

  before(async () => {
    dir = newDataDir();
    port = (
      await startServer({ env: { LOG_LEVEL: 'warn' }, dataDir: dir, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
    ).port;
  });

  after(stopAll);

  async function get(email: string, key: string, path: string): Promise<{ status: number; json(): unknown }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: basic(email, key) } });
    const body: unknown = await res.json();
    return { status: res.status, json: () => body };
  }

  test('users, products and members created by the command line are served at once', async () => {
    const ownerKey = await ok(dir, 'user', 'add', 'owner@example.com', '--first', 'Olga', '--last', 'Owner');
    const id = await ok(dir, 'product', 'add', 'Live product', '--owner', 'owner@example.com');
    const memberKey = await ok(dir, 'user', 'add', 'member@example.com', '--first', 'Max', '--last', 'Member');

    const notYet = await get('member@example.com', memberKey, '/api/products.json');
    assert.equal(notYet.status, 200);
    assert.deepEqual(await notYet.json(), []);

    await ok(dir, 'member', 'add', id, 'member@example.com');
    const res = await get('member@example.com', memberKey, '/api/products.json');
    assert.equal(res.status, 200);
    const products = (await res.json()) as Array<{ id: number; name: string; admin: boolean }>;
    assert.deepEqual(
      products.map((p) => ({ id: p.id, name: p.name, admin: p.admin })),
      [{ id: Number(id), name: 'Live product', admin: false }],
    );

    const owner = await get('owner@example.com', ownerKey, '/api/products.json');
    assert.equal(owner.status, 200);
    assert.deepEqual(
      ((await owner.json()) as Array<{ id: number }>).map((p) => p.id),
      [Number(id)],
    );
  });

  test('a key issued by the command line replaces the old one at once', async () => {
    const oldKey = await ok(dir, 'user', 'add', 'rotate@example.com', '--first', 'Rita', '--last', 'Rotate');
    assert.equal((await get('rotate@example.com', oldKey, '/api/user/whoami.json')).status, 200);
    const newKey = await ok(dir, 'user', 'key', 'rotate@example.com');
    assert.equal((await get('rotate@example.com', oldKey, '/api/user/whoami.json')).status, 403);
    assert.equal((await get('rotate@example.com', newKey, '/api/user/whoami.json')).status, 200);
  });
});
