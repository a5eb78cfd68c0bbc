import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { insertMembership } from '../src/products/repository.js';
import {
  client,
  keptAndFresh,
  type KeptAndFresh,
  renameProduct,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';

/**
 * Property: whatever is changed around an item (comments, blocks either way and their removal or
 * unblocking, attachments, favorites, follows, edits, deploys, sub-items, a new member, the
 * product renamed), in whatever order its page is read in between, the page an instance serves
 * (which remembers people, members by revision and rendered comments, and does not read the lists
 * its item's row says are empty) is byte for byte what an instance that keeps nothing serves from
 * the same database, for each viewer; and what it says of the conversation is what the API lists.
 */

/** Sequences per run, of up to 12 steps, each followed by up to 3 page reads (each read by both instances). */
const SEQUENCES = 25;

let t: TestContext;
let fresh: FastifyInstance;
let ada: TestUser;
let bob: TestUser;
let cy: TestUser;
const cookies = new Map<TestUser, string>();

let setup: KeptAndFresh;
before(async () => {
  setup = await keptAndFresh();
  ({ t, fresh, ada, bob, cy } = setup);
  for (const u of [ada, bob, cy]) cookies.set(u, await signInByMail(t, u.email));
});
after(() => setup.close());

type Who = 'ada' | 'bob' | 'cy';
const who = fc.constantFrom<Who>('ada', 'bob', 'cy');
/** One of the sequence's items, by its place (taken modulo their count). */
const itemRef = fc.nat(5);

type Step =
  | { kind: 'comment' | 'favorite' | 'follow' | 'attach' | 'detach' | 'unblock'; by: Who; item: number }
  | { kind: 'block'; by: Who; item: number; other: number }
  | { kind: 'edit'; by: Who; item: number; field: 'title' | 'description' | 'status' | 'assign' }
  | { kind: 'deploy'; by: Who; items: number[]; environment: 'staging' | 'production' }
  | { kind: 'sub-item'; by: Who; archived: boolean }
  | { kind: 'member' }
  | { kind: 'rename-product' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constantFrom('comment', 'favorite', 'follow', 'attach', 'detach', 'unblock'),
      by: who,
      item: itemRef,
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('block' as const), by: who, item: itemRef, other: itemRef }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('edit' as const),
      by: who,
      item: itemRef,
      field: fc.constantFrom<'title' | 'description' | 'status' | 'assign'>('title', 'description', 'status', 'assign'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deploy' as const),
      by: who,
      items: fc.array(itemRef, { minLength: 1, maxLength: 3 }),
      environment: fc.constantFrom<'staging' | 'production'>('staging', 'production'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sub-item' as const), by: who, archived: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'member' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'rename-product' as const }) },
);

/** A multipart/form-data body holding one small file, as a browser sends it. */
async function fileBody(name: string, text: string): Promise<{ payload: Buffer; type: string }> {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), name);
  const request = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  return { payload: Buffer.from(await request.arrayBuffer()), type: request.headers.get('content-type')! };
}

let counter = 0;

/** One change through the API (refusals, such as removing someone else's block, are part of the game). */
async function apply(productId: number, numbers: number[], s: Step): Promise<void> {
  const n = ++counter;
  const base = `/api/products/${productId}`;
  if (s.kind === 'rename-product') {
    await renameProduct(t.db, productId, `Renamed ${n}`);
    return;
  }
  if (s.kind === 'member') {
    const dan = await makeUser(t.db, { firstName: `Dan ${n}` });
    await t.db
      .transaction()
      .execute((trx) => insertMembership(trx, productId, dan.user.id, false, '2026-01-02T00:00:00Z'));
    return;
  }
  const as = client(t.app, { ada, bob, cy }[s.by]);
  const pick = (i: number) => numbers[i % numbers.length];
  if (s.kind === 'sub-item') {
    // Under the story (the second item), archived at once or not: the page counts those it lists.
    const child = await makeItem(t.app, { ada, bob, cy }[s.by], productId, { title: `Part ${n}`, parent: numbers[1] });
    if (s.archived) assert.equal((await as.delete(`${base}/items/${child.number}.json`)).statusCode, 200);
    return;
  }
  if (s.kind === 'deploy') {
    const res = await as.post(`${base}/deploys.json`, {
      environment: s.environment,
      numbers: s.items.map(pick).join(','),
      version: `v${n}`,
    });
    assert.equal(res.statusCode, 200, res.body);
    return;
  }
  const at = `${base}/items/${pick(s.item)}`;
  if (s.kind === 'comment')
    assert.equal((await as.post(`${at}/comments.json`, { body: `Note *${n}*` })).statusCode, 200);
  else if (s.kind === 'follow') await as.post(`${at}/follow.json`);
  else if (s.kind === 'block') await as.post(`${at}/blocking.json`, { blocked: pick(s.other) });
  else if (s.kind === 'favorite') {
    const mine = (await as.get(`${at}/favorites.json`))
      .json()
      .find((f: any) => f.user.id === { ada, bob, cy }[s.by].user.id);
    if (mine) assert.equal((await as.delete(`${at}/favorites/${mine.id}.json`)).statusCode, 200);
    else assert.equal((await as.post(`${at}/favorites.json`)).statusCode, 200);
  } else if (s.kind === 'unblock') {
    // The first block that names the item either way: its maker removes it, the blocked item's assignee unblocks it.
    const [made] = (await as.get(`${at}/blocking.json`)).json();
    if (made) await as.delete(`${at}/blocking/${made.id}.json`);
  } else if (s.kind === 'attach') {
    const body = await fileBody(`notes-${n}.txt`, `file ${n}`);
    const res = await t.app.inject({
      method: 'POST',
      url: `${at}/attachments.json`,
      headers: { authorization: { ada, bob, cy }[s.by].auth, 'content-type': body.type },
      payload: body.payload,
    });
    assert.equal(res.statusCode, 200, res.body);
  } else if (s.kind === 'detach') {
    const [first] = (await as.get(`${at}/attachments.json`)).json();
    if (first) await as.delete(`${at}/attachments/${first.id}.json`);
  } else if (s.kind === 'edit') {
    const story = pick(s.item) === numbers[1];
    const value = {
      title: story ? { what: `Thing ${n}` } : { title: `Title ${n}` },
      description: { description: `Text **${n}**` },
      status: { status: ['backlog', 'in-progress', 'completed', 'accepted'][n % 4] },
      assign: { assigned_to: String([ada, bob, cy][n % 3].user.id) },
    }[s.field];
    assert.equal((await as.post(`${at}.json`, value)).statusCode, 200);
  }
}

const page = (app: FastifyInstance, url: string, viewer: TestUser): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'GET', url, headers: { cookie: cookies.get(viewer)!, accept: 'text/html' } });

const countIn = (body: string, heading: string): number =>
  Number(new RegExp(`id="${heading}">[^<]*<span class="count">(\\d+)</span>`).exec(body)?.[1] ?? Number.NaN);

/** What the page says of the conversation, as the API lists it for the same viewer. */
async function agreesWithApi(productId: number, number: number, viewer: TestUser, body: string): Promise<void> {
  const api = client(t.app, viewer);
  const at = `/api/products/${productId}/items/${number}`;
  const favorites = await api.get(`${at}/favorites.json`);
  const mine = favorites.json().some((f: any) => f.user.id === viewer.user.id);
  assert.ok(body.includes(`aria-pressed="${mine}"`), `the star of #${number} for ${viewer.email}: ${mine}`);
  const count = Number(favorites.headers['x-sprintly-favorite-count']);
  assert.ok(
    body.includes(`id="favorite-count">${count} favorite${count === 1 ? '' : 's'}<`),
    `favorites of #${number}`,
  );
  const blocking = await api.get(`${at}/blocking.json`);
  assert.equal(countIn(body, 'blocking-heading'), Number(blocking.headers['x-sprintly-block-count']), 'blocking');
  const blockedBy = await api.get(`${at}/blocked_by.json`);
  assert.equal(countIn(body, 'blocked_by-heading'), Number(blockedBy.headers['x-sprintly-block-count']), 'blocked');
  const attachments = await api.get(`${at}/attachments.json`);
  const files = Number(attachments.headers['x-sprintly-attachment-count']);
  assert.equal(countIn(body, 'attachments-heading'), files, 'attachments');
  const children = await api.get(`${at}/children.json`);
  if (children.statusCode === 200) {
    const heading = /<h2>Sub-items <span class="count">(\d+)<\/span><\/h2>/.exec(body)?.[1];
    assert.equal(Number(heading), Number(children.headers['x-sprintly-item-count']), `sub-items of #${number}`);
  }
  const comments: { id: number }[] = (await api.get(`${at}/comments.json`)).json();
  const shown = [...body.matchAll(/<li class="comment" id="comment-(\d+)"/g)].map((m) => Number(m[1])).sort();
  assert.deepEqual(shown, comments.map((c) => c.id).sort(), `comments of #${number}`);
}

/** The item's page from the instance under test (twice) and from the one that keeps nothing. */
async function compare(productId: number, number: number, viewer: TestUser): Promise<void> {
  const url = `/app/products/${productId}/items/${number}`;
  const expected = await page(fresh, url, viewer);
  assert.equal(expected.statusCode, 200, expected.body.slice(0, 300));
  for (const attempt of ['first', 'again']) {
    const got = await page(t.app, url, viewer);
    assert.equal(got.statusCode, 200, `${url} (${attempt})`);
    assert.equal(got.body, expected.body, `${url} for ${viewer.email} (${attempt})`);
  }
  await agreesWithApi(productId, number, viewer, expected.body);
}

test('an item page is what a fresh render gives and says what the API lists, whatever changed between', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(step, fc.array(fc.tuple(itemRef, who), { maxLength: 3 })), { minLength: 1, maxLength: 12 }),
      async (steps) => {
        const productId = (await makeProduct(t.db, ada, [bob, cy])).id;
        const numbers: number[] = [];
        for (const type of ['task', 'story', 'task']) {
          const fields = type === 'story' ? { who: 'a user', what: 'a thing', why: 'it helps' } : { title: 'A task' };
          const made = await makeItem(t.app, ada, productId, { type, ...fields, assigned_to: String(bob.user.id) });
          numbers.push(made.number);
        }
        for (const [s, reads] of steps) {
          await apply(productId, numbers, s);
          for (const [i, viewer] of reads)
            await compare(productId, numbers[i % numbers.length], { ada, bob, cy }[viewer]);
        }
      },
    ),
    { numRuns: SEQUENCES },
  );
});

test('a page that is full counts the rest: 101 attachments show 100 and say 101', async () => {
  const productId = (await makeProduct(t.db, ada, [bob])).id;
  const item = await makeItem(t.app, ada, productId, { title: 'Many files' });
  const at = `/api/products/${productId}/items/${item.number}`;
  for (let n = 0; n < 101; n++) await apply(productId, [item.number], { kind: 'attach', by: 'ada', item: 0 });
  const body = (await page(t.app, `/app/products/${productId}/items/${item.number}`, bob)).body;
  assert.equal(countIn(body, 'attachments-heading'), 101);
  assert.equal(
    Number((await client(t.app, bob).get(`${at}/attachments.json`)).headers['x-sprintly-attachment-count']),
    101,
  );
  await compare(productId, item.number, bob);
});
