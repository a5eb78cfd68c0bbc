import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { ProductRow } from '../src/db/schema.js';
import { sqliteSearchDocuments } from '../src/db/search-index.js';
import { createItem } from '../src/items/service.js';
import { pgBase } from './storage.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

// SQLite's search index is written once per commit, from the items the triggers noted
// (src/db/search-index.ts). Whatever the changes of a batch, and whichever of them fail, the index
// must be the one a rebuild from the items gives. PostgreSQL's triggers index each change as it
// happens: nothing of this applies there.

let t: TestContext;
before(async () => {
  t = await makeApp({ file: true });
});
after(() => t?.close());

/** The ids of the items whose indexed text matches an FTS5 query, as a search reads them. */
const matching = async (query: string): Promise<number[]> =>
  (
    await sql<{
      id: number;
    }>`SELECT rowid AS id FROM item_search WHERE item_search MATCH ${query} ORDER BY rowid`.execute(t.db)
  ).rows.map((r) => r.id);

/**
 * Compares the index with one built afresh from the items as they are, term by term and position
 * by position (FTS5's `instance` vocabulary), and the trigram index of titles with the items'
 * titles (FTS5's integrity check against its content table). Runs on the writer, inside a
 * transaction rolled back at the end, so the tables it makes are never kept.
 */
async function assertIndexMatchesRebuild(): Promise<void> {
  const compared = new Error('compared');
  const outcome = await t.db
    .transaction()
    .execute(async (trx) => {
      const run = (text: string) => sql.raw(text).execute(trx);
      await run(`CREATE VIRTUAL TABLE temp.rebuilt USING fts5(title, tags, body, comments, content='',
        tokenize='unicode61 remove_diacritics 2')`);
      await run(sqliteSearchDocuments('SELECT id FROM items', 'temp.rebuilt'));
      await run(`CREATE VIRTUAL TABLE temp.live_terms USING fts5vocab(main, item_search, 'instance')`);
      await run(`CREATE VIRTUAL TABLE temp.rebuilt_terms USING fts5vocab(temp, rebuilt, 'instance')`);
      const terms = async (table: string) =>
        (await sql.raw<object>(`SELECT term, doc, col, offset FROM temp.${table} ORDER BY 1, 2, 3, 4`).execute(trx))
          .rows;
      const live = await terms('live_terms');
      const rebuilt = await terms('rebuilt_terms');
      assert.ok(rebuilt.length > 0);
      assert.deepEqual(live, rebuilt, 'the index holds what the items hold, and nothing else');
      await run(`INSERT INTO item_search_titles (item_search_titles, rank) VALUES ('integrity-check', 1)`);
      const pending = await sql<{ n: number }>`SELECT count(*) AS n FROM search_pending`.execute(trx);
      assert.equal(pending.rows[0].n, 0, 'nothing is left noted after a commit');
      throw compared;
    })
    .catch((err: unknown) => err);
  if (outcome !== compared) throw outcome;
}

describe('the search index of SQLite, written at each commit', { skip: pgBase ? 'SQLite only' : false }, () => {
  let ann: TestUser;
  let product: ProductRow;
  let productId: number;
  before(async () => {
    ann = await makeUser(t.db, { firstName: 'Ann', lastName: 'A' });
    product = await makeProduct(t.db, ann, [], 'Indexed');
    productId = product.id;
  });

  /** An item made through the API, with its row's id. */
  const made = async (params: Record<string, string>) => {
    const { number } = await makeItem(t.app, ann, productId, params);
    const row = await t.db
      .selectFrom('items')
      .select('id')
      .where('product_id', '=', productId)
      .where('number', '=', number)
      .executeTakeFirstOrThrow();
    return { id: row.id, number: number as number };
  };

  test('changes committed together, some failing, leave the index a rebuild would make', async () => {
    const api = client(t.app, ann);
    const at = `/api/products/${productId}/items`;
    const items: { id: number; number: number }[] = [];
    for (let i = 0; i < 8; i++)
      items.push(await made({ title: `Heron ${i} nest`, tags: 'bird', description: 'reeds' }));
    await api.post(`${at}/${items[0].number}/comments.json`, { body: 'A kingfisher passed by' });
    await assertIndexMatchesRebuild();

    const failure = new Error('refused on purpose');
    const failing = (id: number, title: string) =>
      t.db.transaction().execute(async (trx) => {
        await trx.updateTable('items').set({ title }).where('id', '=', id).execute();
        throw failure;
      });
    // Started in one turn: the writer runs them one after another in the same commit.
    const outcomes = await Promise.allSettled([
      api.post(`${at}/${items[1].number}.json`, { title: 'Egret 1 nest' }),
      api.post(`${at}/${items[1].number}.json`, { title: 'Egret 1 roost', description: 'mudflat' }),
      failing(items[2].id, 'Pelican never'),
      api.post(`${at}/${items[3].number}.json`, { tags: 'bird,wader' }),
      api.post(`${at}/${items[4].number}.json`, { tags: '' }),
      api.post(`${at}/${items[5].number}/comments.json`, { body: 'Spoonbill seen' }),
      api.post(`${at}/${items[0].number}.json`, { description: 'A stork took over' }),
      makeItem(t.app, ann, productId, { title: 'Avocet colony', tags: 'bird,wader' }),
      failing(items[6].id, 'Cormorant never'),
      t.db.transaction().execute(async (trx) => {
        // An item made and renamed twice in one transaction is indexed once, under its last title.
        const made = await createItem(
          trx,
          { user: ann.user, product, admin: true },
          {
            type: 'task',
            title: 'Curlew draft',
            description: '',
            score: '~',
            status: 'backlog',
            assignedTo: undefined,
            createdBy: undefined,
            tags: ['bird'],
          },
          { publicUrl: 'http://shiplog.test', mailDomain: 'items.shiplog.test' },
        );
        await trx.updateTable('items').set({ title: 'Curlew second' }).where('id', '=', made.id).execute();
        await trx.updateTable('items').set({ title: 'Curlew final' }).where('id', '=', made.id).execute();
      }),
      t.db.transaction().execute(async (trx) => {
        await trx.updateTable('items').set({ title: 'Godwit first' }).where('id', '=', items[7].id).execute();
        await trx.updateTable('items').set({ title: 'Godwit last' }).where('id', '=', items[7].id).execute();
      }),
    ]);
    const failed = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
    assert.deepEqual(failed, [failure, failure]);
    for (const o of outcomes)
      if (o.status === 'fulfilled' && o.value && 'statusCode' in o.value)
        assert.ok([200, 201].includes((o.value as { statusCode: number }).statusCode));
    await assertIndexMatchesRebuild();

    const found = async (q: string) => {
      const answer = (await api.get('/api/items/search.json', { q, products: productId })).json();
      return answer.fuzzy ? [] : answer.items.map((i: { title: string }) => i.title).sort();
    };
    assert.deepEqual(await found('egret roost mudflat'), ['Egret 1 roost']);
    assert.deepEqual(await matching('pelican OR cormorant'), []);
    assert.deepEqual(await matching('heron AND 2'), [items[2].id], 'a change rolled back left the item as it was');
    assert.deepEqual(await found('wader'), ['Avocet colony', 'Heron 3 nest']);
    assert.deepEqual(await found('spoonbill'), ['Heron 5 nest']);
    assert.deepEqual(await found('stork'), ['Heron 0 nest']);
    assert.equal((await matching('curlew AND final')).length, 1);
    assert.deepEqual(await matching('curlew AND (draft OR second)'), []);
    assert.deepEqual(await matching('godwit AND last'), [items[7].id]);
    assert.deepEqual(await matching('first OR heron AND 7'), []);
  });

  test('a statement outside any transaction is indexed before it returns', async () => {
    const item = await made({ title: 'Plain sandpiper' });
    await t.db.updateTable('items').set({ title: 'Plain dunlin' }).where('id', '=', item.id).execute();
    assert.deepEqual(await matching('dunlin'), [item.id]);
    assert.deepEqual(await matching('sandpiper'), []);
    await t.db.deleteFrom('item_tags').where('item_id', '=', item.id).execute();
    await assertIndexMatchesRebuild();
  });
});
