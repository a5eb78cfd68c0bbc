import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/connection.js';
import { diskTestSkip, SmallDisk } from '../disk.js';
import { assertError, client, makeItem, makeProduct, makeUser, tempDir, type TestUser } from '../helpers.js';
import { databaseUrlFor, pgBase } from '../storage.js';

// PostgreSQL refusing writes: a connection whose transactions are read-only (as on a standby),
// and a disk that fills up under the items table (a tablespace on a small file system of its own).

const BOUNDED = { timeout: 120_000 };
const BIG = 'Lorem ipsum dolor sit amet. '.repeat(2340);
const dataDir = tempDir();
let schemaUrl: string;
const opened: { app: FastifyInstance; db: Db }[] = [];
let writable: FastifyInstance;
let owner: TestUser;
let reader: TestUser;
let productId: number;
let disk: SmallDisk | undefined;
let tablespace: string | undefined;

async function appOn(databaseUrl: string): Promise<FastifyInstance> {
  const db = await openDatabase({ dataDir, databaseUrl });
  const app = await buildApp({
    config: loadConfig({ DATA_DIR: dataDir, DATABASE_URL: databaseUrl, PUBLIC_URL: 'http://shiplog.test' }),
    db,
    logger: false,
  });
  opened.push({ app, db });
  return app;
}

async function superuser<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: schemaUrl });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

before(async () => {
  assert.ok(pgBase, 'test/pg/ runs with TEST_DATABASE_URL (npm run test:pg)');
  schemaUrl = (await databaseUrlFor(dataDir))!;
  writable = await appOn(schemaUrl);
  const db = opened[0].db;
  owner = await makeUser(db);
  reader = await makeUser(db);
  productId = (await makeProduct(db, owner, [reader])).id;
  for (let i = 0; i < 3; i++) await makeItem(writable, owner, productId, { title: `Item ${i + 1}` });
});

after(async () => {
  for (const { app, db } of opened) {
    await app.close();
    await db.destroy();
  }
  try {
    if (tablespace) {
      await superuser(async (c) => {
        for (const name of await movedRelations(c))
          await c.query(`alter ${name.kind} ${name.name} set tablespace pg_default`);
        await c.query(`drop tablespace ${tablespace}`);
      });
    }
  } finally {
    disk?.unmount();
  }
});

const api = (rest: string) => `/api/products/${productId}${rest}`;
const WRITES = [
  ['/items.json', { type: 'task', title: 'Refused' }],
  ['/items/1.json', { title: 'Refused rename' }],
  ['/items/2/resort.json', { before: '3' }],
  ['/deploys.json', { environment: 'production', numbers: '1,2' }],
] as const;

test(
  'transactions that are read-only (a standby): writes answer 503 "read-only", reads and the start of an instance work',
  BOUNDED,
  async () => {
    const url = new URL(schemaUrl);
    url.searchParams.set('options', `${url.searchParams.get('options')} -c default_transaction_read_only=on`);
    const readOnly = await appOn(url.toString());
    for (const [path, form] of WRITES) {
      const res = await client(readOnly, owner).post(api(path), form);
      assertError(res, 503, { message: /read-only/, label: path });
      assert.equal(res.headers['retry-after'], '30');
    }
    // The reader's first call notes last_login: refused, and the read goes on.
    for (const path of [api('/items.json'), api('/items/1.json'), api('/deploys.json')]) {
      assert.equal((await client(readOnly, reader).get(path)).statusCode, 200, path);
    }
    const health = await readOnly.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 503);
    assert.equal(health.json().database, 'read-only');
    // The same writes through a connection that may write.
    for (const [path, form] of WRITES)
      assert.equal((await client(writable, owner).post(api(path), form)).statusCode, 200, path);
    assert.equal((await writable.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  },
);

/** The schema's items table and its indexes, where they are not in the default tablespace. */
async function movedRelations(c: pg.Client): Promise<{ kind: string; name: string }[]> {
  const { rows } = await c.query<{ relname: string; relkind: string }>(
    `select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.reltablespace <> 0 and c.relkind in ('r', 'i')`,
  );
  return rows.map((r) => ({ kind: r.relkind === 'r' ? 'table' : 'index', name: `"${r.relname}"` }));
}

test('the disk under the items table fills up: writes answer 503 "out of space", reads work, ' +
  'and writes resume once space is freed', {
  ...BOUNDED,
  skip: diskTestSkip(),
}, async () => {
  const host = new URL(schemaUrl).hostname;
  assert.ok(
    ['127.0.0.1', 'localhost', '::1'].includes(host),
    `the PostgreSQL server must run on this machine to put a tablespace on a disk of ours (it is at ${host})`,
  );
  disk = SmallDisk.mount(32);
  const location = path.join(disk.dir, 'pg');
  fs.mkdirSync(location);
  const name = `full_${process.pid}`;
  await superuser(async (c) => {
    // The location must belong to the server's own user, the owner of its data directory.
    const {
      rows: [{ data_directory }],
    } = await c.query<{ data_directory: string }>('show data_directory');
    const { uid, gid } = fs.statSync(data_directory);
    fs.chownSync(location, uid, gid);
    await c.query(`create tablespace ${name} location '${location}'`);
    tablespace = name;
    await c.query(`alter table items set tablespace ${name}`);
    const { rows } = await c.query<{ indexname: string }>(
      `select indexname from pg_indexes where schemaname = current_schema() and tablename = 'items'`,
    );
    for (const { indexname } of rows) await c.query(`alter index "${indexname}" set tablespace ${name}`);
  });

  disk.fill();
  let refused = 0;
  for (let i = 0; i < 50 && refused === 0; i++) {
    const res = await client(writable, owner).post(api('/items.json'), {
      type: 'task',
      title: `Big ${i}`,
      description: BIG,
    });
    if (res.statusCode === 200) continue;
    assertError(res, 503, { message: /^The database is out of space; try again later\.$/, label: `big item ${i}` });
    assert.equal(res.headers['retry-after'], '30');
    refused += 1;
  }
  assert.equal(refused, 1, 'a write was refused once the disk was full');
  for (const path of [api('/items.json'), api('/items/1.json'), api('/deploys.json')]) {
    assert.equal((await client(writable, owner).get(path)).statusCode, 200, path);
  }

  disk.empty();
  const res = await client(writable, owner).post(api('/items.json'), {
    type: 'task',
    title: 'After',
    description: BIG,
  });
  assert.equal(res.statusCode, 200, res.body);
  const numbers = (await client(writable, owner).get(api('/items.json'), { limit: 500 }))
    .json()
    .map((i: { number: number }) => i.number);
  assert.deepEqual(
    [...numbers].sort((a: number, b: number) => a - b),
    Array.from({ length: numbers.length }, (_, i) => i + 1),
    'no number lost to the refused writes',
  );
});
