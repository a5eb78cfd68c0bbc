import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/connection.js';
import type { FastifyInstance } from 'fastify';
import { client, makeProduct, makeUser, tempDir, type TestUser } from '../helpers.js';
import { databaseUrlFor } from '../storage.js';

/**
 * A TCP relay between the service and PostgreSQL that can stop passing bytes, as a database
 * host that hangs does: connections stay open and nothing comes back.
 */
function relay(target: { host: string; port: number }) {
  let stalled = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target);
    const pair: [net.Socket, net.Socket] = [inbound, outbound];
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        if (!stalled) to.write(chunk);
      });
    forward(inbound, outbound);
    forward(outbound, inbound);
    const close = () => {
      pairs.delete(pair);
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', close).on('close', close);
    outbound.on('error', close).on('close', close);
  });
  return {
    server,
    stall() {
      stalled = true;
    },
    /** Back to normal; connections that lost bytes while stalled are cut, as a real outage leaves them. */
    resume() {
      stalled = false;
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let app: FastifyInstance;
let db: Db;
let proxy: ReturnType<typeof relay>;
let owner: TestUser;
let productId: number;
let schemaUrl: string;

before(async () => {
  const dataDir = tempDir();
  schemaUrl = (await databaseUrlFor(dataDir))!;
  const real = new URL(schemaUrl);
  proxy = relay({ host: real.hostname, port: Number(real.port) });
  await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
  const viaProxy = new URL(schemaUrl);
  viaProxy.port = String((proxy.server.address() as net.AddressInfo).port);
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: viaProxy.toString(),
    PG_STATEMENT_TIMEOUT_MS: '500',
    PG_CONNECT_TIMEOUT_MS: '500',
  });
  db = await openDatabase({ dataDir, databaseUrl: config.databaseUrl, statementTimeoutMs: 500, connectTimeoutMs: 500 });
  app = await buildApp({ config, db, logger: false });
  owner = await makeUser(db);
  productId = (await makeProduct(db, owner)).id;
});

after(async () => {
  await app.close();
  await db.destroy();
  await proxy.close();
});

const list = () => client(app, owner).get(`/api/products/${productId}/items.json`);

test('a statement stuck behind a lock is cancelled: 503 in the error shape, then the service recovers', async () => {
  const locker = new pg.Client({ connectionString: schemaUrl });
  await locker.connect();
  try {
    await locker.query('begin');
    await locker.query('lock table items in access exclusive mode');
    const started = Date.now();
    const res = await list();
    assert.equal(res.statusCode, 503, res.body);
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message']);
    assert.equal(res.json().code, 503);
    assert.equal(res.headers['retry-after'], '5');
    assert.ok(Date.now() - started < 3000, 'answered within the statement timeout, not hung');
  } finally {
    await locker.query('rollback');
    await locker.end();
  }
  assert.equal((await list()).statusCode, 200);
});

test('a database that stops answering gives 503 quickly; once it answers again, so does the service', async () => {
  assert.equal((await list()).statusCode, 200);
  proxy.stall();
  const started = Date.now();
  const stuck = await list();
  assert.equal(stuck.statusCode, 503, stuck.body);
  assert.equal(stuck.json().code, 503);
  assert.ok(Date.now() - started < 5000, `answered in ${Date.now() - started} ms`);
  const write = await client(app, owner).post(`/api/products/${productId}/items.json`, {
    type: 'task',
    title: 'during outage',
  });
  assert.equal(write.statusCode, 503);
  proxy.resume();
  let status = 0;
  for (let i = 0; i < 20 && status !== 200; i++) {
    status = (await list()).statusCode;
    if (status !== 200) await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(status, 200, 'the service recovered');
  const created = await client(app, owner).post(`/api/products/${productId}/items.json`, {
    type: 'task',
    title: 'after outage',
  });
  assert.equal(created.statusCode, 200, created.body);
});
