import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

async function setup(count = 5) {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner);
  for (let i = 0; i < count; i++) await makeItem(t.app, owner, product.id, { title: `Item ${i + 1}` });
  const api = client(t.app, owner);
  const base = `/api/products/${product.id}`;
  const order = async (status = 'backlog') =>
    (await api.get(`${base}/items.json`, { status, limit: 500 })).json().map((i: { number: number }) => i.number);
  const sorts = async () =>
    new Map(
      (await t.db.selectFrom('items').select(['number', 'sort']).where('product_id', '=', product.id).execute()).map(
        (r) => [r.number, Number(r.sort)],
      ),
    );
  const resort = (n: number, params: Record<string, string | number>) =>
    api.post(`${base}/items/${n}/resort.json`, params);
  return { owner, product, api, base, order, sorts, resort };
}

describe('resort', () => {
  test('before=Y puts the item directly below Y', async () => {
    const { order, resort } = await setup();
    const res = await resort(5, { before: 2 });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().number, 5);
    assert.deepEqual(await order(), [1, 2, 5, 3, 4]);
  });

  test('after=X puts the item directly above X', async () => {
    const { order, resort } = await setup();
    assert.equal((await resort(4, { after: 1 })).statusCode, 200);
    assert.deepEqual(await order(), [4, 1, 2, 3, 5]);
    assert.equal((await resort(1, { after: 5 })).statusCode, 200);
    assert.deepEqual(await order(), [4, 2, 3, 1, 5]);
    assert.equal((await resort(2, { before: 5 })).statusCode, 200, 'to the very bottom');
    assert.deepEqual(await order(), [4, 3, 1, 5, 2]);
  });

  test('both: the item lands between them, whichever way round they are named', async () => {
    const { order, resort } = await setup();
    await resort(5, { before: 1, after: 2 });
    assert.deepEqual(await order(), [1, 5, 2, 3, 4]);
    await resort(4, { before: 2, after: 1 });
    assert.deepEqual(await order(), [1, 4, 5, 2, 3]);
  });

  test('only the moved item changes position in the common case', async () => {
    const { resort, sorts } = await setup();
    const before = await sorts();
    await resort(5, { before: 1 });
    const after = await sorts();
    for (const n of [1, 2, 3, 4]) assert.equal(after.get(n), before.get(n), `item ${n} kept its sort`);
    assert.notEqual(after.get(5), before.get(5));
  });

  test('when the gap is used up the items around it are spread and the order holds', async () => {
    const { order, resort, sorts } = await setup(4);
    // Moving items into the same gap over and over halves it until no integer is left.
    let expected = [1, 2, 3, 4];
    for (let i = 0; i < 40; i++) {
      const mover = i % 2 === 0 ? 3 : 4;
      const res = await resort(mover, { before: 1 });
      assert.equal(res.statusCode, 200);
      expected = expected.filter((n) => n !== mover);
      expected.splice(expected.indexOf(1) + 1, 0, mover);
    }
    assert.deepEqual(await order(), expected);
    const values = [...(await sorts()).values()];
    assert.equal(new Set(values).size, values.length, 'positions are distinct');
  });

  test('a used-up gap spreads only the items around it, and the order holds', async () => {
    const { order, resort, sorts } = await setup(150);
    const first = await sorts();
    let expected = Array.from({ length: 150 }, (_, i) => i + 1);
    for (let i = 0; i < 40; i++) {
      const mover = i % 2 === 0 ? 140 : 141;
      assert.equal((await resort(mover, { before: 75 })).statusCode, 200);
      expected = expected.filter((n) => n !== mover);
      expected.splice(expected.indexOf(75) + 1, 0, mover);
    }
    assert.deepEqual(await order(), expected);
    const now = await sorts();
    const moved = expected.filter((n) => now.get(n) !== first.get(n));
    // 32 items on each side of the gap at most, and the two movers.
    assert.ok(moved.length > 2 && moved.length <= 66, `${moved.length} items moved`);
    for (const n of [...expected.slice(0, 30), ...expected.slice(-5)])
      assert.equal(now.get(n), first.get(n), `#${n}, far from the gap, kept its sort`);
  });

  test('random moves, into the same few gaps and past either end, keep the order a list would', async () => {
    const { order, resort } = await setup(90);
    let expected = Array.from({ length: 90 }, (_, i) => i + 1);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 150; i++) {
      const mover = 1 + random(90);
      // Most references are one of three items, so their gaps are used up again and again.
      let ref = random(4) === 0 ? 1 + random(90) : [1, 45, 90][random(3)];
      if (ref === mover) ref = mover === 1 ? 2 : 1;
      const way = random(2) === 0 ? 'before' : 'after';
      assert.equal((await resort(mover, { [way]: ref })).statusCode, 200);
      expected = expected.filter((n) => n !== mover);
      expected.splice(expected.indexOf(ref) + (way === 'before' ? 1 : 0), 0, mover);
    }
    assert.deepEqual(await order(), expected);
  });

  test('failures', async () => {
    const { owner, product, resort } = await setup(3);
    await makeItem(t.app, owner, product.id, { status: 'in-progress' }); // 4
    const cases: [number, Record<string, string | number>, number][] = [
      [1, {}, 400],
      [1, { before: 'abc' }, 400],
      [1, { after: '-2' }, 400],
      [1, { before: 1 }, 400],
      [1, { after: 4 }, 400],
      [1, { before: 99 }, 404],
      [1, { before: 2, after: 99 }, 404],
      [99, { before: 1 }, 404],
    ];
    for (const [n, params, status] of cases) {
      assertError(await resort(n, params), status, { label: `${n} ${JSON.stringify(params)}` });
    }
  });

  test('concurrent resorts never leave two items of a status at one position', async () => {
    const { order, resort, sorts } = await setup(12);
    const moves = Array.from({ length: 60 }, (_, i) => resort((i % 11) + 2, { before: 1 }));
    const results = await Promise.all(moves);
    for (const r of results) assert.equal(r.statusCode, 200);
    const values = [...(await sorts()).values()];
    assert.equal(new Set(values).size, values.length);
    assert.equal((await order()).length, 12);
  });
});
