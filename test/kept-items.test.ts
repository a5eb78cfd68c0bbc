import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import {
  client,
  keptAndFresh,
  type KeptAndFresh,
  renameProduct,
  makeItem,
  makeProduct,
  type TestContext,
  type TestUser,
} from './helpers.js';

/**
 * Property: whatever is changed, and in whatever order reads and writes come, every answer served
 * from what an instance keeps (whole answers by product revision, each item's JSON by version) is
 * byte for byte what an instance that keeps nothing renders from the database at that moment.
 * Both instances share one database; the one that keeps nothing is the reference.
 */

/** Sequences per run, of up to 14 steps, each step followed by up to 4 reads: about 3,000 requests. */
const SEQUENCES = 60;

let t: TestContext;
let fresh: FastifyInstance;
let ada: TestUser;
let bob: TestUser;
/** A member who only reads. */
let cy: TestUser;

let setup: KeptAndFresh;
before(async () => {
  setup = await keptAndFresh();
  ({ t, fresh, ada, bob, cy } = setup);
});
after(() => setup.close());

const STATUSES = ['backlog', 'in-progress', 'completed', 'accepted'] as const;
const ORDERS = ['priority', 'newest', 'oldest', 'recent', 'active'] as const;
const who = fc.constantFrom<'ada' | 'bob'>('ada', 'bob');
/** An item by its place among those made so far (taken modulo their count). */
const itemRef = fc.nat(40);

type Step =
  | { kind: 'create'; by: 'ada' | 'bob'; type: 'story' | 'task'; under?: number; tag: string }
  | { kind: 'update'; by: 'ada' | 'bob'; item: number; field: 'title' | 'description' | 'status' | 'tags' | 'assign' }
  | { kind: 'resort'; by: 'ada' | 'bob'; item: number; before: number }
  | { kind: 'deploy'; by: 'ada' | 'bob'; items: number[]; environment: 'staging' | 'production' }
  | { kind: 'rollback'; by: 'ada' | 'bob'; to: number }
  | { kind: 'follow'; by: 'ada' | 'bob'; item: number }
  | { kind: 'archive'; by: 'ada' | 'bob'; item: number }
  | { kind: 'rename-product' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      by: who,
      type: fc.constantFrom<'story' | 'task'>('story', 'task'),
      under: fc.option(itemRef, { nil: undefined }),
      tag: fc.constantFrom('a', 'b'),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('update' as const),
      by: who,
      item: itemRef,
      field: fc.constantFrom<'title' | 'description' | 'status' | 'tags' | 'assign'>(
        'title',
        'description',
        'status',
        'tags',
        'assign',
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('resort' as const), by: who, item: itemRef, before: itemRef }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('deploy' as const),
      by: who,
      items: fc.array(itemRef, { minLength: 1, maxLength: 3 }),
      environment: fc.constantFrom<'staging' | 'production'>('staging', 'production'),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('rollback' as const), by: who, to: fc.nat(10) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('follow' as const), by: who, item: itemRef }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('archive' as const), by: who, item: itemRef }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'rename-product' as const }) },
);

/**
 * Reads: mostly a few lists asked again and again (so that what is kept is asked for after the
 * changes that follow), and sometimes any list, an item, a story's sub-items or the deploys.
 */
const read = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      list: fc.constant(true),
      order: fc.constantFrom<(typeof ORDERS)[number]>('priority', 'newest', 'recent'),
      status: fc.constant(undefined),
      children: fc.boolean(),
      limit: fc.constant(5),
      offset: fc.constant(0),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      list: fc.constant(true),
      order: fc.constantFrom(...ORDERS),
      status: fc.option(fc.subarray([...STATUSES], { minLength: 1 }), { nil: undefined }),
      children: fc.boolean(),
      limit: fc.integer({ min: 1, max: 6 }),
      offset: fc.nat(4),
    }),
  },
  { weight: 1, arbitrary: fc.record({ item: itemRef }) },
  { weight: 1, arbitrary: fc.record({ children: itemRef }) },
  { weight: 1, arbitrary: fc.record({ deploys: fc.constantFrom('newest', 'production') }) },
);

let counter = 0;
/** Numbers of the stories of the sequence's product. */
const storyNumbers = new Set<number>();
/** Deploys of the sequence, in order (rollbacks too): what a rollback goes back to. */
const versions: { environment: string; version: string }[] = [];

async function apply(productId: number, numbers: number[], s: Step): Promise<void> {
  const people = { ada, bob };
  const items = `/api/products/${productId}/items`;
  const pick = (i: number) => numbers[i % numbers.length];
  const n = ++counter;
  if (s.kind === 'create') {
    const params: Record<string, string> =
      s.type === 'story'
        ? { type: 'story', who: 'a user', what: `thing ${n}`, why: 'it helps' }
        : { type: 'task', title: `Task ${n}` };
    // Under a story made earlier (sub-items embed their parent, as another viewer sees it).
    const stories = numbers.filter((number) => storyNumbers.has(number));
    if (s.type === 'task' && s.under !== undefined && stories.length)
      params.parent = String(stories[s.under % stories.length]);
    const res = await client(t.app, people[s.by]).post(`${items}.json`, {
      ...params,
      tags: s.tag,
      description: `Made ${n}`,
    });
    if (res.statusCode !== 200) throw new Error(`create: ${res.statusCode} ${res.body}`);
    numbers.push(res.json().number);
    if (s.type === 'story') storyNumbers.add(res.json().number);
    return;
  }
  if (s.kind === 'rename-product') {
    await renameProduct(t.db, productId, `Renamed ${n}`);
    return;
  }
  if (!numbers.length) return;
  const as = client(t.app, people[s.by]);
  if (s.kind === 'update') {
    const value = {
      title: { title: `Title ${n}` },
      description: { description: `Text ${n}` },
      status: { status: STATUSES[n % STATUSES.length] },
      tags: { tags: n % 2 ? 'a' : 'a,b' },
      assign: { assigned_to: String((n % 2 ? ada : bob).user.id) },
    }[s.field];
    await as.post(`${items}/${pick(s.item)}.json`, value);
  } else if (s.kind === 'resort')
    await as.post(`${items}/${pick(s.item)}/resort.json`, { before: String(pick(s.before)) });
  else if (s.kind === 'deploy') {
    await as.post(`/api/products/${productId}/deploys.json`, {
      environment: s.environment,
      numbers: s.items.map(pick).join(','),
      version: `v${n}`,
    });
    versions.push({ environment: s.environment, version: `v${n}` });
  } else if (s.kind === 'rollback') {
    // Back to an earlier version of the environment last deployed to: the deploys after it are reverted.
    const last = versions.at(-1);
    const earlier = versions.filter((v) => v.environment === last?.environment).slice(0, -1);
    if (earlier.length)
      await as.post(`/api/products/${productId}/deploys.json`, { ...earlier[s.to % earlier.length], rollback: 'true' });
  } else if (s.kind === 'follow') await as.post(`${items}/${pick(s.item)}/follow.json`);
  else if (s.kind === 'archive') await as.delete(`${items}/${pick(s.item)}.json`);
}

type Read = typeof read extends fc.Arbitrary<infer R> ? R : never;

function urlOf(productId: number, numbers: number[], r: Read): string {
  const base = `/api/products/${productId}`;
  const pick = (i: number) => numbers[i % numbers.length] ?? 1;
  if ('list' in r) {
    const q = new URLSearchParams({
      order_by: r.order,
      children: String(r.children),
      limit: String(r.limit),
      offset: String(r.offset),
    });
    if (r.status) q.set('status', r.status.join(','));
    return `${base}/items.json?${q}`;
  }
  if ('item' in r) return `${base}/items/${pick(r.item)}.json`;
  if ('children' in r) return `${base}/items/${pick(r.children)}/children.json`;
  return r.deploys === 'newest'
    ? `${base}/deploys.json?order_by=newest&limit=5`
    : `${base}/deploys.json?environment=production&limit=3&offset=1`;
}

/** The same read from the instance that keeps answers (twice: the second may be kept) and the one keeping nothing. */
async function compare(url: string, viewer: TestUser): Promise<void> {
  const ask = (app: FastifyInstance) => app.inject({ method: 'GET', url, headers: { authorization: viewer.auth } });
  const expected = await ask(fresh);
  for (const attempt of ['first', 'again']) {
    const got = await ask(t.app);
    assert.equal(got.statusCode, expected.statusCode, `${url} (${attempt})`);
    assert.equal(got.body, expected.body, `${url} (${attempt})`);
    for (const header of ['etag', 'x-sprintly-item-count', 'x-sprintly-next-offset'])
      assert.equal(got.headers[header], expected.headers[header], `${url} ${header} (${attempt})`);
  }
}

test('kept answers and kept item JSON are what a fresh render gives, whatever changed in between', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(
          step,
          fc.array(fc.tuple(read, fc.constantFrom<'ada' | 'bob' | 'cy'>('ada', 'bob', 'cy')), { maxLength: 4 }),
        ),
        { minLength: 1, maxLength: 14 },
      ),
      async (steps) => {
        const productId = (await makeProduct(t.db, ada, [bob, cy])).id;
        const numbers: number[] = [];
        storyNumbers.clear();
        versions.length = 0;
        for (const [s, reads] of steps) {
          await apply(productId, numbers, s);
          // Deploys are read after each deploy or rollback, so that a rollback finds the deploys it reverts kept.
          if (s.kind === 'deploy' || s.kind === 'rollback')
            await compare(urlOf(productId, numbers, { deploys: 'newest' }), cy);
          for (const [r, viewer] of reads) await compare(urlOf(productId, numbers, r), { ada, bob, cy }[viewer]);
        }
      },
    ),
    { numRuns: SEQUENCES },
  );
});

test('a kept list by position is made anew when one of its items changes, kept across changes of others', async () => {
  const productId = (await makeProduct(t.db, ada, [bob, cy])).id;
  const items = `/api/products/${productId}/items`;
  const made = [];
  for (const title of ['One', 'Two', 'Three']) made.push(await makeItem(t.app, ada, productId, { title }));
  const url = `${items}.json?limit=2`;
  await compare(url, bob);
  // An item past the page changes: the kept page holds (and is still what a fresh render gives).
  assert.equal(
    (await client(t.app, ada).post(`${items}/${made[2].number}.json`, { description: 'later' })).statusCode,
    200,
  );
  await compare(url, bob);
  // An item of the page changes: its text shows at once.
  assert.equal((await client(t.app, ada).post(`${items}/${made[0].number}.json`, { title: 'Uno' })).statusCode, 200);
  await compare(url, bob);
  const page = await client(t.app, bob).get(url);
  assert.equal(page.json()[0].title, 'Uno');
});

test('item_changes keeps the last thousand revisions; an instance further behind makes its answers anew', async () => {
  const productId = (await makeProduct(t.db, ada, [bob, cy])).id;
  const items = `/api/products/${productId}/items`;
  const listed = await makeItem(t.app, ada, productId, { title: 'Listed' });
  const other = await makeItem(t.app, ada, productId, { title: 'Other' });
  const url = `${items}.json?limit=1`;
  await compare(url, bob);
  // Changes of text through the other instance only: the kept one sees none of them until it asks.
  const as = client(fresh, { auth: ada.auth });
  // The listed item first: by the end, the row that names it is forgotten.
  assert.equal((await as.post(`${items}/${listed.number}.json`, { title: 'Listed, renamed' })).statusCode, 200);
  for (let n = 0; n < 1005; n++) await as.post(`${items}/${other.number}.json`, { description: `Change ${n}` });
  const rows = await t.db
    .selectFrom('item_changes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow();
  assert.ok(Number(rows.n) <= 1000, `item_changes rows: ${rows.n}`);
  await compare(url, bob);
  assert.equal((await client(t.app, bob).get(url)).json()[0].title, 'Listed, renamed');
});
