import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KeptAnswers } from '../src/kept-answers.js';
import { markItemsChanged } from '../src/products/index.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

// Item and deploy lists are kept per product revision, caller and question (src/kept-answers.ts).
// test/instances.test.ts shows a change through one instance on lists kept by the other.
let t: TestContext;
let ada: TestUser;
let bob: TestUser;
let productId: number;

before(async () => {
  t = await makeApp();
  ada = await makeUser(t.db, { email: 'ada@example.com' });
  bob = await makeUser(t.db, { email: 'bob@example.com' });
  productId = (await makeProduct(t.db, ada, [bob])).id;
  await makeItem(t.app, ada, productId, { type: 'task', title: 'Mine', assigned_to: ada.user.id });
  await makeItem(t.app, bob, productId, { type: 'defect', title: 'Theirs', assigned_to: bob.user.id });
  await client(t.app, ada).post(`/api/products/${productId}/deploys.json`, {
    environment: 'production',
    version: '1.0',
    numbers: '1,2',
  });
});
after(() => t.close());

const ANSWERED = ['content-type', 'x-sprintly-item-count', 'x-sprintly-deploy-count'];
const picked = (headers: Record<string, unknown>) =>
  Object.fromEntries(ANSWERED.filter((h) => h in headers).map((h) => [h, headers[h]]));

for (const path of [
  '/items.json',
  '/items.json?order_by=recent&limit=1',
  '/deploys.json',
  '/deploys.json?order_by=newest&limit=1',
]) {
  test(`a kept answer of ${path} is the same, byte for byte and header for header, as a fresh one`, async () => {
    const url = `/api/products/${productId}${path}`;
    const auth = { authorization: ada.auth };
    const first = await t.app.inject({ url, headers: auth });
    const kept = await t.app.inject({ url, headers: auth });
    const fresh = await t.app.inject({ url, headers: { ...auth, 'cache-control': 'no-cache' } });
    for (const res of [first, kept, fresh]) assert.equal(res.statusCode, 200, res.body);
    assert.equal(kept.body, first.body);
    assert.equal(fresh.body, first.body);
    assert.deepEqual(picked(kept.headers), picked(first.headers));
    assert.deepEqual(picked(fresh.headers), picked(first.headers));
    assert.match(String(kept.headers['content-type']), /^application\/json; charset=utf-8$/);
  });
}

test('each caller gets their own answer: only their own profile shows when they joined', async () => {
  const url = `/api/products/${productId}/items.json?order_by=oldest`;
  const asAda = JSON.parse((await client(t.app, ada).get(url)).body);
  const asBob = JSON.parse((await client(t.app, bob).get(url)).body);
  const asAdaAgain = JSON.parse((await client(t.app, ada).get(url)).body);
  assert.deepEqual(asAdaAgain, asAda);
  // Ada's item shows her created_at to her, not to Bob; Bob's shows his to him.
  assert.ok('created_at' in asAda[0].created_by);
  assert.ok(!('created_at' in asBob[0].created_by));
  assert.ok('created_at' in asBob[1].created_by);
  assert.ok(!('created_at' in asAda[1].created_by));
});

test('a list answered for one member is not answered to a person who is not a member', async () => {
  const eve = await makeUser(t.db, { email: 'eve@example.com' });
  const url = `/api/products/${productId}/items.json`;
  assert.equal((await client(t.app, ada).get(url)).statusCode, 200);
  assert.equal((await client(t.app, eve).get(url)).statusCode, 403);
});

test('following an item shows at once in kept lists: its last_activity, and the order by activity', async () => {
  const first = await makeItem(t.app, ada, productId, { type: 'task', title: 'Quiet for years', tags: 'activity' });
  const second = await makeItem(t.app, ada, productId, { type: 'task', title: 'Busy lately', tags: 'activity' });
  // Both were active long ago, the first earlier than the second.
  for (const [number, at] of [
    [first.number, '2020-01-01T00:00:00+00:00'],
    [second.number, '2021-01-01T00:00:00+00:00'],
  ] as const) {
    await t.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('items')
        // As every change of an item's row does, a new version of it.
        .set((eb) => ({ last_activity: at, version: eb('version', '+', 1) }))
        .where('product_id', '=', productId)
        .where('number', '=', number)
        .execute();
      await markItemsChanged(trx, productId, { totals: false });
    });
  }
  const url = `/api/products/${productId}/items.json?tags=activity&order_by=active`;
  const read = async () =>
    JSON.parse((await client(t.app, ada).get(url)).body).map((i: any) => [i.number, i.last_activity.slice(0, 4)]);
  assert.deepEqual(await read(), [
    [second.number, '2021'],
    [first.number, '2020'],
  ]);
  assert.deepEqual(
    await read(),
    [
      [second.number, '2021'],
      [first.number, '2020'],
    ],
    'kept',
  );
  assert.equal(
    (await client(t.app, bob).post(`/api/products/${productId}/items/${first.number}/follow.json`)).statusCode,
    200,
  );
  const now = String(new Date().getUTCFullYear());
  assert.deepEqual(await read(), [
    [first.number, now],
    [second.number, '2021'],
  ]);
});

test('an invalid question is refused, never answered from what was kept', async () => {
  const url = `/api/products/${productId}/items.json`;
  assert.equal((await client(t.app, ada).get(url)).statusCode, 200);
  assert.equal((await client(t.app, ada).get(`${url}?order_by=sideways`)).statusCode, 400);
  assert.equal((await client(t.app, ada).get(`${url}?limit=0`)).statusCode, 400);
});

/** Just enough of a request and reply for KeptAnswers, outside any route. */
function fakeExchange(revision: number, cacheControl?: string) {
  const set = new Map<string, string>();
  const request = {
    scope: { product: { id: 1, revision }, user: { id: 1 } },
    headers: cacheControl ? { 'cache-control': cacheControl } : {},
  } as unknown as FastifyRequest;
  const reply = {
    type: () => reply,
    header: (name: string, value: string) => {
      set.set(name, value);
      return reply;
    },
    getHeader: (name: string) => set.get(name),
    serialize: (value: unknown) => JSON.stringify(value),
  } as unknown as FastifyReply;
  return { request, reply, set };
}

test('kept answers stay within budget, least recently used first; large ones in a share of their own', async () => {
  // Answers of at most 100 bytes share 11,200 bytes; larger ones 1,600; above 800 none is kept.
  const kept = new KeptAnswers(12800, 2, 100);
  let made = 0;
  const ask = (question: string, size: number, revision = 1, cacheControl?: string) => {
    const { request, reply } = fakeExchange(revision, cacheControl);
    return kept.answer(request, reply, question, [], async () => {
      made++;
      return 'x'.repeat(size);
    });
  };
  // Each body is the size asked for plus its two quotes: 124 small ones of 90 bytes fit.
  for (let i = 0; i < 150; i++) await ask(`q${i}`, 88);
  assert.equal(made, 150);
  assert.ok(kept.held <= 11200, `${kept.held} held`);
  // The last 124 fit: asked again, none is made anew; the first ones were dropped.
  for (let i = 149; i >= 26; i--) await ask(`q${i}`, 88);
  assert.equal(made, 150);
  await ask('q0', 88);
  assert.equal(made, 151);
  // Paging through large answers keeps the latest three, and pushes out none of the small ones.
  for (let i = 0; i < 10; i++) await ask(`page${i}`, 498);
  assert.equal(made, 161);
  for (const i of [9, 8, 7]) await ask(`page${i}`, 498);
  for (let i = 26; i <= 148; i++) await ask(`q${i}`, 88);
  await ask('q0', 88);
  assert.equal(made, 161);
  await ask('page0', 498);
  assert.equal(made, 162);
  assert.ok(kept.held <= 12800, `${kept.held} held`);
  // Bigger than half of the large share: answered, never kept.
  await ask('huge', 898);
  await ask('huge', 898);
  assert.equal(made, 164);
  // Another revision is another answer; no-cache renders afresh.
  await ask('q9', 88, 2);
  assert.equal(made, 165);
  await ask('q9', 88, 2, 'no-cache');
  assert.equal(made, 166);
});

test('a kept answer carries the headers its first answer set', async () => {
  const kept = new KeptAnswers();
  const first = fakeExchange(1);
  await kept.answer(first.request, first.reply, 'q', ['X-Count'], async () => {
    first.reply.header('X-Count', '42');
    return [1, 2];
  });
  const again = fakeExchange(1);
  const body = await kept.answer(again.request, again.reply, 'q', ['X-Count'], async () => assert.fail('made again'));
  assert.equal(String(body), '[1,2]');
  // Short as it is, the kept body is not a piece of Node's shared slab (see keptBytes).
  const own = body as Buffer;
  assert.ok(own.byteOffset === 0 && own.buffer.byteLength === own.length);
  assert.equal(again.set.get('X-Count'), '42');
});

test('no more than the given number of answers render at once; others wait their turn, errors included', async () => {
  const kept = new KeptAnswers(undefined, 2);
  let running = 0;
  let most = 0;
  const ask = (question: string, fail = false) => {
    const { request, reply } = fakeExchange(1);
    return kept.answer(request, reply, question, [], async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      if (fail) throw new Error('refused');
      return question;
    });
  };
  const answers = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => ask(`q${i}`, i % 3 === 0)));
  assert.equal(most, 2);
  assert.deepEqual(
    answers.map((a) => a.status),
    Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? 'rejected' : 'fulfilled')),
  );
  // Every turn was given back: a next answer renders at once.
  assert.equal(String(await ask('last')), '"last"');
});

test('requests for what is being rendered wait for it: one render, each gets its answer and headers', async () => {
  const kept = new KeptAnswers();
  let made = 0;
  const ask = (question: string, cacheControl?: string) => {
    const exchange = fakeExchange(1, cacheControl);
    const body = kept.answer(exchange.request, exchange.reply, question, ['X-Count'], async () => {
      made++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      exchange.reply.header('X-Count', String(made));
      return { question, made };
    });
    return body.then((b) => ({ body: String(b), count: exchange.set.get('X-Count') }));
  };
  const same = await Promise.all(Array.from({ length: 20 }, () => ask('q')));
  assert.equal(made, 1);
  for (const answer of same) assert.deepEqual(answer, { body: '{"question":"q","made":1}', count: '1' });
  // Another question, or no-cache, renders its own.
  const [other, fresh] = await Promise.all([ask('other'), ask('q', 'no-cache')]);
  assert.equal(made, 3);
  assert.notEqual(other.body, fresh.body);
  // A render that fails fails those that waited for it, and is not kept.
  const failing = (question: string) => {
    const { request, reply } = fakeExchange(1);
    return kept.answer(request, reply, question, [], async () => {
      made++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error('refused');
    });
  };
  const results = await Promise.allSettled([failing('bad'), failing('bad'), failing('bad')]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected', 'rejected'],
  );
  assert.equal(made, 4);
  assert.equal((await ask('bad')).body, '{"question":"bad","made":5}');
});

test("turns go round the callers: one caller's many renders make another's wait for one, not all", async () => {
  const kept = new KeptAnswers(undefined, 1);
  const started: string[] = [];
  const ask = (caller: number, question: string) => {
    const { request, reply } = fakeExchange(1);
    (request.scope as unknown as { user: { id: number } }).user = { id: caller };
    return kept.answer(request, reply, question, [], async () => {
      started.push(question);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return question;
    });
  };
  // Caller 1 asks for four pages at once; caller 2 then for one.
  const answers = [ask(1, 'a1'), ask(1, 'a2'), ask(1, 'a3'), ask(1, 'a4')];
  answers.push(ask(2, 'b1'));
  await Promise.all(answers);
  assert.deepEqual(started, ['a1', 'b1', 'a2', 'a3', 'a4']);
});
