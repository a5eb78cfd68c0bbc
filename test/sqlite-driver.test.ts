import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { GroupCommitSqliteDialect } from '../src/db/dialect.js';
import { tempDir } from './helpers.js';

// The embedded database's driver: transactions that queue together share one commit. SQLite only,
// also in the suite's PostgreSQL run (the driver is the embedded database's).

interface Fixture {
  db: Kysely<any>;
  /** Another connection to the same file, outside the driver: what a second process would see. */
  outside: SQLite.Database;
  /** Transactions per commit, in order. */
  commits: number[];
}

async function open(
  options: { maxBatch?: number; memory?: boolean; beforeCommit?: (writer: SQLite.Database) => void } = {},
): Promise<Fixture> {
  const file = options.memory ? ':memory:' : path.join(tempDir(), 'driver.db');
  const writer = new SQLite(file);
  writer.pragma('journal_mode = WAL');
  writer.pragma('foreign_keys = ON');
  const reader = options.memory ? undefined : new SQLite(file, { readonly: false });
  reader?.pragma('query_only = ON');
  const commits: number[] = [];
  const db = new Kysely<any>({
    dialect: new GroupCommitSqliteDialect({
      writer,
      reader,
      maxBatch: options.maxBatch,
      onCommit: (n) => commits.push(n),
      beforeCommit: options.beforeCommit && (() => options.beforeCommit!(writer)),
    }),
  });
  await sql`create table parents (id integer primary key)`.execute(db);
  await sql`create table notes (id integer primary key, body text not null unique,
    parent_id integer references parents(id) deferrable initially deferred)`.execute(db);
  await db.insertInto('parents').values({ id: 1 }).execute();
  commits.length = 0;
  return { db, outside: options.memory ? writer : new SQLite(file, { readonly: true }), commits };
}

/** Runs `body` on a fixture of its own, and closes both connections after it. */
async function withFixture(options: Parameters<typeof open>[0], body: (f: Fixture) => Promise<void>): Promise<void> {
  const f = await open(options);
  try {
    await body(f);
  } finally {
    await f.db.destroy();
    if (f.outside.open) f.outside.close();
  }
}

const bodies = (f: Fixture): string[] =>
  f.outside.prepare('select body from notes order by id').pluck().all() as string[];

test('transactions queued together are committed together, and each answers only once it is committed', async () => {
  await withFixture({}, async (f) => {
    const seenAtAnswer: boolean[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await f.db.transaction().execute(async (trx) => {
          await trx
            .insertInto('notes')
            .values({ body: `n${i}` })
            .execute();
          await trx.selectFrom('notes').select('id').execute();
        });
        // Answered: another connection must see it already.
        seenAtAnswer[i] = bodies(f).includes(`n${i}`);
      }),
    );
    assert.deepEqual(seenAtAnswer, Array(20).fill(true));
    assert.equal(bodies(f).length, 20);
    assert.ok(f.commits.length < 20, `20 transactions took ${f.commits.length} commits`);
    assert.equal(
      f.commits.reduce((a, b) => a + b, 0),
      20,
    );
  });
});

test('a transaction that fails in a batch is rolled back alone', async () => {
  await withFixture({}, async (f) => {
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((body) =>
        f.db.transaction().execute(async (trx) => {
          await trx.insertInto('notes').values({ body }).execute();
          if (body === 'b') throw new Error('changed its mind');
          // A statement that fails inside SQLite (a duplicate) and is caught: the rest stays.
          if (body === 'c')
            await trx
              .insertInto('notes')
              .values({ body: 'a' })
              .execute()
              .catch(() => undefined);
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(bodies(f), ['a', 'c', 'd']);
    assert.deepEqual(f.commits, [4], 'one commit for the four, the failed one included as nothing');
  });
});

test('a commit that fails fails every transaction of its batch, and the next batch starts clean', async () => {
  await withFixture({}, async (f) => {
    // A deferred foreign key is checked at COMMIT: the orphan makes the shared commit fail.
    const results = await Promise.allSettled(
      [1, 99, 1].map((parent, i) =>
        f.db.transaction().execute((trx) =>
          trx
            .insertInto('notes')
            .values({ body: `p${i}`, parent_id: parent })
            .execute(),
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'rejected'],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /FOREIGN KEY/);
    assert.deepEqual(bodies(f), [], 'nothing of the failed commit was kept');
    await f.db
      .transaction()
      .execute((trx) => trx.insertInto('notes').values({ body: 'after', parent_id: 1 }).execute());
    assert.deepEqual(bodies(f), ['after']);
  });
});

test('reads outside a transaction never see its uncommitted changes', async () => {
  await withFixture({}, async (f) => {
    let during: unknown[] = [];
    await f.db.transaction().execute(async (trx) => {
      await trx.insertInto('notes').values({ body: 'pending' }).execute();
      during = await f.db.selectFrom('notes').select('body').execute();
    });
    assert.deepEqual(during, []);
    assert.deepEqual(await f.db.selectFrom('notes').select('body').execute(), [{ body: 'pending' }]);
  });
});

test('a statement outside any transaction waits for the open batch and is committed alone', async () => {
  await withFixture({}, async (f) => {
    await Promise.all([
      f.db.transaction().execute((trx) => trx.insertInto('notes').values({ body: 't1' }).execute()),
      f.db.insertInto('notes').values({ body: 'alone' }).execute(),
      f.db.transaction().execute((trx) => trx.insertInto('notes').values({ body: 't2' }).execute()),
    ]);
    assert.deepEqual(bodies(f), ['t1', 'alone', 't2'], 'in the order they asked');
    // The lone insert is no transaction of a batch: t1 and t2 were each committed without it.
    assert.deepEqual(f.commits, [1, 1]);
  });
});

test('beforeCommit writes once per batch, in it; after a statement alone; its failure fails the batch', async () => {
  let fail = false;
  const hooked: { inTransaction: boolean; notes: number }[] = [];
  const beforeCommit = (writer: SQLite.Database) => {
    const notes = writer.prepare('select count(*) from notes').pluck().get() as number;
    hooked.push({ inTransaction: writer.inTransaction, notes });
    if (notes === 0) return;
    writer.prepare(`insert or replace into parents (id) values (100 + ?)`).run(notes);
    if (fail) throw new Error('no room');
  };
  await withFixture({ beforeCommit }, async (f) => {
    hooked.length = 0;
    const add = (body: string) =>
      f.db.transaction().execute((trx) => trx.insertInto('notes').values({ body, parent_id: 1 }).execute());
    await Promise.all(['a', 'b', 'c'].map(add));
    assert.deepEqual(f.commits, [3]);
    assert.deepEqual(hooked, [{ inTransaction: true, notes: 3 }], 'once, after the last transaction, before COMMIT');
    const parents = () => f.outside.prepare('select id from parents order by id').pluck().all();
    assert.deepEqual(parents(), [1, 103]);

    await f.db.insertInto('notes').values({ body: 'alone', parent_id: 1 }).execute();
    assert.deepEqual(hooked.at(-1), { inTransaction: false, notes: 4 });
    assert.deepEqual(parents(), [1, 103, 104], 'after a statement alone, committed before it returns');

    fail = true;
    const outcomes = await Promise.allSettled(['d', 'e'].map(add));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['rejected', 'rejected'],
    );
    assert.deepEqual(bodies(f), ['a', 'b', 'c', 'alone'], 'nothing of the batch is kept');
    assert.deepEqual(parents(), [1, 103, 104]);
    fail = false;
    await add('f');
    assert.deepEqual(bodies(f), ['a', 'b', 'c', 'alone', 'f']);
  });
});

test('a batch holds at most maxBatch transactions', async () => {
  await withFixture({ maxBatch: 4 }, async (f) => {
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        f.db.transaction().execute((trx) =>
          trx
            .insertInto('notes')
            .values({ body: `m${i}` })
            .execute(),
        ),
      ),
    );
    assert.deepEqual(f.commits, [4, 4, 2]);
    assert.equal(bodies(f).length, 10);
  });
});

test('in memory, with one connection, reads wait for the batch to be committed', async () => {
  await withFixture({ memory: true }, async (f) => {
    let read: Promise<unknown[]> | undefined;
    await f.db.transaction().execute(async (trx) => {
      await trx.insertInto('notes').values({ body: 'm' }).execute();
      read = f.db.selectFrom('notes').select('body').execute();
    });
    assert.deepEqual(await read, [{ body: 'm' }], 'the read ran after the commit, not inside the transaction');
    assert.deepEqual(f.commits, [1]);
  });
});

test('a raw SELECT outside a transaction is a plain read: it neither waits for the writer nor sees it', async () => {
  await withFixture({}, async (f) => {
    let during: unknown;
    await f.db.transaction().execute(async (trx) => {
      await trx.insertInto('notes').values({ body: 'pending' }).execute();
      // Waiting for the writer here would never end: this transaction has it.
      during = (await sql<{ n: number }>`select count(*) as n from notes`.execute(f.db)).rows[0].n;
    });
    assert.equal(during, 0);
    assert.deepEqual(f.commits, [1], 'the read did not cut the batch short');
  });
});

test('a transaction whose savepoint cannot be released fails, and none of it is committed', async () => {
  await withFixture({}, async (f) => {
    const result = f.db.transaction().execute(async (trx) => {
      await trx.insertInto('notes').values({ body: 'orphan' }).execute();
      // Releases the driver's savepoint behind its back: the driver's own RELEASE then fails.
      await sql`release t1`.execute(trx);
    });
    await assert.rejects(result, /no such savepoint/);
    assert.deepEqual(bodies(f), []);
    await f.db.transaction().execute((trx) => trx.insertInto('notes').values({ body: 'next' }).execute());
    assert.deepEqual(bodies(f), ['next']);
  });
});

test('destroy waits for the transactions already queued and commits them', async () => {
  const f = await open();
  // The first holds the writer until told to end; the others queue behind it, then destroy.
  let end!: () => void;
  const holding = new Promise<void>((resolve) => (end = resolve));
  let started!: () => void;
  const holds = new Promise<void>((resolve) => (started = resolve));
  const first = f.db.transaction().execute(async (trx) => {
    await trx.insertInto('notes').values({ body: 'q0' }).execute();
    started();
    await holding;
  });
  await holds;
  const queued = ['q1', 'q2', 'q3'].map((body) =>
    f.db.transaction().execute((trx) => trx.insertInto('notes').values({ body }).execute()),
  );
  await new Promise((resolve) => setImmediate(resolve));
  const destroyed = f.db.destroy();
  end();
  await Promise.all([first, ...queued, destroyed]);
  try {
    assert.deepEqual(bodies(f), ['q0', 'q1', 'q2', 'q3']);
  } finally {
    f.outside.close();
  }
});
