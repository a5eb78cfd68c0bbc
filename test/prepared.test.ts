import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { prepared } from '../src/db/prepared.js';
import type { Db } from '../src/db/connection.js';
import { makeApp, makeProduct, makeUser, type TestContext } from './helpers.js';

describe('prepared queries', () => {
  let t: TestContext;
  let productId: number;
  before(async () => {
    t = await makeApp();
    const owner = await makeUser(t.db);
    productId = (await makeProduct(t.db, owner)).id;
  });
  after(() => t.close());

  const byIds = prepared((db, ids: number[]) =>
    db.selectFrom('products').select(['id', 'name']).where('id', 'in', ids).orderBy('id'),
  );
  const rename = prepared((db, id: number, name: string) =>
    db.updateTable('products').set({ name }).where('id', '=', id).returning(['id', 'name']),
  );
  const change = prepared((db, id: number, fields: { name?: string; archived?: number }) =>
    db.updateTable('products').set(fields).where('id', '=', id).returning(['name', 'archived']),
  );

  test('each call binds its own arguments', async () => {
    assert.deepEqual(await rename(t.db, productId, 'First'), [{ id: productId, name: 'First' }]);
    assert.deepEqual(await rename(t.db, productId, 'Second'), [{ id: productId, name: 'Second' }]);
    assert.deepEqual(await rename(t.db, productId + 1000, 'Nobody'), []);
  });

  test('an array argument of another length is another statement, with every element bound', async () => {
    const owner = await makeUser(t.db);
    const other = (await makeProduct(t.db, owner, [], 'Other')).id;
    assert.deepEqual(
      (await byIds(t.db, [productId])).map((r) => r.id),
      [productId],
    );
    assert.deepEqual(
      (await byIds(t.db, [other, productId])).map((r) => r.id),
      [productId, other].sort((a, b) => a - b),
    );
    assert.deepEqual(
      (await byIds(t.db, [other])).map((r) => r.id),
      [other],
    );
    assert.deepEqual((await byIds(t.db, [other, other + 1000, productId])).length, 2);
  });

  test('a record argument is shaped by its defined fields: undefined ones are left alone', async () => {
    assert.deepEqual(await change(t.db, productId, { name: 'Named', archived: 0 }), [{ name: 'Named', archived: 0 }]);
    assert.deepEqual(await change(t.db, productId, { name: undefined, archived: 1 }), [{ name: 'Named', archived: 1 }]);
    assert.deepEqual(await change(t.db, productId, { name: 'Renamed' }), [{ name: 'Renamed', archived: 1 }]);
    await change(t.db, productId, { archived: 0 });
  });

  test('runs inside the transaction it is given, and is undone with it', async () => {
    await assert.rejects(
      t.db.transaction().execute(async (trx) => {
        assert.deepEqual(await rename(trx, productId, 'Inside'), [{ id: productId, name: 'Inside' }]);
        assert.deepEqual((await byIds(trx, [productId]))[0].name, 'Inside');
        throw new Error('undo');
      }),
      /undo/,
    );
    assert.equal((await byIds(t.db, [productId]))[0].name, 'Renamed');
  });

  test('a query that does not take an argument as a value is refused when first built', async () => {
    const careless = prepared((db: Db, id: number, _unused: string) =>
      db.selectFrom('products').select('id').where('id', '=', id),
    );
    await assert.rejects(careless(t.db, productId, 'x'), /does not take all its arguments as values/);
  });

  /** An SQLite database of its own with a `products` table of ids 1 to 4, and the statements it ran. */
  async function loggedSqlite(): Promise<{ db: Db; sqls: string[] }> {
    const sqls: string[] = [];
    const db = new Kysely({
      dialect: new SqliteDialect({ database: new SQLite(':memory:') }),
      log: (event) => {
        sqls.push(event.query.sql);
      },
    }) as unknown as Db;
    await db.schema
      .createTable('products')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('archived', 'integer')
      .addColumn('name', 'text')
      .execute();
    await db
      .insertInto('products')
      .values([1, 2, 3, 4].map((id) => ({ id, archived: id % 2, name: `p${id}` }) as never))
      .execute();
    sqls.length = 0;
    return { db, sqls };
  }

  test("a LIMIT takes each call's number, on SQLite written into the statement (OFFSET stays bound)", async () => {
    const { db, sqls } = await loggedSqlite();
    try {
      const page = prepared((d: Db, limit: number, offset: number) =>
        d.selectFrom('products').select('id').orderBy('id').limit(limit).offset(offset),
      );
      const ids = async (limit: number, offset: number) => (await page(db, limit, offset)).map((r) => r.id);
      assert.deepEqual(await ids(2, 0), [1, 2]);
      assert.deepEqual(await ids(3, 1), [2, 3, 4]);
      assert.deepEqual(await ids(2, 1), [2, 3]);
      assert.deepEqual(await ids(1, 3), [4]);
      assert.deepEqual(
        sqls.map((q) => / limit (\S+) offset \?$/.exec(q)?.[1]),
        ['2', '3', '2', '1'],
      );
    } finally {
      await db.destroy();
    }
  });

  test('on SQLite a constant compared with a column is written into the statement; arguments stay bound', async () => {
    const { db, sqls } = await loggedSqlite();
    try {
      const live = prepared((d: Db, above: number) =>
        d
          .selectFrom('products')
          .select('id')
          .where('archived', '=', 0)
          .where('name', '<>', "p'4")
          .where('id', '>', above)
          .orderBy('id'),
      );
      assert.deepEqual(
        (await live(db, 0)).map((r) => r.id),
        [2, 4],
      );
      assert.deepEqual(
        (await live(db, 2)).map((r) => r.id),
        [4],
      );
      assert.match(sqls[0], /"archived" = 0 and "name" <> 'p''4' and "id" > \?/);
    } finally {
      await db.destroy();
    }
  });
});
