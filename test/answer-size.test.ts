import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { client, makeApp, makeProduct, makeUser, signInByMail, type TestContext, type TestUser } from './helpers.js';

// A small bound, so that a few items of a few KiB fill an answer: what 8 MB are to items of 64 KiB.
const BUDGET = 20_000;
const DESCRIPTION = 'A long description. '.repeat(300); // 6,000 bytes: three items to an answer

let t: TestContext;
let owner: TestUser;

before(async () => {
  t = await makeApp({ env: { MAX_ANSWER_BYTES: String(BUDGET) } });
  owner = await makeUser(t.db);
});
after(() => t.close());

type Json = Record<string, unknown>;
const body = (res: LightMyRequestResponse) => {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json & Json[];
};
const numbersOf = (items: unknown) => (items as Json[]).map((item) => item.number as number);

/** A product of `count` tasks with long descriptions, or as given (and the client of its owner). */
async function bigProduct(count: number, description = DESCRIPTION, title = (i: number) => `Task ${i}`) {
  const product = await makeProduct(t.db, owner);
  const base = `/api/products/${product.id}`;
  const api = client(t.app, owner);
  for (let i = 1; i <= count; i++)
    body(await api.post(`${base}/items.json`, { type: 'task', title: title(i), description }));
  return { base, api };
}

/**
 * Follows a list from offset 0 by X-Sprintly-Next-Offset, checking each page against the bound
 * and the total; returns the pages' numbers.
 */
async function followPages(
  get: (offset: number) => Promise<LightMyRequestResponse>,
  total: number,
  countHeader: string,
  bound = BUDGET,
): Promise<number[][]> {
  const pages: number[][] = [];
  let offset: number | undefined = 0;
  while (offset !== undefined) {
    const res = await get(offset);
    assert.ok(res.rawPayload.length <= bound, `a page of ${res.rawPayload.length} bytes`);
    assert.equal(res.headers[countHeader], String(total), 'the total counts every entry, whatever the page holds');
    const page = body(res);
    pages.push(page.map((entry) => (entry.number ?? entry.id) as number));
    const next = res.headers['x-sprintly-next-offset'];
    if (next !== undefined)
      assert.equal(Number(next), offset + page.length, 'the next page starts right after this one');
    else assert.equal(offset + page.length, total, 'no next offset only on the last page');
    offset = next === undefined ? undefined : Number(next);
    assert.ok(pages.length <= total, 'every page moves on');
  }
  return pages;
}

describe('answers stay within MAX_ANSWER_BYTES', () => {
  test('items.json ends a page early; the count stays exact and the next offset leads through every item', async () => {
    const { base, api } = await bigProduct(8);
    const pages = await followPages(
      (offset) => api.get(`${base}/items.json`, { limit: 500, offset, order_by: 'oldest' }),
      8,
      'x-sprintly-item-count',
    );
    assert.ok(pages.length > 1 && pages[0].length < 8, `cut into pages: ${JSON.stringify(pages)}`);
    assert.deepEqual(pages.flat(), [1, 2, 3, 4, 5, 6, 7, 8]);

    // The kept answer (the same question under the same revision) says the same, headers included.
    const fresh = await api.get(`${base}/items.json`, { limit: 500, order_by: 'oldest' });
    const kept = await api.get(`${base}/items.json`, { limit: 500, order_by: 'oldest' });
    assert.equal(kept.body, fresh.body);
    assert.equal(kept.headers['x-sprintly-next-offset'], fresh.headers['x-sprintly-next-offset']);
    assert.equal(kept.headers['x-sprintly-item-count'], '8');

    // A page that is not cut short has no next offset when nothing remains, and one when it does.
    const small = await api.get(`${base}/items.json`, { limit: 2, order_by: 'oldest' });
    assert.equal(small.headers['x-sprintly-next-offset'], '2');
    assert.equal(body(small).length, 2);
    const last = await api.get(`${base}/items.json`, { limit: 2, offset: 7, order_by: 'oldest' });
    assert.equal(last.headers['x-sprintly-next-offset'], undefined);
    assert.deepEqual(numbersOf(body(last)), [8]);
  });

  test('an item bigger than the bound on its own still has a page of its own', async () => {
    const { base, api } = await bigProduct(3, 'x'.repeat(BUDGET));
    const pages = await followPages(
      (offset) => api.get(`${base}/items.json`, { offset, order_by: 'oldest' }),
      3,
      'x-sprintly-item-count',
      Infinity,
    );
    assert.deepEqual(pages, [[1], [2], [3]]);
  });

  test('children.json ends early the same way', async () => {
    const product = await makeProduct(t.db, owner);
    const base = `/api/products/${product.id}`;
    const api = client(t.app, owner);
    const story = body(
      await api.post(`${base}/items.json`, { type: 'story', who: 'user', what: 'a thing', why: 'it helps' }),
    ).number as number;
    for (let i = 0; i < 6; i++)
      body(
        await api.post(`${base}/items.json`, {
          type: 'task',
          title: `Sub ${i}`,
          description: DESCRIPTION,
          parent: story,
        }),
      );
    // Pages of the default size, and of 500, whose rows that cannot fit are not even read.
    for (const limit of [undefined, 500]) {
      const pages = await followPages(
        (offset) => api.get(`${base}/items/${story}/children.json`, { offset, limit }),
        6,
        'x-sprintly-item-count',
      );
      assert.ok(pages.length > 1, `cut into pages: ${JSON.stringify(pages)}`);
      assert.deepEqual(
        pages.flat().sort((a, b) => a - b),
        [2, 3, 4, 5, 6, 7],
      );
    }
  });

  test('deploys.json ends before the deploy that does not fit; a first one too big to fit whole is cut', async () => {
    // deploys.json embeds summaries (titles, not descriptions): 60 long titles weigh more than an answer.
    const { base, api } = await bigProduct(60, '', (i) => `${i} ${'Long title. '.repeat(20)}`);
    const all = Array.from({ length: 60 }, (_, i) => i + 1);
    body(await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '1' }));
    body(await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '2' }));
    body(await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: all.join(',') }));
    body(await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '3' }));

    const pages = await followPages(
      (offset) => api.get(`${base}/deploys.json`, { offset }),
      4,
      'x-sprintly-deploy-count',
    );
    assert.equal(pages.flat().length, 4, `every deploy once: ${JSON.stringify(pages)}`);
    assert.ok(pages.length > 1, 'the big deploy is on a page of its own');

    const offset = pages.findIndex((page) => page.length === 1 && page[0] === pages.flat()[2]);
    const cut = body(await api.get(`${base}/deploys.json`, { offset: pages.slice(0, offset).flat().length }))[0];
    const shown = numbersOf(cut.items);
    assert.ok(shown.length > 0 && shown.length < 60, `some items shown: ${shown}`);
    assert.deepEqual([...shown, ...(cut.omitted_numbers as number[])], all, 'the numbers of the others follow');

    // Whole deploys carry no omitted_numbers.
    const first = body(await api.get(`${base}/deploys.json`, { limit: 1 }))[0];
    assert.equal('omitted_numbers' in first, false);
    assert.deepEqual(numbersOf(first.items), [1]);
  });

  test('the deploys pages show what fits of a big deploy, and the numbers of the rest', async () => {
    const { base, api } = await bigProduct(8);
    const deploy = body(await api.post(`${base}/deploys.json`, { environment: 'staging', numbers: '1,2,3,4,5,6,7,8' }));
    const cookie = await signInByMail(t, owner.email);
    for (const url of [`/app${base.slice(4)}/deploys`, `/app${base.slice(4)}/deploys/${deploy.id}`]) {
      const page = await t.app.inject({ method: 'GET', url, headers: { cookie } });
      assert.equal(page.statusCode, 200, page.body.slice(0, 300));
      const listed = [...page.body.matchAll(/<li><a href="[^"]*\/items\/(\d+)">#\d+ Task/g)].map((m) => Number(m[1]));
      const more = /and (\d+) more: (.*?)<\/li>/.exec(page.body);
      assert.ok(listed.length > 0 && more, `${url}: some listed, the rest named`);
      const rest = [...more[2].matchAll(/#(\d+)<\/a>/g)].map((m) => Number(m[1]));
      assert.deepEqual([...listed, ...rest], [1, 2, 3, 4, 5, 6, 7, 8], url);
      assert.equal(Number(more[1]), rest.length);
    }
  });

  test('a receipt and a dry run stay within the bound, naming the items they leave out', async () => {
    const { base, api } = await bigProduct(8);
    // A dry run, the deploy, and the deploy again under its Idempotency-Key (its items read afresh).
    for (const dryRun of [true, false, false]) {
      const res = await api.post(
        `${base}/deploys.json`,
        { environment: 'production', numbers: '8,7,6,5,4,3,2,1,99', dry_run: String(dryRun) },
        { 'idempotency-key': 'big-one' },
      );
      assert.ok(res.rawPayload.length <= BUDGET, `a receipt of ${res.rawPayload.length} bytes`);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const receipt = body(res);
      assert.equal(receipt.dry_run, dryRun);
      assert.deepEqual(receipt.unknown_numbers, [99]);
      const shown = numbersOf(receipt.items);
      assert.ok(shown.length > 0 && shown.length < 8, `some items shown: ${shown}`);
      assert.deepEqual([...shown, ...(receipt.omitted_numbers as number[])], [1, 2, 3, 4, 5, 6, 7, 8]);
      if (!dryRun) assert.equal(typeof receipt.id, 'number');
    }
    // A small deploy's receipt is whole.
    const small = body(await api.post(`${base}/deploys.json`, { environment: 'qa', numbers: '1' }));
    assert.deepEqual(numbersOf(small.items), [1]);
    assert.equal('omitted_numbers' in small, false);
  });

  test('a receipt of items with multi-byte text is cut as its repeat is, items as the deploy left them', async () => {
    // 2 bytes of UTF-8 to a character: a cut counted in characters would keep more than fit.
    const { base, api } = await bigProduct(8, 'Déjà vu à côté. '.repeat(250));
    const deploy = () =>
      api.post(
        `${base}/deploys.json`,
        { environment: 'production', numbers: '1,2,3,4,5,6,7,8' },
        { 'idempotency-key': 'multibyte' },
      );
    const first = await deploy();
    const receipt = body(first);
    assert.ok(first.rawPayload.length <= BUDGET, `a receipt of ${first.rawPayload.length} bytes`);
    const shown = numbersOf(receipt.items);
    assert.ok(shown.length > 0 && shown.length < 8, `some items shown: ${shown}`);
    assert.deepEqual([...shown, ...(receipt.omitted_numbers as number[])], [1, 2, 3, 4, 5, 6, 7, 8]);
    // The repeat reads its items afresh: the same bytes, so the first read them as they were after the deploy.
    assert.equal((await deploy()).body, first.body);
    for (const item of receipt.items as Json[]) {
      const { deployed_to: embedded, ...fields } = item;
      const { deployed_to: alone, ...now } = body(await api.get(`${base}/items/${item.number as number}.json`));
      assert.deepEqual(fields, now, `item ${item.number as number} as the deploy left it`);
      assert.deepEqual(embedded, alone);
    }
  });
});

describe('lists that are whole unless they pass the bound: products.json and people.json', () => {
  /** Follows a list by X-Sprintly-Next-Offset from 0; returns its pages' entries' ids. */
  async function followWhole(api: ReturnType<typeof client>, url: string): Promise<number[][]> {
    const pages: number[][] = [];
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const res = await api.get(url, offset ? { offset } : {});
      assert.ok(res.rawPayload.length <= BUDGET, `a page of ${res.rawPayload.length} bytes`);
      pages.push(body(res).map((entry) => entry.id as number));
      const next = res.headers['x-sprintly-next-offset'];
      if (next !== undefined) assert.equal(Number(next), offset + pages.at(-1)!.length);
      offset = next === undefined ? undefined : Number(next);
      assert.ok(pages.length <= 100, 'every page moves on');
    }
    return pages;
  }

  test('a member of many products pages through them all', async () => {
    const member = await makeUser(t.db);
    const api = client(t.app, member);
    const made: number[] = [];
    for (let i = 0; i < 60; i++)
      made.push(body(await api.post('/api/products.json', { name: `${i} ${'n'.repeat(250)}` })).id as number);
    const pages = await followWhole(api, '/api/products.json');
    assert.ok(pages.length > 1, 'ended early at least once');
    assert.deepEqual(
      pages.flat().sort((a, b) => a - b),
      made.sort((a, b) => a - b),
    );
    assert.equal((await api.get('/api/products.json', { offset: 'x' })).statusCode, 400);
  });

  test('a product of many members lists them all', async () => {
    const members = [];
    for (let i = 0; i < 40; i++)
      members.push(await makeUser(t.db, { firstName: 'F'.repeat(250), lastName: 'L'.repeat(250) }));
    const product = await makeProduct(t.db, owner, members);
    const pages = await followWhole(client(t.app, owner), `/api/products/${product.id}/people.json`);
    assert.ok(pages.length > 1, 'ended early at least once');
    assert.deepEqual(
      pages.flat().sort((a, b) => a - b),
      [owner, ...members].map((m) => m.user.id).sort((a, b) => a - b),
    );
  });
});

describe('text is bounded in bytes and free of control characters', () => {
  test('a description is limited to 65,535 bytes of UTF-8, not characters', async () => {
    const { base, api } = await bigProduct(0);
    const tooLong = await api.post(`${base}/items.json`, {
      type: 'task',
      title: 'Wide',
      description: 'é'.repeat(32_768),
    });
    assert.equal(tooLong.statusCode, 400);
    assert.match(tooLong.json().errors.description, /65535 bytes/);
    const longest = body(
      await api.post(`${base}/items.json`, { type: 'task', title: 'Wide', description: `${'é'.repeat(32_767)}a` }),
    );
    assert.equal(Buffer.byteLength(longest.description as string), 65_535);
    const update = await api.post(`${base}/items/${longest.number}.json`, { description: '€'.repeat(21_846) });
    assert.equal(update.statusCode, 400);
    assert.ok(update.json().errors.description);
  });

  test('tab, line feed and carriage return are text; U+2028 and U+2029 are kept as they are', async () => {
    const { base, api } = await bigProduct(0);
    const description = 'a\tb\nc\r\nd \u2028 \u2029 end';
    const item = body(await api.post(`${base}/items.json`, { type: 'task', title: 'Tabs', description }));
    assert.equal(item.description, description);
  });

  const CONTROLS = ['\u0001', '\u0008', '\u000b', '\u000c', '\u001b', '\u001f'];

  test('every text parameter of the API refuses C0 control characters with a 400 naming it', async () => {
    const product = await makeProduct(t.db, owner);
    const base = `/api/products/${product.id}`;
    const api = client(t.app, owner);
    const story = body(
      await api.post(`${base}/items.json`, { type: 'story', who: 'user', what: 'x', why: 'y' }),
    ).number;
    const task = body(await api.post(`${base}/items.json`, { type: 'task', title: 'Task' })).number;
    const cases: [string, string, Record<string, string>, string][] = [
      ['create item', `${base}/items.json`, { type: 'task', title: '%' }, 'title'],
      ['create item', `${base}/items.json`, { type: 'task', title: 'T', description: '%' }, 'description'],
      ['create item', `${base}/items.json`, { type: 'task', title: 'T', tags: 'ok,%' }, 'tags'],
      ['create story', `${base}/items.json`, { type: 'story', who: '%', what: 'x', why: 'y' }, 'who'],
      ['create story', `${base}/items.json`, { type: 'story', who: 'w', what: '%', why: 'y' }, 'what'],
      ['create story', `${base}/items.json`, { type: 'story', who: 'w', what: 'x', why: '%' }, 'why'],
      ['update item', `${base}/items/${task}.json`, { title: '%' }, 'title'],
      ['update item', `${base}/items/${task}.json`, { description: '%' }, 'description'],
      ['update item', `${base}/items/${task}.json`, { tags: '%' }, 'tags'],
      ['update story', `${base}/items/${story}.json`, { why: '%' }, 'why'],
      ['deploy', `${base}/deploys.json`, { environment: 'prod', numbers: `${task}`, notes: '%' }, 'notes'],
      ['deploy', `${base}/deploys.json`, { environment: 'prod', numbers: `${task}`, version: '%' }, 'version'],
      ['deploy', `${base}/deploys.json`, { environment: 'pr%od', numbers: `${task}` }, 'environment'],
      ['product', '/api/products.json', { name: 'Pro%duct' }, 'name'],
      ['invitation', `${base}/people.json`, { email: 'new@example.com', first_name: '%' }, 'first_name'],
      ['invitation', `${base}/people.json`, { email: 'new@example.com', first_name: 'A', last_name: '%' }, 'last_name'],
      ['invitation', `${base}/people.json`, { email: 'ne%w@example.com' }, 'email'],
      ['notifications', `${base}/notifications.json`, { environments: 'prod,%' }, 'environments'],
      ['webhook', `${base}/webhooks.json`, { url: 'https://example.com/%', events: 'item.created' }, 'url'],
    ];
    for (const control of CONTROLS) {
      for (const [what, url, params, field] of cases) {
        const sent = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, v.replace('%', control)]));
        const res = await api.post(url, sent);
        assert.equal(
          res.statusCode,
          400,
          `${what}, ${field} with U+${control.charCodeAt(0).toString(16)}: ${res.body}`,
        );
        assert.match(res.json().errors[field] ?? '', /control characters/, `${what}: ${res.body}`);
      }
    }
    // In JSON bodies and query strings alike.
    const json = await api.postJson(`${base}/items.json`, { type: 'task', title: 'T', description: 'a\u0007b' });
    assert.equal(json.statusCode, 400);
    assert.match(json.json().errors.description, /control characters/);
    const query = await api.get(`${base}/items.json`, { tags: 'a\u0002' });
    assert.equal(query.statusCode, 400);
    assert.ok(query.json().errors.tags);
    const items = body(
      await api.get(`${base}/items.json`, { status: 'backlog,someday,in-progress,completed,accepted', limit: 500 }),
    );
    assert.equal(items.length, 2, 'nothing was written');
  });

  test('the sign-in page refuses a control character in the address, naming the field', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      remoteAddress: '10.9.8.7',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      payload: new URLSearchParams({ email: 'ada\u0001@example.com' }).toString(),
    });
    assert.equal(res.statusCode, 400);
    assert.match(res.body, /control characters/);
  });
});
