import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_PG_POOL_MAX, poolSizes } from '../src/config.js';
import { changesHandleOf, openDatabase, type Db, type Trx } from '../src/db/connection.js';
import { resumeSharedReadsThrough, sharedUntilStarted } from '../src/db/shared-reads.js';
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
    const id = await db.transaction().execute((trx) => productNamed('pool', trx));
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

/** A product of the test's own (made in `on`, a transaction or the handle), renamed by `rename`. */
async function productNamed(name: string, on: Db | Trx = db): Promise<number> {
  const product = await on
    .insertInto('products')
    .values({
      name,
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
}

const rename = (id: number, name: string) =>
  db.transaction().execute((trx) => trx.updateTable('products').set({ name }).where('id', '=', id).execute());

const nameOf = (handle: Db, id: number) =>
  handle.selectFrom('products').select('name').where('id', '=', id).executeTakeFirstOrThrow();

test('reads asking alike while they wait for a connection share one, seeing what was committed before any asked', {
  skip: !pgBase && 'reads are shared on PostgreSQL only; on SQLite each runs at once',
  timeout: 30_000,
}, async () => {
  const id = await productNamed('before');
  const question = `name of ${id}`;
  let reads = 0;
  const read = (handle: Db) => {
    reads++;
    return nameOf(handle, id);
  };
  const hold = await holdReadConnections(poolSizes(DEFAULT_PG_POOL_MAX).reads);
  let first: Promise<{ name: string }>;
  let later: Promise<{ name: string }>[];
  try {
    first = sharedUntilStarted(db, question, read);
    // Committed after the first asked and before the others did: all of them must see it.
    await rename(id, 'after');
    later = [1, 2, 3].map(() => sharedUntilStarted(db, question, read));
  } finally {
    await hold.release();
  }
  const names = await Promise.all([first, ...later]);
  assert.deepEqual(
    names.map((n) => n.name),
    ['after', 'after', 'after', 'after'],
  );
  assert.equal(reads, 1, 'one statement for the four');
});

test('a read asked once the shared one has started runs on its own, and sees a change committed meanwhile', {
  skip: !pgBase && 'reads are shared on PostgreSQL only; on SQLite each runs at once',
  timeout: 30_000,
}, async () => {
  const id = await productNamed('before');
  const question = `name of ${id}`;
  let started!: () => void;
  const isStarted = new Promise<void>((resolve) => (started = resolve));
  let finish!: () => void;
  const finishing = new Promise<void>((resolve) => (finish = resolve));
  // The first read takes its connection and reads before the change; it answers only afterwards.
  const first = sharedUntilStarted(db, question, async (handle) => {
    const row = await nameOf(handle, id);
    started();
    await finishing;
    return row;
  });
  await isStarted;
  await rename(id, 'after');
  const second = sharedUntilStarted(db, question, (handle) => nameOf(handle, id));
  finish();
  assert.equal((await first).name, 'before');
  assert.equal((await second).name, 'after');
});

test('a shared read that fails fails every request that joined it, and the next asks afresh', async () => {
  const question = 'failing';
  const hold = pgBase ? await holdReadConnections(poolSizes(DEFAULT_PG_POOL_MAX).reads) : undefined;
  let reads = 0;
  const failing = async () => {
    reads++;
    throw new Error('no answer');
  };
  const asked = [1, 2].map(() => sharedUntilStarted(db, question, failing));
  await hold?.release();
  for (const a of asked) await assert.rejects(a, /no answer/);
  assert.equal(reads, pgBase ? 1 : 2);
  assert.equal(await sharedUntilStarted(db, question, async () => 'again'), 'again');
});

test('the requests that joined a shared read go on through the line they are given, each when it runs them', {
  skip: !pgBase && 'reads are shared on PostgreSQL only; on SQLite each runs at once',
  timeout: 30_000,
}, async () => {
  const id = await productNamed('lined up');
  const waiting: (() => void)[] = [];
  resumeSharedReadsThrough(db, (resume) => waiting.push(resume));
  try {
    const hold = await holdReadConnections(poolSizes(DEFAULT_PG_POOL_MAX).reads);
    const settled: number[] = [];
    const asked = [0, 1, 2].map((n) =>
      sharedUntilStarted(db, `lined ${id}`, (handle) => nameOf(handle, id)).then((row) => {
        settled.push(n);
        return row;
      }),
    );
    await hold.release();
    assert.equal((await asked[0]).name, 'lined up', 'the one that read needs no turn');
    assert.deepEqual(settled, [0]);
    assert.equal(waiting.length, 2, 'the two that joined wait in the line');
    for (const resume of waiting.splice(0)) resume();
    await Promise.all(asked);
    assert.deepEqual(settled, [0, 1, 2]);
  } finally {
    resumeSharedReadsThrough(db, undefined);
  }
});
