import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/connection.js';
import { makeUser, tempDir } from '../helpers.js';
import { storageEnv } from '../storage.js';

// Several instances on one PostgreSQL database count each user's and each address's requests
// together: behind a balancer, N instances allow what one does.

const opened: { app: FastifyInstance; db: Db }[] = [];
after(async () => {
  for (const { app, db } of opened) {
    await app.close();
    await db.destroy();
  }
});

/** `count` instances on one database (a fresh schema), with these settings. */
async function instances(count: number, env: Record<string, string>): Promise<{ apps: FastifyInstance[]; db: Db }> {
  const storage = await storageEnv(tempDir());
  const config = loadConfig({ ...storage, PUBLIC_URL: 'http://shiplog.test', ...env });
  const apps: FastifyInstance[] = [];
  let first: Db | undefined;
  for (let i = 0; i < count; i++) {
    const db = await openDatabase({ dataDir: storage.DATA_DIR, databaseUrl: storage.DATABASE_URL });
    first ??= db;
    const app = await buildApp({ config, db, logger: false });
    await app.ready();
    opened.push({ app, db });
    apps.push(app);
  }
  return { apps, db: first! };
}

const whoami = (app: FastifyInstance, authorization: string | undefined, ip = '10.80.0.1') =>
  app.inject({
    method: 'GET',
    url: '/api/user/whoami.json',
    remoteAddress: ip,
    headers: authorization ? { authorization } : {},
  });

test('three instances share one count per user: the limit holds across them', async () => {
  const { apps, db } = await instances(3, { RATE_LIMIT_PER_KEY: '6', RATE_LIMIT_PER_ADDRESS: '100' });
  const ada = await makeUser(db);
  // Each instance learns the key first (that request counts against the address).
  for (const app of apps) assert.equal((await whoami(app, ada.auth)).statusCode, 200);
  const statuses: number[] = [];
  for (let i = 0; i < 9; i++) statuses.push((await whoami(apps[i % 3], ada.auth)).statusCode);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429, 429]);
  const last = await whoami(apps[0], ada.auth);
  assert.equal(last.headers['ratelimit-limit'], '6');
  assert.equal(last.headers['ratelimit-remaining'], '0');
});

test('requests counted at once on several instances each get their own count', async () => {
  const { apps } = await instances(2, { RATE_LIMIT_PER_KEY: '100', RATE_LIMIT_PER_ADDRESS: '40' });
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => whoami(apps[i % 2], undefined, '10.80.1.1')));
  assert.equal(answers.filter((a) => a.statusCode === 429).length, 20, 'exactly the 20 past the limit');
  const remaining = answers.map((a) => Number(a.headers['ratelimit-remaining'])).sort((a, b) => a - b);
  assert.deepEqual(
    remaining.slice(20),
    Array.from({ length: 40 }, (_, i) => i),
    'each count once',
  );
});

test('RATE_LIMIT_STORE=process: each instance counts alone', async () => {
  const { apps } = await instances(2, {
    RATE_LIMIT_STORE: 'process',
    RATE_LIMIT_PER_KEY: '100',
    RATE_LIMIT_PER_ADDRESS: '3',
  });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await whoami(apps[i % 2], undefined, '10.80.2.1')).statusCode);
  assert.deepEqual(statuses, [403, 403, 403, 403, 403, 403], 'three on each instance');
  assert.equal((await whoami(apps[0], undefined, '10.80.2.1')).statusCode, 429);
});

test('ended windows are deleted, and a window that ended starts again at one', async () => {
  const { apps, db } = await instances(1, { RATE_LIMIT_PER_KEY: '100', RATE_LIMIT_PER_ADDRESS: '5' });
  await whoami(apps[0], undefined, '10.80.3.1');
  await db
    .updateTable('rate_limit_windows')
    .set({ count: 5, ends_at: Date.now() - 1 })
    .execute();
  const again = await whoami(apps[0], undefined, '10.80.3.1');
  assert.equal(again.statusCode, 403);
  assert.equal(again.headers['ratelimit-remaining'], '4');
  const { deleteEndedWindows } = await import('../../src/http/repository.js');
  await db
    .updateTable('rate_limit_windows')
    .set({ ends_at: Date.now() - 1 })
    .execute();
  assert.equal(await deleteEndedWindows(db, Date.now()), 1);
});
