import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/connection.js';
import { client, makeItem, makeProduct, makeUser, tempDir, type TestUser } from '../helpers.js';
import { databaseUrlFor } from '../storage.js';

// One connection, so that what it has prepared can be read through the same pool.
let app: FastifyInstance;
let db: Db;
let owner: TestUser;
let productId: number;

before(async () => {
  const dataDir = tempDir();
  const databaseUrl = (await databaseUrlFor(dataDir))!;
  db = await openDatabase({ dataDir, databaseUrl, poolMax: 1 });
  app = await buildApp({ config: loadConfig({ DATA_DIR: dataDir, DATABASE_URL: databaseUrl }), db, logger: false });
  owner = await makeUser(db);
  productId = (await makeProduct(db, owner)).id;
  await makeItem(app, owner, productId, { title: 'Prepared once', tags: 'a,b' });
  await client(app, owner).post(`/api/products/${productId}/deploys.json`, { environment: 'production', numbers: '1' });
});

after(async () => {
  await app.close();
  await db.destroy();
});

const fetchItem = () => client(app, owner).get(`/api/products/${productId}/items/1.json`);
const prepared = async () =>
  (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db)).rows;

test('the hot reads are prepared once by the connection, and then only run', async () => {
  const first = await fetchItem();
  assert.equal(first.statusCode, 200, first.body);
  assert.deepEqual(first.json().tags, ['a', 'b']);
  assert.equal(first.json().deployed_to[0].environment, 'production');
  const names = (await prepared()).map((s) => s.name);
  assert.ok(
    names.some((n) => n.startsWith('shiplog_')),
    `prepared: ${names.join(', ')}`,
  );
  // The caller with the product, and the item with its tags and deployments: both by name.
  const statements = (await prepared()).map((s) => s.statement);
  assert.ok(
    statements.some((s) => /from "users"/.test(s) && /"products"/.test(s)),
    'the caller and the product',
  );
  assert.ok(
    statements.some((s) => /json_agg/.test(s) && /"items" as "i"/.test(s)),
    'the item and what it shows',
  );
  const again = await fetchItem();
  assert.deepEqual(again.json(), first.json());
  assert.deepEqual((await prepared()).map((s) => s.name).sort(), names.sort(), 'nothing prepared twice');
});

test('a prepared plan the schema changed under fails once, as unavailable; the next request works', async () => {
  assert.equal((await fetchItem()).statusCode, 200);
  // A column of `items` changes type: the item statement's plan no longer gives its result type.
  await sql`alter table items alter column who type varchar(4000)`.execute(db);
  try {
    const stale = await fetchItem();
    assert.equal(stale.statusCode, 503, stale.body);
    assert.equal(stale.json().code, 503);
    // That connection (and the plan it held) is gone; a new one prepares the statement afresh.
    const next = await fetchItem();
    assert.equal(next.statusCode, 200, next.body);
    assert.equal(next.json().title, 'Prepared once');
  } finally {
    await sql`alter table items alter column who type text`.execute(db);
  }
});
