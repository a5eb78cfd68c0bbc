import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BOARD_PAGE } from '../src/web/product-pages.js';
import {
  advanceClock,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
  type TestUser,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const page = (url: string, cookie: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'GET', url, headers: { cookie, ...headers } });

function postForm(url: string, cookie: string, params: Record<string, string>) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(params).toString(),
  });
}

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body.slice(0, 500)}`);
  return match[1];
}

/** The item numbers of a board column, top to bottom, as the page shows them. */
function column(body: string, status: string): number[] {
  const start = body.indexOf(`aria-labelledby="col-${status}"`);
  assert.ok(start >= 0, `no column ${status}`);
  const section = body.slice(start, body.indexOf('</section>', start));
  return [...section.matchAll(/<li class="card" id="item-(\d+)"/g)].map((m) => Number(m[1]));
}

/** The order of a status as the API reads it. */
async function apiOrder(user: TestUser, productId: number, status: string): Promise<number[]> {
  const res = await client(t.app, user).get(`/api/products/${productId}/items.json`, { status, limit: 500 });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().map((i: { number: number }) => i.number);
}

/** A member with a product, signed in to the pages. */
async function setUp(name = 'Board product') {
  const owner = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [], name);
  const cookie = await signInByMail(t, owner.email);
  return { owner, product, cookie, base: `/app/products/${product.id}` };
}

describe('the board', () => {
  test('one column per status, cards in priority order, with sub-item counts and filters in the URL', async () => {
    const { owner, product, cookie, base } = await setUp();
    const other = await makeUser(t.db);
    await makeProduct(t.db, other); // a product of someone else, whose items must not show
    await t.db.transaction().execute(async (trx) => {
      const { insertMembership } = await import('../src/products/repository.js');
      await insertMembership(trx, product.id, other.user.id, false, '2026-01-01T00:00:00+00:00');
    });
    const a = await makeItem(t.app, owner, product.id, { title: 'First', tags: 'ui' });
    const b = await makeItem(t.app, owner, product.id, {
      title: 'Second',
      type: 'defect',
      assigned_to: String(other.user.id),
    });
    const story = await makeItem(t.app, owner, product.id, {
      type: 'story',
      who: 'user',
      what: 'a board',
      why: 'I see work',
    });
    await makeItem(t.app, owner, product.id, { title: 'Sub', parent: String(story.number) });
    await makeItem(t.app, owner, product.id, { title: 'Sub 2', parent: String(story.number) });
    const doing = await makeItem(t.app, owner, product.id, { title: 'Doing', status: 'in-progress' });
    // b above a, as resort.json would put it.
    assert.equal(
      (
        await client(t.app, owner).post(`/api/products/${product.id}/items/${b.number}/resort.json`, {
          after: a.number,
        })
      ).statusCode,
      200,
    );

    const res = await page(`${base}/board`, cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-security-policy'] as string, /script-src 'self';/);
    for (const status of ['backlog', 'in-progress', 'completed', 'accepted']) column(res.body, status);
    // Someday holds nothing here, and nothing can be moved there: it is not shown.
    assert.doesNotMatch(res.body, /col-someday/);
    assert.deepEqual(column(res.body, 'backlog'), await apiOrder(owner, product.id, 'backlog'));
    assert.deepEqual(column(res.body, 'backlog'), [b.number, a.number, story.number]);
    assert.deepEqual(column(res.body, 'in-progress'), [doing.number]);
    assert.deepEqual(column(res.body, 'accepted'), []);
    assert.match(res.body, /2 sub-items/);
    assert.match(res.body, new RegExp(`First${other.user.id}`)); // the assignee's name on b's card

    const defects = await page(`${base}/board?type=defect`, cookie);
    assert.deepEqual(column(defects.body, 'backlog'), [b.number]);
    const tagged = await page(`${base}/board?tags=ui`, cookie);
    assert.deepEqual(column(tagged.body, 'backlog'), [a.number]);
    const assigned = await page(`${base}/board?assignee=${other.user.id}`, cookie);
    assert.deepEqual(column(assigned.body, 'backlog'), [b.number]);
    const mine = await page(`${base}/board?mine=1`, cookie);
    assert.deepEqual(column(mine.body, 'backlog'), []);
    const bad = await page(`${base}/board?type=epic`, cookie);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.headers['content-type'] as string, /text\/html/);
  });

  test('a long column shows its first page and a "more" link to the next', async () => {
    const { owner, product, cookie, base } = await setUp();
    const numbers: number[] = [];
    for (let i = 0; i < BOARD_PAGE + 2; i++)
      numbers.push((await makeItem(t.app, owner, product.id, { title: `Item ${i}` })).number);
    const first = await page(`${base}/board`, cookie);
    assert.deepEqual(column(first.body, 'backlog'), numbers.slice(0, BOARD_PAGE));
    const more = new RegExp(`href="([^"]+status=backlog&amp;offset=${BOARD_PAGE})"`).exec(first.body);
    assert.ok(more, 'no more link');
    const second = await page(more[1].replace(/&amp;/g, '&'), cookie);
    assert.equal(second.statusCode, 200);
    assert.deepEqual(column(second.body, 'backlog'), numbers.slice(BOARD_PAGE));
    assert.doesNotMatch(second.body, /col-in-progress/);
  });

  test("the board's filters mean what items.json's do: the same items, and the same refusals", async () => {
    const { owner, product, cookie, base } = await setUp();
    const other = await makeUser(t.db);
    await t.db.transaction().execute(async (trx) => {
      const { insertMembership } = await import('../src/products/repository.js');
      await insertMembership(trx, product.id, other.user.id, false, '2026-01-01T00:00:00+00:00');
    });
    const types = ['task', 'defect', 'test'];
    for (let i = 0; i < 12; i++)
      await makeItem(t.app, i % 2 ? other : owner, product.id, {
        type: types[i % 3],
        title: `Item ${i}`,
        tags: ['ui', 'api', 'ui,api', ''][i % 4],
        assigned_to: i % 3 === 1 ? '' : String((i % 5 < 2 ? owner : other).user.id),
        status: ['backlog', 'in-progress'][i % 2 === 0 && i % 4 !== 0 ? 1 : 0],
      });
    const me = owner.user.id;
    // The board's query, and the items.json parameters it stands for.
    const cases: [string, Record<string, string>][] = [
      [`type=task,defect`, { type: 'task,defect' }],
      [`tags=ui,api`, { tags: 'ui,api' }],
      [`assignee=${other.user.id}&tags=api`, { assigned_to: String(other.user.id), tags: 'api' }],
      [`creator=${other.user.id}&type=test`, { created_by: String(other.user.id), type: 'test' }],
      [`mine=1&assignee=${other.user.id}`, { assigned_to: String(me) }],
      [`mine=0&creator=${me}`, { created_by: String(me) }],
    ];
    for (const [query, listed] of cases) {
      const board = await page(`${base}/board?${query}`, cookie);
      assert.equal(board.statusCode, 200, query);
      for (const status of ['backlog', 'in-progress']) {
        const api = await client(t.app, owner).get(`/api/products/${product.id}/items.json`, {
          ...listed,
          status,
          limit: 500,
        });
        const numbers = api.json().map((i: { number: number }) => i.number);
        assert.deepEqual(column(board.body, status), numbers, `${query}, ${status}`);
      }
    }
    // A refusal: items.json's status, and each of its reasons beside the filter's field, which keeps
    // what was sent; the board below is the unfiltered one.
    const escaped = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
    const field: Record<string, string> = {
      type: 'type',
      tags: 'tags',
      assigned_to: 'assignee',
      created_by: 'creator',
    };
    const long = 'x'.repeat(65);
    for (const [query, listed] of [
      [`type=epic&tags=${long}`, { type: 'epic', tags: long }],
      [`tags=${long}&creator=7`, { tags: long, created_by: '7' }],
      ['assignee=999999', { assigned_to: '999999' }],
    ] as const) {
      const board = await page(`${base}/board?${query}`, cookie);
      const api = await client(t.app, owner).get(`/api/products/${product.id}/items.json`, listed);
      assert.equal(board.statusCode, api.statusCode, query);
      for (const [param, reason] of Object.entries(api.json().errors as Record<string, string>)) {
        const name = field[param];
        assert.match(
          board.body,
          new RegExp(`id="filter-${name}" [^>]*aria-invalid="true" aria-describedby="error-${name}`),
        );
        assert.ok(
          board.body.includes(
            `<span class="field-error" id="error-${name}" role="alert">${name} ${escaped(reason)}</span>`,
          ),
          `${query}: ${reason}`,
        );
      }
      assert.ok(column(board.body, 'backlog').length > 0, 'the unfiltered board');
    }
  });

  test('the tag filter ignores the case of A-Z, on the board as in items.json, and nothing else', async () => {
    const { owner, product, cookie, base } = await setUp();
    const upper = await makeItem(t.app, owner, product.id, { title: 'Upper', tags: 'UI' });
    const lower = await makeItem(t.app, owner, product.id, { title: 'Lower', tags: 'ui,Api' });
    const accented = await makeItem(t.app, owner, product.id, { title: 'Accented', tags: 'Écran' });
    await makeItem(t.app, owner, product.id, { title: 'Other', tags: 'uix' });
    const cases: [string, number[]][] = [
      ['ui', [upper.number, lower.number]],
      ['Ui', [upper.number, lower.number]],
      ['UI,API', [lower.number]],
      ['Écran', [accented.number]],
      ['ÉCRAN', [accented.number]],
      // Only A-Z fold: é is not É.
      ['écran', []],
    ];
    for (const [tags, expected] of cases) {
      const api = await client(t.app, owner).get(`/api/products/${product.id}/items.json`, { tags, limit: 500 });
      assert.equal(api.statusCode, 200, api.body);
      const numbers = api.json().map((i: { number: number }) => i.number);
      assert.deepEqual(
        [...numbers].sort((a: number, b: number) => a - b),
        expected,
        `items.json tags=${tags}`,
      );
      // The stored tags come back as they were written.
      for (const item of api.json())
        assert.ok(item.tags.every((tag: string) => ['UI', 'ui', 'Api', 'Écran'].includes(tag)));
      const board = await page(`${base}/board?tags=${encodeURIComponent(tags)}`, cookie);
      assert.deepEqual(column(board.body, 'backlog'), numbers, `board tags=${tags}`);
    }
  });

  test('move up, down, to the top and to another status through the forms, as the API then reads it', async () => {
    const { owner, product, cookie, base } = await setUp();
    const [a, b, c] = [
      await makeItem(t.app, owner, product.id, { title: 'A' }),
      await makeItem(t.app, owner, product.id, { title: 'B' }),
      await makeItem(t.app, owner, product.id, { title: 'C' }),
    ];
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    const move = (n: number, params: Record<string, string>) =>
      postForm(`${base}/items/${n}/move`, cookie, { csrf, back: 'type=task', ...params });

    let res = await move(c.number, { to: 'up', above: String(b.number) });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `${base}/board?type=task&moved=${c.number}#item-${c.number}`);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [a.number, c.number, b.number]);

    res = await move(a.number, { to: 'down', below: String(c.number) });
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [c.number, a.number, b.number]);

    res = await move(b.number, { to: 'top' });
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [b.number, c.number, a.number]);

    res = await move(c.number, { to: 'status', status: 'in-progress' });
    assert.equal(res.statusCode, 303, res.body);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [b.number, a.number]);
    assert.deepEqual(await apiOrder(owner, product.id, 'in-progress'), [c.number]);

    // The board's own forms carry the neighbours: pressing "Up" on a's card moves it above b.
    const board = await page(`${base}/board`, cookie);
    const form = new RegExp(`action="${base}/items/${a.number}/move">[\\s\\S]*?name="above" value="(\\d+)"`).exec(
      board.body,
    );
    assert.equal(Number(form?.[1]), b.number);

    const refused = await move(a.number, { to: 'status', status: 'someday' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /status/);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [b.number, a.number]);
  });

  test('a drop (to=place) sets the status, then the place between its new neighbours; scripts get JSON', async () => {
    const { owner, product, cookie, base } = await setUp();
    const [a, b, c] = [
      await makeItem(t.app, owner, product.id, { title: 'A' }),
      await makeItem(t.app, owner, product.id, { title: 'B' }),
      await makeItem(t.app, owner, product.id, { title: 'C' }),
    ];
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    const drop = (n: number, params: Record<string, string>, accept = 'application/json') =>
      t.app.inject({
        method: 'POST',
        url: `${base}/items/${n}/move`,
        headers: { cookie, accept, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ csrf, to: 'place', ...params }).toString(),
      });

    let res = await drop(c.number, { status: 'backlog', below: String(a.number) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { number: c.number });
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), [c.number, a.number, b.number]);

    res = await drop(a.number, { status: 'in-progress' });
    assert.equal(res.statusCode, 200, res.body);
    res = await drop(b.number, { status: 'in-progress', above: String(a.number) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(await apiOrder(owner, product.id, 'in-progress'), [a.number, b.number]);
    res = await drop(
      c.number,
      { status: 'in-progress', above: String(a.number), below: String(b.number) },
      'text/html',
    );
    assert.equal(res.statusCode, 303, 'a form without the script comes back to the board');
    assert.deepEqual(await apiOrder(owner, product.id, 'in-progress'), [a.number, c.number, b.number]);

    const refused = await drop(a.number, { status: 'someday' });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 400);
    assert.match(refused.json().message, /status/);
    const noToken = await t.app.inject({
      method: 'POST',
      url: `${base}/items/${a.number}/move`,
      headers: { cookie, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'to=place&status=backlog',
    });
    assert.equal(noToken.statusCode, 403);
    assert.deepEqual(await apiOrder(owner, product.id, 'in-progress'), [a.number, c.number, b.number]);

    const script = await t.app.inject({ method: 'GET', url: '/app/board.js' });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    assert.match(script.body, /to', 'place'/);
  });

  test('a form without the session token, or from another site, changes nothing', async () => {
    const { owner, product, cookie, base } = await setUp();
    const [a, b] = [
      await makeItem(t.app, owner, product.id, { title: 'A' }),
      await makeItem(t.app, owner, product.id, { title: 'B' }),
    ];
    const before = await apiOrder(owner, product.id, 'backlog');
    const noToken = await postForm(`${base}/items/${b.number}/move`, cookie, { to: 'up', above: String(a.number) });
    assert.equal(noToken.statusCode, 403);
    const wrong = await postForm(`${base}/items/${b.number}`, cookie, { csrf: 'x'.repeat(43), title: 'Hijacked' });
    assert.equal(wrong.statusCode, 403);
    const created = await postForm(`${base}/items`, cookie, { type: 'task', title: 'Sneaky' });
    assert.equal(created.statusCode, 403);
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    const crossSite = await t.app.inject({
      method: 'POST',
      url: `${base}/items/${b.number}/move`,
      headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, to: 'up', above: String(a.number) }).toString(),
    });
    assert.equal(crossSite.statusCode, 403);
    assert.deepEqual(await apiOrder(owner, product.id, 'backlog'), before);
    const item = (await client(t.app, owner).get(`/api/products/${product.id}/items/${b.number}.json`)).json();
    assert.equal(item.title, 'B');
    assert.equal(before.length, 2);
  });
});

describe('the board, kept between changes', () => {
  test('every change to what a card or the filters show is on the next board at once', async () => {
    const { owner, product, cookie, base } = await setUp();
    const api = client(t.app, owner);
    const [a, b] = [
      await makeItem(t.app, owner, product.id, { title: 'Alpha' }),
      await makeItem(t.app, owner, product.id, { title: 'Beta' }),
    ];
    const board = async () => (await page(`${base}/board`, cookie)).body;
    assert.deepEqual(column(await board(), 'backlog'), [a.number, b.number]);
    assert.equal(await board(), await board(), 'the same board twice');

    const changes: [string, () => Promise<unknown>, (body: string) => void][] = [
      [
        'title',
        () => api.post(`/api/products/${product.id}/items/${a.number}.json`, { title: 'Alpha renamed' }),
        (body) => assert.match(body, /Alpha renamed/),
      ],
      [
        'score',
        () => api.post(`/api/products/${product.id}/items/${a.number}.json`, { score: 'XL' }),
        (body) => assert.match(body, /class="score">XL</),
      ],
      [
        'tags',
        () => api.post(`/api/products/${product.id}/items/${b.number}.json`, { tags: 'fresh-tag' }),
        (body) => assert.match(body, /<span>fresh-tag<\/span>/),
      ],
      [
        'order',
        () => api.post(`/api/products/${product.id}/items/${b.number}/resort.json`, { after: a.number }),
        (body) => assert.deepEqual(column(body, 'backlog'), [b.number, a.number]),
      ],
      [
        'status',
        () => api.post(`/api/products/${product.id}/items/${a.number}.json`, { status: 'in-progress' }),
        (body) => assert.deepEqual(column(body, 'in-progress'), [a.number]),
      ],
      ['new item', () => makeItem(t.app, owner, product.id, { title: 'Gamma' }), (body) => assert.match(body, /Gamma/)],
      [
        'archived',
        () => api.delete(`/api/products/${product.id}/items/${b.number}.json`),
        (body) => assert.doesNotMatch(body, /Beta/),
      ],
    ];
    for (const [what, change, check] of changes) {
      await board();
      const res = (await change()) as { statusCode?: number; body?: string } | undefined;
      if (res?.statusCode !== undefined) assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      check(await board());
    }

    // A new member is in the filters' lists of people.
    await board();
    const newcomer = await makeUser(t.db, { firstName: 'Newcomer' });
    await t.db.transaction().execute(async (trx) => {
      const { insertMembership } = await import('../src/products/repository.js');
      await insertMembership(trx, product.id, newcomer.user.id, false, '2026-01-01T00:00:00+00:00');
    });
    assert.match(await board(), /Newcomer/);
  });

  test('each person gets the same board with their own form token, which their forms then carry', async () => {
    const { owner, product, cookie, base } = await setUp();
    const colleague = await makeUser(t.db);
    await t.db.transaction().execute(async (trx) => {
      const { insertMembership } = await import('../src/products/repository.js');
      // An admin like the owner: admins' navigation differs from members'.
      await insertMembership(trx, product.id, colleague.user.id, true, '2026-01-01T00:00:00+00:00');
    });
    const theirs = await signInByMail(t, colleague.email);
    const [a, b] = [
      await makeItem(t.app, owner, product.id, { title: 'A' }),
      await makeItem(t.app, owner, product.id, { title: 'B' }),
    ];
    const mine = await page(`${base}/board`, cookie);
    const other = await page(`${base}/board`, theirs);
    const [myToken, otherToken] = [csrfOf(mine), csrfOf(other)];
    assert.notEqual(myToken, otherToken);
    assert.equal(mine.body.split(myToken).length, other.body.split(otherToken).length, 'every form carries the token');
    assert.ok(!other.body.includes(myToken), "nobody gets another person's token");
    assert.ok(!other.body.includes(owner.email), "nor another person's address");
    assert.equal(
      mine.body.replaceAll(myToken, ''),
      other.body.replaceAll(otherToken, '').replaceAll(colleague.email, owner.email),
    );

    const moved = await postForm(`${base}/items/${b.number}/move`, theirs, {
      csrf: otherToken,
      to: 'up',
      above: String(a.number),
    });
    assert.equal(moved.statusCode, 303, moved.body);
    assert.deepEqual(column((await page(`${base}/board`, cookie)).body, 'backlog'), [b.number, a.number]);
  });
});

describe('the item page', () => {
  test('shows the item, its sub-items, followers and deploys; Markdown rendered safely', async () => {
    const { owner, product, cookie, base } = await setUp();
    const story = await makeItem(t.app, owner, product.id, {
      type: 'story',
      who: 'user',
      what: 'a page',
      why: 'I read items',
      description: '**Bold** and <script>alert(1)</script> [x](javascript:alert(2))',
      tags: 'ui,web',
    });
    const sub = await makeItem(t.app, owner, product.id, { title: 'Part one', parent: String(story.number) });
    const api = client(t.app, owner);
    assert.equal(
      (
        await api.post(`/api/products/${product.id}/deploys.json`, {
          environment: 'staging',
          numbers: String(story.number),
          version: '1.0',
        })
      ).statusCode,
      200,
    );
    assert.equal(
      (
        await api.post(`/api/products/${product.id}/deploys.json`, {
          environment: 'production',
          numbers: String(story.number),
          version: '1.1',
        })
      ).statusCode,
      200,
    );

    const res = await page(`${base}/items/${story.number}`, cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /As a user, I want a page so that I read items\./);
    assert.match(res.body, /<strong>Bold<\/strong>/);
    assert.doesNotMatch(res.body, /<script>/);
    assert.match(res.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.doesNotMatch(res.body, /href="javascript:/);
    assert.match(res.body, new RegExp(`href="${base}/items/${sub.number}">#${sub.number} Part one`));
    assert.match(res.body, /<li>ui<\/li><li>web<\/li>/);
    // Environments, the latest deployed first, with who made their deploys (test/web-where.test.ts has the rest).
    const production = res.body.indexOf('<strong class="environment">production</strong>');
    const staging = res.body.indexOf('<strong class="environment">staging</strong>');
    assert.ok(production > 0 && staging > production, 'environments latest first');
    assert.match(
      res.body,
      new RegExp(
        `production</strong> <a class="version" href="${base}/deploys/\\d+">1.1</a> ` +
          `<span class="muted">deployed by First${owner.user.id} Last${owner.user.id}</span>`,
      ),
    );
    assert.match(res.body, /1 follower: First/);

    const subPage = await page(`${base}/items/${sub.number}`, cookie);
    assert.match(subPage.body, new RegExp(`Parent</dt><dd><a href="${base}/items/${story.number}">`));
    assert.equal((await page(`${base}/items/999999`, cookie)).statusCode, 404);
    assert.equal((await page(`${base}/items/abc`, cookie)).statusCode, 404);
  });

  test('an edit goes through the item rules: errors by the field with the values kept, nothing changed', async () => {
    const { owner, product, cookie, base } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Before', description: 'Old' });
    const url = `${base}/items/${item.number}`;
    const csrf = csrfOf(await page(url, cookie));
    const fields = {
      csrf,
      title: '   ',
      description: 'New text kept',
      status: 'backlog',
      score: 'M',
      tags: 'a',
      assigned_to: '',
    };
    const bad = await postForm(url, cookie, fields);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /<span class="field-error" id="error-title" role="alert">title must not be empty<\/span>/);
    assert.match(bad.body, />\nNew text kept<\/textarea>/);
    assert.match(bad.body, /<option value="M" selected>M<\/option>/);
    let json = (await client(t.app, owner).get(`/api/products/${product.id}/items/${item.number}.json`)).json();
    assert.deepEqual([json.title, json.description, json.score], ['Before', 'Old', '~']);

    const longTag = await postForm(url, cookie, { ...fields, title: 'After', tags: 'x'.repeat(65) });
    assert.equal(longTag.statusCode, 400);
    assert.match(longTag.body, /id="error-tags"[^>]*>tags each tag must be at most 64 characters/);

    const good = await postForm(url, cookie, {
      ...fields,
      title: 'After',
      status: 'in-progress',
      assigned_to: String(owner.user.id),
    });
    assert.equal(good.statusCode, 303, good.body);
    assert.equal(good.headers.location, `${url}?done=saved`);
    json = (await client(t.app, owner).get(`/api/products/${product.id}/items/${item.number}.json`)).json();
    assert.deepEqual(
      [json.title, json.description, json.status, json.score, json.tags, json.assigned_to.id],
      ['After', 'New text kept', 'in-progress', 'M', ['a'], owner.user.id],
    );
    assert.ok(json.progress.started_at);
  });

  test("saving a someday item keeps it there; the textarea's CRLF line breaks are stored as typed", async () => {
    const { owner, product, cookie, base } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Later', description: 'one\ntwo' });
    await t.db
      .updateTable('items')
      .set((eb) => ({ status: 0, version: eb('version', '+', 1) }))
      .where('product_id', '=', product.id)
      .where('number', '=', item.number)
      .execute();
    const url = `${base}/items/${item.number}`;
    const shown = await page(url, cookie);
    assert.match(shown.body, /<option value="">someday \(as it is\)<\/option>/);
    const csrf = csrfOf(shown);
    const res = await postForm(url, cookie, {
      csrf,
      title: 'Later',
      description: 'one\r\ntwo',
      status: '',
      score: '~',
      tags: '',
      assigned_to: '',
    });
    assert.equal(res.statusCode, 303, res.body);
    const json = (await client(t.app, owner).get(`/api/products/${product.id}/items/${item.number}.json`)).json();
    assert.deepEqual([json.status, json.description, json.last_modified], ['someday', 'one\ntwo', item.last_modified]);
  });

  test('follow and unfollow', async () => {
    const { owner, product, base } = await setUp();
    const member = await makeUser(t.db);
    const { insertMembership } = await import('../src/products/repository.js');
    await t.db
      .transaction()
      .execute((trx) => insertMembership(trx, product.id, member.user.id, false, '2026-01-01T00:00:00+00:00'));
    const cookie = await signInByMail(t, member.email);
    const item = await makeItem(t.app, owner, product.id, { title: 'Watched' });
    const url = `${base}/items/${item.number}`;
    const followers = async () =>
      (
        await t.db
          .selectFrom('followers')
          .select('user_id')
          .where(
            'item_id',
            '=',
            (
              await t.db
                .selectFrom('items')
                .select('id')
                .where('product_id', '=', product.id)
                .where('number', '=', item.number)
                .executeTakeFirstOrThrow()
            ).id,
          )
          .execute()
      )
        .map((r) => r.user_id)
        .sort();

    let shown = await page(url, cookie);
    assert.match(shown.body, /<button type="submit">Follow<\/button>/);
    const csrf = csrfOf(shown);
    assert.equal((await postForm(`${url}/follow`, cookie, { csrf, follow: '1' })).statusCode, 303);
    assert.deepEqual(await followers(), [owner.user.id, member.user.id].sort());
    shown = await page(url, cookie);
    assert.match(shown.body, /<button type="submit">Unfollow<\/button>/);
    assert.match(shown.body, /2 followers/);
    assert.equal((await postForm(`${url}/follow`, cookie, { csrf, follow: '0' })).statusCode, 303);
    assert.deepEqual(await followers(), [owner.user.id]);
  });

  test('create an item and a sub-item from the forms; a missing title is shown next to its field', async () => {
    const { owner, product, cookie, base } = await setUp();
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    const story = await postForm(`${base}/items`, cookie, {
      csrf,
      type: 'story',
      who: 'admin',
      what: 'pages',
      why: 'no curl',
      status: 'in-progress',
    });
    assert.equal(story.statusCode, 303, story.body);
    const storyNumber = Number(/\/items\/(\d+)$/.exec(story.headers.location as string)?.[1]);
    let json = (await client(t.app, owner).get(`/api/products/${product.id}/items/${storyNumber}.json`)).json();
    assert.deepEqual(
      [json.type, json.title, json.status],
      ['story', 'As an admin, I want pages so that no curl.', 'in-progress'],
    );

    const storyPage = await page(`${base}/items/${storyNumber}`, cookie);
    assert.match(storyPage.body, new RegExp(`name="parent" value="${storyNumber}"`));
    const sub = await postForm(`${base}/items`, cookie, {
      csrf,
      type: 'task',
      title: 'Wire it',
      parent: String(storyNumber),
      status: 'backlog',
    });
    assert.equal(sub.statusCode, 303, sub.body);
    const subNumber = Number(/\/items\/(\d+)$/.exec(sub.headers.location as string)?.[1]);
    json = (await client(t.app, owner).get(`/api/products/${product.id}/items/${subNumber}.json`)).json();
    assert.equal(json.parent.number, storyNumber);

    const missing = await postForm(`${base}/items`, cookie, { csrf, type: 'defect', title: '', status: 'backlog' });
    assert.equal(missing.statusCode, 400);
    assert.match(missing.body, /id="error-title"[^>]*>title is required/);
    const missingSub = await postForm(`${base}/items`, cookie, {
      csrf,
      type: 'task',
      title: '',
      parent: String(storyNumber),
    });
    assert.equal(missingSub.statusCode, 400);
    assert.match(missingSub.body, /<details open>/);
    assert.equal(
      (
        await client(t.app, owner).get(`/api/products/${product.id}/items.json`, {
          status: 'backlog,in-progress',
          children: 'true',
        })
      ).json().length,
      2,
    );
  });

  test('a refused parameter the form has no field for is still said on the page', async () => {
    const { owner, product, cookie, base } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'A task' });
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    // A task's edit form has no who; the board's form no score: such a request comes from
    // elsewhere, but is answered all the same.
    const edit = await postForm(`${base}/items/${item.number}`, cookie, {
      csrf,
      title: 'Renamed',
      who: 'x'.repeat(256),
    });
    assert.equal(edit.statusCode, 400);
    assert.match(edit.body, /<p class="error">who must be at most 255 characters<\/p>/);
    const created = await postForm(`${base}/items`, cookie, {
      csrf,
      type: 'task',
      title: 'New',
      score: 'huge',
      tags: 'x'.repeat(65),
    });
    assert.equal(created.statusCode, 400);
    assert.match(
      created.body,
      /<p class="error">score must be one of ~, S, M, L, XL; tags each tag must be at most 64 characters<\/p>/,
    );
    assert.equal(
      (await client(t.app, owner).get(`/api/products/${product.id}/items/${item.number}.json`)).json().title,
      'A task',
    );
  });

  test('a new item under a parent that is no story is refused on the board, with the reason', async () => {
    const { owner, product, cookie, base } = await setUp();
    const task = await makeItem(t.app, owner, product.id, { title: 'Not a story' });
    const csrf = csrfOf(await page(`${base}/board`, cookie));
    for (const parent of [String(task.number), '99', 'abc']) {
      const refused = await postForm(`${base}/items`, cookie, { csrf, type: 'task', title: 'Sub', parent });
      assert.equal(refused.statusCode, 400, parent);
      assert.match(refused.body, /<title>Board · /, parent);
      assert.match(refused.body, /id="error-parent"[^>]*>parent [^<]+</, parent);
    }
    assert.equal((await client(t.app, owner).get(`/api/products/${product.id}/items.json`)).json().length, 1);
  });

  test('a script in a title is text on the board and on the item page', async () => {
    const { owner, product, cookie, base } = await setUp();
    const evil = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    const item = await makeItem(t.app, owner, product.id, { title: evil, tags: '<b>t</b>' });
    for (const url of [`${base}/board`, `${base}/items/${item.number}`]) {
      const res = await page(url, cookie);
      assert.equal(res.statusCode, 200);
      // The one script element is the page's own, from Shiplog.
      const own = /<script src="\/app\/(forms|board|item|live)\.js" defer><\/script>/g;
      assert.doesNotMatch(res.body.replace(own, ''), /<script|<img|<b>t/);
      assert.match(
        res.body,
        /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;&lt;img src=x onerror=alert\(1\)&gt;/,
      );
    }
  });
});

describe('membership and links', () => {
  test('a non-member gets a 403 page that tells nothing of the product; an unknown product is a 404 page', async () => {
    const { owner, product, base } = await setUp('Secret project name');
    const item = await makeItem(t.app, owner, product.id, { title: 'Secret item title' });
    const outsider = await makeUser(t.db);
    const cookie = await signInByMail(t, outsider.email);
    const csrf = csrfOf(await page('/app/products', cookie));
    const answers = [
      await page(`${base}/board`, cookie),
      await page(`${base}/items/${item.number}`, cookie),
      await page(`${base}/deploys`, cookie),
      await postForm(`${base}/items/${item.number}`, cookie, { csrf, title: 'Mine now' }),
      await postForm(`${base}/items`, cookie, { csrf, type: 'task', title: 'Planted' }),
    ];
    for (const res of answers) {
      assert.equal(res.statusCode, 403);
      assert.match(res.headers['content-type'] as string, /text\/html/);
      assert.doesNotMatch(res.body, /Secret/);
    }
    assert.equal(
      (await client(t.app, owner).get(`/api/products/${product.id}/items/${item.number}.json`)).json().title,
      'Secret item title',
    );
    assert.equal((await page('/app/products/99999999/board', cookie)).statusCode, 404);
    assert.equal((await page('/app/products/nope/board', cookie)).statusCode, 404);
    const anonymous = await t.app.inject({ method: 'GET', url: `${base}/board` });
    assert.equal(anonymous.statusCode, 303);
    assert.equal(anonymous.headers.location, `/app/sign-in?next=${encodeURIComponent(`${base}/board`)}`);
  });

  test('short_url: a browser is sent to the item page, API clients to the JSON', async () => {
    const { owner, product, cookie } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Linked' });
    const path = new URL(item.short_url).pathname;
    const browser = await t.app.inject({
      method: 'GET',
      url: path,
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    assert.equal(browser.statusCode, 302);
    assert.equal(browser.headers.location, `http://shiplog.test/app/products/${product.id}/items/${item.number}`);
    assert.equal((await page(new URL(browser.headers.location as string).pathname, cookie)).statusCode, 200);
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
      const res = await t.app.inject({ method: 'GET', url: path, headers: accept ? { accept } : {} });
      assert.equal(res.statusCode, 302, String(accept));
      assert.equal(
        res.headers.location,
        `http://shiplog.test/api/products/${product.id}/items/${item.number}.json`,
        String(accept),
      );
    }
  });
});

describe('the deploys page', () => {
  test('newest first, each with its items, notes and who; filtered by environment; paged', async () => {
    const { owner, product, cookie, base } = await setUp();
    const a = await makeItem(t.app, owner, product.id, { title: 'Alpha' });
    const b = await makeItem(t.app, owner, product.id, { title: 'Beta' });
    const api = client(t.app, owner);
    const deploy = async (environment: string, numbers: number[], version: string, notes = '') => {
      const res = await api.post(`/api/products/${product.id}/deploys.json`, {
        environment,
        numbers: numbers.join(','),
        version,
        notes,
      });
      assert.equal(res.statusCode, 200, res.body);
    };
    await deploy('staging', [a.number], 'v1', 'First *notes* <script>x</script>');
    await deploy('production', [a.number, b.number], 'v2');
    await deploy('staging', [b.number], 'v3');

    const res = await page(`${base}/deploys`, cookie);
    assert.equal(res.statusCode, 200, res.body);
    const versions = [...res.body.matchAll(/<span class="version">([^<]+)<\/span>/g)].map((m) => m[1]);
    assert.deepEqual(versions, ['v3', 'v2', 'v1']);
    assert.match(res.body, /<em>notes<\/em>/);
    assert.doesNotMatch(res.body, /<script>/);
    assert.match(res.body, new RegExp(`href="${base}/items/${b.number}">#${b.number} Beta`));
    assert.match(res.body, new RegExp(`by First${owner.user.id} Last${owner.user.id}`));

    const staging = await page(`${base}/deploys?environment=staging`, cookie);
    assert.deepEqual(
      [...staging.body.matchAll(/<span class="version">([^<]+)<\/span>/g)].map((m) => m[1]),
      ['v3', 'v1'],
    );

    for (let i = 0; i < 20; i++) await deploy('qa', [a.number], `q${i}`);
    const first = await page(`${base}/deploys`, cookie);
    assert.equal([...first.body.matchAll(/<section class="deploy"/g)].length, 20);
    const older = /href="([^"]+offset=20)">Older/.exec(first.body);
    assert.ok(older, 'no link to older deploys');
    const second = await page(older[1].replace(/&amp;/g, '&'), cookie);
    assert.deepEqual(
      [...second.body.matchAll(/<span class="version">([^<]+)<\/span>/g)].map((m) => m[1]),
      ['v3', 'v2', 'v1'],
    );
  });
});

describe('a board people work on', () => {
  /** The section of a column, as the page has it. */
  const section = (body: string, status: string) => {
    const start = body.indexOf(`aria-labelledby="col-${status}"`);
    assert.ok(start >= 0, `no column ${status}`);
    return body.slice(start, body.indexOf('</section>', start));
  };

  test("sub-items are under their story; on Mine, a person's sub-items are cards naming their story", async () => {
    const { owner, product, cookie, base } = await setUp();
    const story = await makeItem(t.app, owner, product.id, { type: 'story', who: 'a team', what: 'a board', why: 'x' });
    const sub = await makeItem(t.app, owner, product.id, {
      title: 'Sub for me',
      parent: String(story.number),
      assigned_to: String(owner.user.id),
      status: 'in-progress',
    });
    const board = await page(`${base}/board`, cookie);
    const backlog = section(board.body, 'backlog');
    assert.match(backlog, /<details class="subs"><summary>1 sub-item<\/summary>/);
    assert.match(backlog, new RegExp(`href="${base}/items/${sub.number}">#${sub.number} Sub for me</a>`));
    assert.match(backlog, /in-progress/);

    const mine = await page(`${base}/board?mine=1`, cookie);
    assert.equal(mine.statusCode, 200);
    const doing = section(mine.body, 'in-progress');
    assert.match(doing, /<h3 class="sub-cards">Sub-items<\/h3>/);
    assert.match(doing, new RegExp(`id="item-${sub.number}"`));
    assert.match(doing, new RegExp(`in <a href="${base}/items/${story.number}">#${story.number} `));
    assert.doesNotMatch(section(mine.body, 'backlog'), new RegExp(`id="item-${sub.number}"`));
  });

  test('compact cards: one move menu, initials, tags inline; a status button alone moves the card', async () => {
    const { owner, product, cookie, base } = await setUp();
    const [a, b] = [
      await makeItem(t.app, owner, product.id, { title: 'A', tags: 'ui', assigned_to: String(owner.user.id) }),
      await makeItem(t.app, owner, product.id, { title: 'B' }),
    ];
    const board = await page(`${base}/board`, cookie);
    const card = new RegExp(`<li class="card" id="item-${a.number}"[\\s\\S]*?</li>`).exec(board.body)?.[0] ?? '';
    assert.equal(card.match(/<details class="move">/g)?.length, 1);
    assert.equal(card.match(/<form /g)?.length, 1);
    assert.match(card, /<span class="tags"><span>ui<\/span><\/span>/);
    assert.match(
      card,
      /class="who" title="[^"]+"><span aria-hidden="true">[A-Z]{1,2}<\/span><span class="sr-only">assigned/,
    );
    assert.match(card, /<button name="status" value="in-progress" data-to="status">To in-progress<\/button>/);
    assert.doesNotMatch(card, /<select/);

    const csrf = csrfOf(board);
    const moved = await postForm(`${base}/items/${b.number}/move`, cookie, { csrf, status: 'completed' });
    assert.equal(moved.statusCode, 303, moved.body);
    assert.equal(moved.headers.location, `${base}/board?moved=${b.number}#item-${b.number}`);
    assert.deepEqual(await apiOrder(owner, product.id, 'completed'), [b.number]);
    const after = await page(moved.headers.location as string, cookie);
    assert.match(
      after.body,
      new RegExp(`<p class="notice" role="status" id="notice">Moved #${b.number} B to completed.`),
    );
  });

  test('done columns are newest first, without up and down; someday shows when it holds items', async () => {
    const { owner, product, cookie, base } = await setUp();
    const api = client(t.app, owner);
    const [a, b, c] = [
      await makeItem(t.app, owner, product.id, { title: 'Done first' }),
      await makeItem(t.app, owner, product.id, { title: 'Done second' }),
      await makeItem(t.app, owner, product.id, { title: 'Done third' }),
    ];
    for (const item of [a, c, b]) {
      const res = await api.post(`/api/products/${product.id}/items/${item.number}.json`, { status: 'completed' });
      assert.equal(res.statusCode, 200);
      advanceClock(60_000);
    }
    const board = await page(`${base}/board`, cookie);
    const done = section(board.body, 'completed');
    assert.deepEqual(column(board.body, 'completed'), [b.number, c.number, a.number]);
    assert.match(done, /newest first/);
    assert.doesNotMatch(done, /name="to" value="(up|down|top)"/);
    assert.doesNotMatch(board.body, /col-someday/);

    await t.db
      .updateTable('items')
      .set((eb) => ({ status: 0, version: eb('version', '+', 1) }))
      .where('product_id', '=', product.id)
      .where('number', '=', a.number)
      .execute();
    // As a change of status would: every list's totals and order are new.
    await t.db
      .updateTable('products')
      .set((eb) => ({
        revision: eb('revision', '+', 1),
        items_version: eb('items_version', '+', 1),
        order_version: eb('order_version', '+', 1),
      }))
      .where('id', '=', product.id)
      .execute();
    const later = await page(`${base}/board`, cookie);
    assert.deepEqual(column(later.body, 'someday'), [a.number]);
    // Nothing moves into someday: no card offers it.
    assert.doesNotMatch(later.body, /value="someday"/);
  });

  test('a new item made on the board stays there, said by number and title; a refused one is focused', async () => {
    const { product, cookie, base } = await setUp();
    const board = await page(`${base}/board`, cookie);
    assert.match(board.body, /<input type="hidden" name="from" value="board">/);
    const csrf = csrfOf(board);
    const made = await postForm(`${base}/items`, cookie, {
      csrf,
      from: 'board',
      type: 'task',
      title: 'Stay here',
      status: 'backlog',
    });
    assert.equal(made.statusCode, 303, made.body);
    const number = Number(/created=(\d+)/.exec(made.headers.location as string)?.[1]);
    assert.equal(made.headers.location, `/app/products/${product.id}/board?created=${number}#item-${number}`);
    const shown = await page(made.headers.location as string, cookie);
    assert.match(shown.body, new RegExp(`id="notice">Created #${number} Stay here in backlog.</p>`));
    assert.deepEqual(column(shown.body, 'backlog'), [number]);
    // The notice is for that answer only: the board after it is the shared one, without it.
    assert.doesNotMatch((await page(`${base}/board`, cookie)).body, /id="notice"/);
    // An unknown number says nothing.
    assert.doesNotMatch((await page(`${base}/board?created=999`, cookie)).body, /id="notice"/);

    const refused = await postForm(`${base}/items`, cookie, { csrf, from: 'board', type: 'story', who: 'me' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /id="new-what" type="text" name="what" maxlength="255" value="" aria-invalid="true"/);
  });

  test('the board carries its keys, its live region, the tags hint and its event stream', async () => {
    const { product, cookie, base } = await setUp();
    const board = await page(`${base}/board`, cookie);
    assert.match(board.body, /<p id="board-live" class="sr-only" aria-live="polite"><\/p>/);
    assert.match(board.body, /<section id="board-keys"[\s\S]*<kbd>j \/ k<\/kbd>[\s\S]*<kbd>\?<\/kbd>/);
    assert.match(board.body, /aria-describedby="tags-hint"> <small id="tags-hint" class="muted">any case: ui finds UI/);
    assert.match(board.body, new RegExp(`data-live="/app/products/${product.id}/events\\?since=\\d+"`));
    assert.match(board.body, /<nav class="column-tabs" aria-label="Columns">/);
    const script = await t.app.inject({ method: 'GET', url: '/app/board.js' });
    assert.match(script.body, /shiplog:change/);
    const live = await t.app.inject({ method: 'GET', url: '/app/live.js' });
    assert.equal(live.statusCode, 200);
    assert.match(live.body, /new EventSource/);
    const events = await page(`${base}/events`, cookie);
    assert.equal(events.statusCode, 400, 'not an event source');
  });
});
