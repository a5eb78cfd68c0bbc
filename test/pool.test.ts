import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_PG_POOL_MAX, poolSizes } from '../src/config.js';
import { changesHandleOf, openDatabase, type Db } from '../src/db/connection.js';
import { databaseOptionsFor, pgBase } from './storage.js';

test('PG_POOL_MAX is shared: a quarter (rounded up, at least one) for transactions, the rest for reads', () => {
  assert.deepEqual(poolSizes(10), { reads: 7, changes: 3 });
  assert.deepEqual(poolSizes(5), { reads: 3, changes: 2 });
  assert.deepEqual(poolSizes(2), { reads: 1, changes: 1 });
  // One connection cannot be split: everything shares it.
  assert.deepEqual(poolSizes(1), { reads: 1, changes: 0 });
});

let dir: string;
let db: Db;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-pool-'));
  db = await openDatabase(await databaseOptionsFor(dir));
});
after(async () => {
  await db.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Holds `count` connections of the reads' pool until `release` is called; resolves once all are held. */
async function holdReadConnections(count: number): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held: Promise<void>[] = [];
  const taken: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    let took!: () => void;
    taken.push(new Promise<void>((resolve) => (took = resolve)));
    held.push(
      db.connection().execute(async (connection) => {
        await connection.selectNoFrom((eb) => eb.val(1).as('one')).execute();
        took();
        await released;
      }),
    );
  }
  await Promise.all(taken);
  return {
    release: async () => {
      release();
      await Promise.all(held);
    },
  };
}

test('a transaction and what a change reads outside it get a connection while every read connection is taken', {
  skip: !pgBase && 'the pools are PostgreSQL’s; SQLite has one writer and one reader connection',
  // Were transactions to wait for the held read connections, they would wait for ever.
  timeout: 30_000,
}, async () => {
  const { reads } = poolSizes(DEFAULT_PG_POOL_MAX);
  const hold = await holdReadConnections(reads);
  try {
    // With one shared pool both would wait for a held connection, and the test would never end.
    const id = await db.transaction().execute(async (trx) => {
      const product = await trx
        .insertInto('products')
        .values({
          name: 'pool',
          archived: 0,
          created_at: '2026-01-01T00:00:00+00:00',
          last_number: 0,
          items_version: 0,
          revision: 0,
          order_version: 0,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return product.id;
    });
    const read = await changesHandleOf(db)
      .selectFrom('products')
      .select('name')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(read.name, 'pool');
  } finally {
    await hold.release();
  }
  // The reads' connections serve again once given back.
  const count = await db
    .selectFrom('products')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  assert.ok(Number(count.n) >= 1);
});
