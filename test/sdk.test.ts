import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import type { ProductRow } from '../src/db/schema.js';
import { parseCreateItem } from '../src/items/input.js';
import { createItem } from '../src/items/service.js';
import { statusCode } from '../src/items/model.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

/*
 * The official JavaScript SDK (sprintly-data@2.2.0), unchanged except for its base URL, against
 * the service listening on a loopback port. The SDK is untyped, hence the `any`s.
 */

const WAIT_MS = 20_000;
/** What the SDK sends itself (superagent's node build), as opposed to this file's own app.inject calls. */
const SDK_AGENT = /^node-superagent\//;

interface Seen {
  method: string;
  url: string;
  status: number;
}

let t: TestContext;
let base: string;
let sdk: any;
let sdkClient: any;
let owner: TestUser;
let sdkUser: TestUser;
let colleague: TestUser;
let product: ProductRow;
const seen: Seen[] = [];

const errorsIn = (list: Seen[]) =>
  list.filter((r) => r.status >= 400).map((r) => `${r.method} ${r.url} -> ${r.status}`);

/** Starts recording; the returned function gives the SDK's requests since then. */
function recordFromNow(): () => Seen[] {
  const start = seen.length;
  return () => seen.slice(start);
}

/**
 * Bounds a wait on the SDK: some of its error paths (collectionConsumer on a non-2xx) never settle.
 * A rejection is rewritten to say which HTTP answer caused it.
 */
async function within<T>(what: string, promise: PromiseLike<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `${what}: no answer within ${WAIT_MS / 1000} s; SDK errors so far: ${JSON.stringify(errorsIn(seen))}`,
          ),
        ),
      WAIT_MS,
    );
  });
  try {
    return await Promise.race([Promise.resolve(promise), timeout]);
  } catch (err: any) {
    if (err instanceof Error && !('status' in err)) throw err;
    const status = err?.status ?? err?.response?.status;
    const body = err?.response?.body ?? err?.body;
    throw new Error(`${what}: HTTP ${status} ${JSON.stringify(body)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** `save()` answers `false`, without a request, when the SDK's own validation refuses the model. */
async function save(what: string, model: any, attrs?: Record<string, unknown>): Promise<any> {
  const result = model.save(attrs);
  assert.notEqual(result, false, `${what}: the SDK refused to save: ${model.validationError}`);
  return within(what, result);
}

/** The item as the API shows it, read around the SDK. */
async function apiItem(number: number, productId = product.id): Promise<any> {
  const res = await client(t.app, owner).get(`/api/products/${productId}/items/${number}.json`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function sdkItem(number: number, productId = product.id): Promise<any> {
  const sdkProduct = sdkClient.products.get(productId);
  const model = sdkProduct.ItemModel.create({ number, product: { id: productId } });
  await within(`fetch item ${number}`, model.fetch());
  return model;
}

const withoutActivity = (item: any) => ({ ...item, last_activity: undefined });

before(async () => {
  t = await makeApp();
  owner = await makeUser(t.db, { firstName: 'Olive', lastName: 'Owner' });
  sdkUser = await makeUser(t.db, { firstName: 'Sam', lastName: 'Scripted' });
  colleague = await makeUser(t.db, { firstName: 'Cora', lastName: 'Colleague' });
  product = await makeProduct(t.db, owner, [sdkUser, colleague], 'SDK product');

  t.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!SDK_AGENT.test(req.headers['user-agent'] ?? '')) return;
    res.on('finish', () => seen.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode }));
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;

  // The SDK reads its base URL once, when it is loaded, so the server has to be up first.
  process.env.BABEL_DISABLE_CACHE = '1';
  process.env.BASE_URL = `${base}/api`;
  const req = createRequire(import.meta.url);
  // The SDK ships untranspiled ES modules; Babel skips node_modules unless told otherwise.
  req('babel/register')({ only: /sprintly-data\/(lib\/|sprintly-data\.js)/ });
  sdk = req('sprintly-data/sprintly-data');
  sdkClient = sdk.createClient(sdkUser.email, sdkUser.apiKey);

  await within('fetch products', sdkClient.products.fetch());
});

after(async () => {
  await t?.close();
});

describe('sprintly-data SDK against a running Shiplog', () => {
  test('whoami and the product list reach the SDK', async () => {
    const requests = recordFromNow();
    await within('whoami', sdkClient.user.fetch());
    assert.equal(sdkClient.user.id, sdkUser.user.id);
    assert.equal(sdkClient.user.get('email'), sdkUser.email);
    const sdkProduct = sdkClient.products.get(product.id);
    assert.ok(sdkProduct, 'the product the user is a member of is listed');
    assert.equal(sdkProduct.get('name'), 'SDK product');
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('creates a task and a story', async () => {
    const requests = recordFromNow();
    const sdkProduct = sdkClient.products.get(product.id);

    const task = sdkProduct.createItem({
      type: 'task',
      title: 'Wire the deploy hook',
      description: 'Call it after *every* deploy.',
      tags: ['deploys', 'two words'],
      assigned_to: { id: colleague.user.id },
    });
    const taskBody = await save('create task', task);
    assert.equal(typeof task.id, 'number', 'the service assigned a number');
    assert.ok(task.id > 0);
    assert.equal(taskBody.number, task.id);
    assert.equal(task.isNew(), false);
    assert.equal(task.get('type'), 'task');
    assert.equal(task.get('title'), 'Wire the deploy hook');
    assert.equal(task.get('description'), 'Call it after *every* deploy.');
    assert.equal(task.get('status'), 'backlog');
    assert.deepEqual(task.get('tags'), ['deploys', 'two words']);
    assert.equal(task.get('assigned_to').id, colleague.user.id);
    assert.equal(task.get('created_by').id, sdkUser.user.id);
    assert.equal(task.get('product').id, product.id, 'item URLs are built from product.id');
    assert.equal(task.url(), `${base}/api/products/${product.id}/items/${task.id}.json`);

    const story = sdkProduct.createItem({
      type: 'story',
      who: 'operator',
      what: 'deploy notices',
      why: 'I know what shipped',
    });
    await save('create story', story);
    assert.equal(story.id, task.id + 1, 'numbers are allocated in order');
    assert.equal(story.get('type'), 'story');
    assert.equal(story.get('title'), 'As an operator, I want deploy notices so that I know what shipped.');
    assert.equal(story.get('who'), 'operator');
    assert.equal(story.get('what'), 'deploy notices');
    assert.equal(story.get('why'), 'I know what shipped');
    assert.deepEqual(story.get('tags'), []);
    assert.equal(story.get('assigned_to'), null);

    const stored = await apiItem(task.id);
    assert.deepEqual(stored.tags, ['deploys', 'two words']);
    assert.equal(stored.assigned_to.id, colleague.user.id);
    assert.equal((await apiItem(story.id)).title, 'As an operator, I want deploy notices so that I know what shipped.');

    const posts = requests().filter((r) => r.method === 'POST');
    assert.deepEqual(
      posts.map((r) => r.url),
      [`/api/products/${product.id}/items.json`, `/api/products/${product.id}/items.json`],
    );
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('fetches an item created elsewhere, with its parent story', async () => {
    const requests = recordFromNow();
    const story = await makeItem(t.app, owner, product.id, {
      type: 'story',
      who: 'shopper',
      what: 'search',
      why: 'I find things',
    });
    const sub = await makeItem(t.app, owner, product.id, {
      type: 'defect',
      title: 'Search ignores accents',
      description: 'é vs e',
      score: 'M',
      tags: 'search,i18n',
      assigned_to: colleague.user.id,
      parent: story.number,
    });

    const model = await sdkItem(sub.number);
    assert.equal(model.id, sub.number);
    assert.equal(model.get('type'), 'defect');
    assert.equal(model.get('title'), 'Search ignores accents');
    assert.equal(model.get('description'), 'é vs e');
    assert.equal(model.get('score'), 'M');
    assert.equal(model.get('status'), 'backlog');
    assert.deepEqual(model.get('tags'), ['search', 'i18n']);
    assert.equal(model.get('assigned_to').id, colleague.user.id);
    assert.equal(model.get('created_by').id, owner.user.id);
    assert.equal(model.get('product').id, product.id);
    assert.equal(model.get('archived'), false);
    assert.deepEqual(model.get('progress'), {});
    assert.equal(model.get('short_url'), sub.short_url);
    assert.equal(model.get('parent_id'), story.number, 'the embedded parent becomes the association');
    assert.equal(model.parent().get('type'), 'story');
    assert.equal(model.parent().get('title'), 'As a shopper, I want search so that I find things.');

    const storyModel = await sdkItem(story.number);
    assert.equal(storyModel, model.parent(), 'the SDK keeps one model per item number');
    assert.equal(storyModel.get('who'), 'shopper');
    assert.deepEqual(storyModel.sub_items().pluck('number'), [sub.number]);
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('save() posts the whole item back: only the changed fields change', async () => {
    const requests = recordFromNow();
    const created = await makeItem(t.app, owner, product.id, {
      type: 'task',
      title: 'Rotate the keys',
      description: 'Every **90** days.',
      score: 'S',
      tags: 'security,ops',
      assigned_to: colleague.user.id,
    });
    const model = await sdkItem(created.number);

    await save('save title and status', model, { title: 'Rotate the API keys', status: 'in-progress' });
    assert.equal(model.get('title'), 'Rotate the API keys');
    assert.equal(model.get('status'), 'in-progress');
    assert.ok(model.get('progress').started_at, 'the SDK model took the server answer');

    const updated = await apiItem(created.number);
    assert.equal(updated.title, 'Rotate the API keys');
    assert.equal(updated.status, 'in-progress');
    assert.match(updated.progress.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.equal(updated.progress.closed_at, undefined);
    assert.equal(updated.close_reason, undefined);
    assert.equal(updated.type, 'task');
    assert.equal(updated.description, 'Every **90** days.');
    assert.equal(updated.score, 'S');
    assert.deepEqual(updated.tags, ['security', 'ops']);
    assert.equal(updated.assigned_to.id, colleague.user.id);
    assert.equal(updated.created_by.id, owner.user.id);
    assert.equal(updated.archived, false);
    assert.equal(updated.created_at, created.created_at);
    assert.equal(updated.parent, undefined);

    // Posting the unchanged item back must be a no-op.
    await save('save unchanged', model);
    assert.deepEqual(withoutActivity(await apiItem(created.number)), withoutActivity(updated));

    const saves = requests().filter((r) => r.method === 'POST');
    assert.deepEqual(
      saves.map((r) => r.url),
      [
        `/api/products/${product.id}/items/${created.number}.json`,
        `/api/products/${product.id}/items/${created.number}.json`,
      ],
      'updates are POSTs to the item',
    );
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('save() of a story rebuilds its title; save() of a sub-item keeps its parent', async () => {
    const requests = recordFromNow();
    const story = await makeItem(t.app, owner, product.id, {
      type: 'story',
      who: 'admin',
      what: 'audit logs',
      why: 'I can trace changes',
      tags: 'audit',
    });
    const sub = await makeItem(t.app, owner, product.id, { type: 'task', title: 'Log writes', parent: story.number });

    const storyModel = await sdkItem(story.number);
    await save('save story', storyModel, { what: 'an audit log' });
    assert.equal(storyModel.get('title'), 'As an admin, I want an audit log so that I can trace changes.');
    const storyNow = await apiItem(story.number);
    assert.equal(storyNow.title, 'As an admin, I want an audit log so that I can trace changes.');
    assert.equal(storyNow.who, 'admin');
    assert.equal(storyNow.what, 'an audit log');
    assert.equal(storyNow.why, 'I can trace changes');
    assert.equal(storyNow.type, 'story');
    assert.equal(storyNow.status, 'backlog');
    assert.deepEqual(storyNow.tags, ['audit']);

    const subModel = await sdkItem(sub.number);
    await save('save sub-item', subModel, { title: 'Log every write' });
    const subNow = await apiItem(sub.number);
    assert.equal(subNow.title, 'Log every write');
    assert.equal(subNow.parent?.number, story.number, 'the parent survives a save');
    assert.equal(subModel.get('parent_id'), story.number);
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('collectionConsumer pages through every item once, newest first, sub-items after their story', async () => {
    const requests = recordFromNow();
    const paging = await makeProduct(t.db, owner, [sdkUser], 'Paging product');
    const scope = { user: owner.user, product: paging, admin: true };
    const statuses = ['completed', 'accepted'] as const;

    // Created in one transaction through the service: hundreds of HTTP round trips would only slow this down.
    await t.db.transaction().execute(async (trx) => {
      let n = 0;
      const add = (params: Record<string, string | number>) =>
        createItem(trx, scope, parseCreateItem(params), t.config);
      const task = () => add({ type: 'task', title: `Task ${++n}`, status: statuses[n % 2] });
      const storyWith = async (children: number) => {
        const story = await add({
          type: 'story',
          who: 'user',
          what: `thing ${++n}`,
          why: 'reasons',
          status: statuses[n % 2],
        });
        for (let c = 0; c < children; c++)
          await add({ type: 'task', title: `Sub ${++n}`, status: statuses[c % 2], parent: story.number });
      };
      // Oldest: 36 entries.
      for (let i = 0; i < 30; i++) {
        await task();
        if (i % 15 === 7) await storyWith(2);
      }
      // A story whose sub-items straddle the first page boundary: counting from 1 in newest order,
      // the story is entry 499 and its sub-items 500 to 503.
      await storyWith(4);
      // Newest: exactly 498 entries ahead of that story (9 stories of 3 entries, 471 tasks).
      for (let i = 0; i < 471; i++) {
        await task();
        if (i % 50 === 25) await storyWith(2);
      }
      // Not listed: wrong status.
      for (let i = 0; i < 5; i++) await add({ type: 'task', title: `Open ${i}`, status: 'backlog' });
    });

    // The expected listing, from the rows themselves (docs/INTERFACE.md §6 newest, §7.1 children).
    const rows = await t.db
      .selectFrom('items')
      .select(['id', 'number', 'parent_id', 'status', 'sort', 'created_at'])
      .where('product_id', '=', paging.id)
      .where('archived', '=', 0)
      .execute();
    const wanted = new Set(statuses.map(statusCode));
    const top = rows
      .filter((r) => r.parent_id === null && wanted.has(r.status))
      .sort((a, b) => (a.created_at === b.created_at ? b.number - a.number : a.created_at < b.created_at ? 1 : -1));
    const childrenOf = (id: number) =>
      rows
        .filter((r) => r.parent_id === id)
        .sort((a, b) => a.status - b.status || Number(a.sort) - Number(b.sort) || a.number - b.number);
    const expected = top.flatMap((r) => [r.number, ...childrenOf(r.id).map((c) => c.number)]);
    assert.equal(expected.length, 539);
    assert.ok(expected.length > 500, 'a second page is needed');

    await within('fetch products', sdkClient.products.fetch());
    const sdkProduct = sdkClient.products.get(paging.id);
    assert.ok(sdkProduct, 'the new product is listed');
    const coll = sdkProduct.createItemsCollection([], { status: [...statuses], order_by: 'newest', children: true });
    await within(
      'collectionConsumer',
      sdk.collectionConsumer(coll, { order_by: 'newest', children: true, status: statuses.join(',') }),
    );

    const listed = requests().filter(
      (r) => r.method === 'GET' && r.url.startsWith(`/api/products/${paging.id}/items.json?`),
    );
    const offsets = listed.map((r) => new URL(r.url, base).searchParams.get('offset')).sort();
    // The SDK plans its pages from X-Sprintly-Item-Count alone: 539 gives exactly one more page.
    assert.deepEqual(offsets, ['0', '500'], 'the SDK asked for two pages');
    for (const r of listed) {
      const q = new URL(r.url, base).searchParams;
      assert.equal(q.get('limit'), '500');
      assert.equal(q.get('order_by'), 'newest');
      assert.equal(q.get('children'), 'true');
      assert.equal(q.get('status'), 'completed,accepted');
    }
    const first = await client(t.app, sdkUser).get(listed.find((r) => r.url.includes('offset=0'))!.url);
    assert.equal(first.headers['x-sprintly-item-count'], '539');

    const got: number[] = coll.pluck('number');
    const counts = new Map<number, number>();
    for (const n of got) counts.set(n, (counts.get(n) ?? 0) + 1);
    const duplicates = [...counts].filter(([, c]) => c > 1).map(([n]) => n);
    const missing = expected.filter((n) => !counts.has(n));
    const extra = got.filter((n) => !expected.includes(n));
    assert.deepEqual({ duplicates, missing, extra }, { duplicates: [], missing: [], extra: [] });
    // With exactly two pages the SDK appends page 2 after page 1, so the whole order is observable.
    assert.deepEqual(got, expected);

    const storyNumbers = new Set(rows.filter((r) => childrenOf(r.id).length > 0).map((r) => r.number));
    const idToNumber = new Map(rows.map((r) => [r.id, r.number]));
    for (const r of rows.filter((r) => r.parent_id !== null)) {
      const model = coll.get(r.number);
      const parentNumber = idToNumber.get(r.parent_id!);
      assert.equal(model.get('parent_id'), parentNumber, `sub-item ${r.number} came with its story`);
      assert.ok(storyNumbers.has(parentNumber!));
    }
    for (const number of storyNumbers) {
      const story = coll.get(number);
      const row = rows.find((r) => r.number === number)!;
      assert.deepEqual(
        story
          .sub_items()
          .pluck('number')
          .sort((a: number, b: number) => a - b),
        childrenOf(row.id)
          .map((c) => c.number)
          .sort((a, b) => a - b),
        `story ${number} holds its sub-items`,
      );
    }
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('resort() moves an item and the API shows the new order', async () => {
    const requests = recordFromNow();
    const sdkProduct = sdkClient.products.get(product.id);
    const numbers: number[] = [];
    for (const title of ['R1', 'R2', 'R3', 'R4']) {
      const model = sdkProduct.createItem({ type: 'task', title });
      await save(`create ${title}`, model);
      numbers.push(model.id);
    }
    const [r1, r2, r3, r4] = numbers;

    const backlog = sdkProduct.getItemsByStatus('backlog');
    await within('fetch backlog', backlog.fetch());
    for (const n of numbers) assert.ok(backlog.get(n), `item ${n} is in the SDK's backlog`);

    const api = client(t.app, owner);
    const order = async (): Promise<{ number: number; sort: number }[]> => {
      const res = await api.get(`/api/products/${product.id}/items.json`, {
        status: 'backlog',
        order_by: 'priority',
        limit: 500,
      });
      assert.equal(res.statusCode, 200);
      return res.json();
    };
    const ours = async () => (await order()).map((i) => i.number).filter((n) => numbers.includes(n));
    const directlyBelow = async (upper: number, lower: number) => {
      const all = (await order()).map((i) => i.number);
      assert.equal(
        all.indexOf(lower),
        all.indexOf(upper) + 1,
        `${lower} sits directly below ${upper} in ${all.join(',')}`,
      );
    };
    assert.deepEqual(await ours(), [r1, r2, r3, r4]);

    // before=Y: the item moves right below Y.
    const m4 = backlog.get(r4);
    await within('resort before', m4.resort({ before: r1 }));
    assert.deepEqual(await ours(), [r1, r4, r2, r3]);
    await directlyBelow(r1, r4);
    assert.equal(m4.get('sort'), (await order()).find((i) => i.number === r4)!.sort, 'the SDK model took the new sort');

    // after=X: the item moves right above X.
    await within('resort after', backlog.get(r1).resort({ after: r3 }));
    assert.deepEqual(await ours(), [r4, r2, r1, r3]);
    await directlyBelow(r1, r3);

    // Both: between them, whichever way round they are named.
    await within('resort both', backlog.get(r4).resort({ before: r1, after: r3 }));
    assert.deepEqual(await ours(), [r2, r1, r4, r3]);

    // The resort answer leaves the model fit to be saved again.
    await save('save after resort', m4, { title: 'R4 moved' });
    assert.equal((await apiItem(r4)).title, 'R4 moved');
    assert.deepEqual(await ours(), [r2, r1, r4, r3], 'a save without a status change keeps the position');

    const resorts = requests().filter((r) => r.url.endsWith('/resort.json'));
    assert.equal(resorts.length, 3);
    assert.deepEqual(errorsIn(requests()), []);
  });

  test("an item's comments: the SDK posts one and fetches them, oldest first", async () => {
    const requests = recordFromNow();
    const item = await makeItem(t.app, owner, product.id, { title: 'Talked about' });
    const api = client(t.app, colleague);
    const first = await api.post(`/api/products/${product.id}/items/${item.number}/comments.json`, {
      body: 'First, from the API',
    });
    assert.equal(first.statusCode, 200, first.body);

    const model = await sdkItem(item.number);
    const created = model.comments.create({ body: 'Second, from the **SDK**' }, { wait: true });
    await within(
      'create comment',
      new Promise((resolve, reject) => created.once('sync', resolve).once('error', reject)),
    );
    assert.equal(typeof created.id, 'number', 'the SDK model took the id of the answer');
    assert.equal(created.get('created_by').email, sdkUser.email);

    await within('fetch comments', model.comments.fetch());
    assert.deepEqual(
      model.comments.map((c: any) => c.get('body')),
      ['First, from the API', 'Second, from the **SDK**'],
    );
    assert.equal((await apiItem(item.number)).counts.comments, 2);
    assert.deepEqual(errorsIn(requests()), []);
  });

  test('no request the SDK made got an error status', () => {
    assert.ok(seen.length > 0, 'requests were recorded');
    assert.deepEqual(errorsIn(seen), []);
  });
});
