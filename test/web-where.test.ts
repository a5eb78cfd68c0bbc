import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MATRIX_PAGE } from '../src/web/product-pages.js';
import {
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

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
const unescapeHtml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
const text = (s: string) =>
  unescapeHtml(s.replace(/<[^>]*>/g, ''))
    .replace(/\s+/g, ' ')
    .trim();

/** A member with a product, signed in to the pages, and a second member. */
async function setUp() {
  const owner = await makeUser(t.db, { firstName: 'Olive', lastName: 'Owner' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'Builder' });
  const product = await makeProduct(t.db, owner, [bob], 'Where product');
  const cookie = await signInByMail(t, owner.email);
  return { owner, bob, product, cookie, base: `/app/products/${product.id}`, api: `/api/products/${product.id}` };
}

/** Records a deploy (or rollback) through the API; its id. */
async function deploy(user: TestUser, api: string, params: Record<string, string>): Promise<number> {
  const res = await client(t.app, user).post(`${api}/deploys.json`, params);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().id;
}

/** The section of a page between a heading's id and the next heading of its level. */
function section(body: string, id: string): string {
  const start = body.indexOf(`<h2 id="${id}">`);
  assert.ok(start >= 0, `no section ${id}`);
  const end = body.indexOf('<h2', start + 1);
  return body.slice(start, end < 0 ? undefined : end);
}

/** The timeline's entries, as text, top to bottom. */
const timeline = (html: string) =>
  [...html.matchAll(/<li( class="reverted")?>(.*?)<\/li>/gs)].map((m) => ({
    reverted: !!m[1],
    text: text(m[2]),
    html: m[2],
  }));

/** The history table's rows: [when, environment, version, by, note] as text, and the row's markup. */
const historyRows = (html: string) =>
  [...html.matchAll(/<tr( class="rollback")?><th scope="row">(.*?)<\/tr>/gs)].map((m) => {
    const cells = [...`<th>${m[2]}`.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/gs)].map((c) => text(c[1]));
    return { rollback: !!m[1], cells, html: m[2] };
  });

/** The matrix as the page shows it: its columns and, per row (item number), each column's cell text ('' when never). */
function matrix(body: string): { columns: string[]; rows: { number: number; cells: Record<string, string> }[] } {
  const start = body.indexOf('<table class="matrix">');
  assert.ok(start >= 0, `no matrix in ${body.slice(0, 2000)}`);
  const table = body.slice(start, body.indexOf('</table>', start));
  const head = table.slice(table.indexOf('<thead>'), table.indexOf('</thead>'));
  const columns = [...head.matchAll(/<th scope="col">(.*?)<\/th>/gs)].map((m) => unescapeHtml(m[1])).slice(1);
  const rows = [...table.matchAll(/<tr id="row-(\d+)">(.*?)<\/tr>/gs)].map((m) => {
    const cells = [...m[2].matchAll(/<td( class="[^"]*")?>(.*?)<\/td>/gs)].map((c) =>
      c[1] === ' class="never"' ? '' : text(c[2]),
    );
    assert.equal(cells.length, columns.length);
    return { number: Number(m[1]), cells: Object.fromEntries(columns.map((c, i) => [c, cells[i]])) };
  });
  return { columns, rows };
}

async function apiNumbers(user: TestUser, api: string, query: Record<string, string | number>): Promise<number[]> {
  const res = await client(t.app, user).get(`${api}/items.json`, query);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().map((i: { number: number }) => i.number);
}

describe("an item's environments and deploy history", () => {
  test('the timeline: each environment with version, when and who; rollbacks mark what they took out', async () => {
    const { owner, bob, cookie, base, api, product } = await setUp();
    const a = await makeItem(t.app, owner, product.id, { title: 'Alpha' });
    const b = await makeItem(t.app, owner, product.id, { title: 'Beta' });
    const idle = await makeItem(t.app, owner, product.id, { title: 'Idle' });
    const d1 = await deploy(owner, api, { environment: 'staging', numbers: `${a.number}`, version: '1.0' });
    const d2 = await deploy(bob, api, { environment: 'production', numbers: `${a.number}`, version: '1.0' });
    const d3 = await deploy(owner, api, {
      environment: 'production',
      numbers: `${a.number},${b.number}`,
      version: '1.1',
    });
    // Production runs 1.0 again: a goes back to d2, b (which 1.0 did not have) leaves production.
    const d4 = await deploy(bob, api, { environment: 'production', version: '1.0', rollback: 'true' });

    const pageA = await page(`${base}/items/${a.number}`, cookie);
    assert.equal(pageA.statusCode, 200, pageA.body);
    const envA = timeline(section(pageA.body, 'deployed'));
    assert.deepEqual(
      envA.map((e) => [e.reverted, e.text.replace(/^\S+ \S+ UTC /, '')]),
      [
        [false, 'production 1.0 deployed by Bob Builder'],
        [false, 'staging 1.0 deployed by Olive Owner'],
      ],
    );
    assert.match(envA[0].html, new RegExp(`href="${base}/deploys/${d2}"`));
    const historyA = historyRows(section(pageA.body, 'history'));
    assert.deepEqual(
      historyA.map((r) => r.cells.slice(1, 4)),
      [
        ['staging', '1.0', 'Olive Owner'],
        ['production', '1.0', 'Bob Builder'],
        ['production', '1.1', 'Olive Owner'],
        ['production', '1.0', 'Bob Builder'],
      ],
    );
    assert.deepEqual(
      historyA.map((r) => r.rollback),
      [false, false, false, true],
    );
    assert.match(historyA[2].cells[4], /^Rolled back \S+ \S+ UTC \(rollback\)$/);
    assert.match(historyA[2].html, new RegExp(`href="${base}/deploys/${d4}">rollback`));
    assert.equal(historyA[3].cells[4], 'Rollback: the item back to 1.0');
    assert.deepEqual(
      historyA.map((r) => Number(/deploys\/(\d+)/.exec(r.html)![1])),
      [d1, d2, d3, d4],
    );

    const pageB = await page(`${base}/items/${b.number}`, cookie);
    const envB = timeline(section(pageB.body, 'deployed'));
    assert.equal(envB.length, 1);
    assert.ok(envB[0].reverted);
    assert.match(
      envB[0].text,
      new RegExp(
        String.raw`production 1\.1 deployed by Olive Owner Rolled back \S+ \S+ UTC by Bob Builder ` +
          String.raw`\(the rollback\): not in production now\.`,
      ),
    );
    assert.match(envB[0].html, new RegExp(`href="${base}/deploys/${d4}">the rollback`));
    // As the API says it.
    const entry = (await client(t.app, owner).get(`${api}/items/${b.number}.json`)).json().deployed_to[0];
    assert.deepEqual(
      [entry.environment, entry.version, entry.reverted, entry.reverted_by],
      ['production', '1.1', true, d4],
    );
    assert.match(envB[0].html, new RegExp(`<time datetime="${entry.reverted_at.replace('+', '\\+')}">`));
    const historyB = historyRows(section(pageB.body, 'history'));
    assert.deepEqual(
      historyB.map((r) => [r.cells[1], r.cells[2], r.cells[4].replace(/ \S+ \S+ UTC/, '')]),
      [
        ['production', '1.1', 'Rolled back (rollback)'],
        ['production', '1.0', 'Rollback: took the item out'],
      ],
    );

    const none = await page(`${base}/items/${idle.number}`, cookie);
    assert.match(section(none.body, 'deployed'), /Not deployed yet\./);
    assert.doesNotMatch(none.body, /id="history"/);
  });

  test('past 100 environments and deploys the page shows the latest, with links to pages of all of them', async () => {
    const { owner, cookie, base, api, product } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Everywhere' });
    for (let i = 0; i < 101; i++)
      await deploy(owner, api, { environment: `env-${i}`, numbers: `${item.number}`, version: `v${i}` });

    const res = await page(`${base}/items/${item.number}`, cookie);
    const envs = timeline(section(res.body, 'deployed'));
    assert.equal(envs.length, 100);
    assert.match(envs[0].text, /env-100 v100/);
    assert.match(envs[99].text, /env-1 v1/);
    assert.match(res.body, /Deployed to <span class="count">101<\/span>/);
    const history = historyRows(section(res.body, 'history'));
    assert.deepEqual(
      history.map((r) => r.cells[2]),
      Array.from({ length: 100 }, (_, i) => `v${i + 1}`),
    );

    const moreEnvs = /href="([^"]+\/environments\?offset=100)">Earlier environments/.exec(res.body);
    assert.ok(moreEnvs, 'no link to the earlier environments');
    const rest = await page(moreEnvs[1], cookie);
    assert.equal(rest.statusCode, 200, rest.body);
    assert.deepEqual(
      timeline(rest.body).map((e) => e.text.replace(/^\S+ \S+ UTC /, '')),
      ['env-0 v0 deployed by Olive Owner'],
    );

    const all = /href="([^"]+\/deploys)">All 101 deploys/.exec(res.body);
    assert.ok(all, 'no link to all deploys');
    const first = await page(all[1], cookie);
    assert.deepEqual(
      historyRows(first.body).map((r) => r.cells[2]),
      Array.from({ length: 100 }, (_, i) => `v${i}`),
    );
    const later = /href="([^"]+\/deploys\?offset=100)">Later/.exec(first.body);
    assert.ok(later, 'no link to later deploys');
    assert.deepEqual(
      historyRows((await page(later[1], cookie)).body).map((r) => r.cells[2]),
      ['v100'],
    );

    for (const url of [
      `${base}/items/${item.number}/deploys?offset=x`,
      `${base}/items/${item.number}/environments?offset=-1`,
    ]) {
      const bad = await page(url, cookie);
      assert.equal(bad.statusCode, 400, url);
      assert.match(bad.body, /offset/);
    }
    assert.equal((await page(`${base}/items/999999/deploys`, cookie)).statusCode, 404);
  });

  test("a deploy's page; another product's deploy or no deploy is a 404 page", async () => {
    const { owner, cookie, base, api, product } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Shown <b>bold</b>' });
    const id = await deploy(owner, api, {
      environment: 'prod <i>x</i>',
      numbers: `${item.number}`,
      version: '2.0',
      notes: 'Notes *here*',
    });
    const res = await page(`${base}/deploys/${id}`, cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<span class="version">2\.0<\/span>/);
    assert.match(res.body, /prod &lt;i&gt;x&lt;\/i&gt;/);
    assert.match(res.body, /<em>here<\/em>/);
    assert.match(
      res.body,
      new RegExp(`href="${base}/items/${item.number}">#${item.number} Shown &lt;b&gt;bold&lt;/b&gt;`),
    );

    const other = await setUp();
    const theirs = await makeItem(t.app, other.owner, other.product.id);
    const theirDeploy = await deploy(other.owner, other.api, {
      environment: 'production',
      numbers: `${theirs.number}`,
    });
    for (const url of [
      `${base}/deploys/${theirDeploy}`,
      `${base}/deploys/99999999999999999999`,
      `${base}/deploys/abc`,
    ]) {
      const missing = await page(url, cookie);
      assert.equal(missing.statusCode, 404, url);
      assert.match(missing.headers['content-type'] as string, /text\/html/);
    }
  });
});

describe('the matrix of what is deployed where', () => {
  test('one row per item, newest first; a column per environment; cells link the latest version', async () => {
    const { owner, cookie, base, api, product } = await setUp();
    const a = await makeItem(t.app, owner, product.id, { title: 'Alpha' });
    const b = await makeItem(t.app, owner, product.id, { title: 'Beta', status: 'completed' });
    const c = await makeItem(t.app, owner, product.id, { title: 'Gamma <script>' });
    await deploy(owner, api, { environment: 'staging', numbers: `${a.number},${b.number}`, version: '1.0' });
    await deploy(owner, api, { environment: 'production', numbers: `${a.number}`, version: '1.0' });
    await deploy(owner, api, { environment: 'staging', numbers: `${a.number}`, version: '1.1' });
    const d4 = await deploy(owner, api, { environment: 'production', numbers: `${b.number}`, version: '1.2' });
    await deploy(owner, api, { environment: 'production', version: '1.0', rollback: 'true' });

    const res = await page(`${base}/deploys/matrix`, cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-security-policy'] as string, /script-src 'self';/);
    // Inline: the form script's element is the only one, a file of Shiplog's own.
    assert.doesNotMatch(res.body.replace('<script src="/app/forms.js" defer></script>', ''), /<script|style=/);
    const m = matrix(res.body);
    assert.deepEqual(m.columns, ['production', 'staging']);
    assert.deepEqual(m.rows, [
      { number: c.number, cells: { production: '', staging: '' } },
      { number: b.number, cells: { production: '1.2 rolled back', staging: '1.0' } },
      { number: a.number, cells: { production: '1.0', staging: '1.1' } },
    ]);
    assert.match(res.body, /<th scope="row"><a href="[^"]+">#3 Gamma &lt;script&gt;<\/a>/);
    assert.match(
      res.body,
      new RegExp(
        `<td class="reverted"><a href="${base}/deploys/${d4}">1.2</a> ` +
          '<span class="reverted-note">rolled back</span></td>',
      ),
    );
    // The deploys page and the matrix are two tabs of one page.
    assert.match(res.body, new RegExp(`<a href="${base}/deploys/matrix" aria-current="page">What is where</a>`));
    assert.match(
      (await page(`${base}/deploys`, cookie)).body,
      new RegExp(`<a href="${base}/deploys/matrix">What is where</a>`),
    );

    const completed = matrix((await page(`${base}/deploys/matrix?status=completed`, cookie)).body);
    assert.deepEqual(
      completed.rows.map((r) => r.number),
      [b.number],
    );
  });

  test('"done but not in production" lists exactly what the API lists, for any environment chosen', async () => {
    const { owner, cookie, base, api, product } = await setUp();
    const made: Record<string, number> = {};
    for (const [title, status] of [
      ['open', 'backlog'],
      ['doing', 'in-progress'],
      ['done', 'completed'],
      ['accepted', 'accepted'],
      ['shipped', 'completed'],
      ['shipped-accepted', 'accepted'],
      ['staged', 'completed'],
      ['pulled', 'accepted'],
      ['open-shipped', 'backlog'],
    ])
      made[title] = (await makeItem(t.app, owner, product.id, { title, status })).number;
    await deploy(owner, api, {
      environment: 'production',
      numbers: [made.shipped, made['shipped-accepted'], made['open-shipped']].join(','),
      version: '1',
    });
    await deploy(owner, api, { environment: 'staging', numbers: [made.staged, made.done].join(','), version: '2' });
    await deploy(owner, api, { environment: 'production', numbers: `${made.pulled}`, version: '3' });
    // pulled leaves production again: it counts as not there.
    await deploy(owner, api, { environment: 'production', version: '1', rollback: 'true' });

    const home = await page(`${base}/deploys/matrix`, cookie);
    const link = /href="([^"]+)">Done but not in production</.exec(home.body);
    assert.ok(link, 'no "done but not in production" link');
    const done = await page(unescapeHtml(link[1]), cookie);
    assert.equal(done.statusCode, 200, done.body);
    const expected = await apiNumbers(owner, api, {
      status: 'completed,accepted',
      not_deployed_to: 'production',
      order_by: 'newest',
      limit: 500,
    });
    assert.deepEqual(expected, [made.pulled, made.staged, made.accepted, made.done]);
    const shown = matrix(done.body);
    assert.deepEqual(
      shown.rows.map((r) => r.number),
      expected,
    );
    assert.ok(shown.columns.includes('production'));
    assert.equal(shown.rows.find((r) => r.number === made.pulled)!.cells.production, '3 rolled back');
    // The form shows the filters as chosen.
    assert.match(done.body, /<option value="completed,accepted" selected>/);
    assert.match(done.body, /name="not_deployed_to" list="matrix-environments" value="production"/);

    const notStaged = matrix(
      (await page(`${base}/deploys/matrix?status=completed,accepted&not_deployed_to=staging`, cookie)).body,
    );
    assert.deepEqual(
      notStaged.rows.map((r) => r.number),
      await apiNumbers(owner, api, {
        status: 'completed,accepted',
        not_deployed_to: 'staging',
        order_by: 'newest',
        limit: 500,
      }),
    );
    // An environment never deployed to: every done item, and a column for it, empty.
    const nowhere = matrix(
      (await page(`${base}/deploys/matrix?status=completed,accepted&not_deployed_to=eu-west`, cookie)).body,
    );
    assert.equal(nowhere.rows.length, 6);
    assert.ok(nowhere.rows.every((r) => r.cells['eu-west'] === ''));
  });

  test(`pages of ${MATRIX_PAGE} items, newest first, filters kept in the links`, async () => {
    const { owner, cookie, base, api, product } = await setUp();
    for (let i = 0; i < MATRIX_PAGE + 5; i++)
      await makeItem(t.app, owner, product.id, { title: `Item ${i}`, status: i % 5 === 0 ? 'backlog' : 'completed' });
    await deploy(owner, api, { environment: 'production', numbers: '2,3', version: '1' });

    const first = await page(`${base}/deploys/matrix`, cookie);
    const one = matrix(first.body);
    assert.deepEqual(
      one.rows.map((r) => r.number),
      Array.from({ length: MATRIX_PAGE }, (_, i) => MATRIX_PAGE + 5 - i),
    );
    assert.match(first.body, new RegExp(`Items 1–${MATRIX_PAGE} of ${MATRIX_PAGE + 5}`));
    const older = /href="([^"]+)">Older items/.exec(first.body);
    assert.ok(older);
    const second = await page(unescapeHtml(older[1]), cookie);
    assert.deepEqual(
      matrix(second.body).rows.map((r) => r.number),
      [5, 4, 3, 2, 1],
    );
    assert.match(second.body, /href="[^"]+\/deploys\/matrix">Newer items/);
    assert.doesNotMatch(second.body, /Older items/);

    const filtered = await page(`${base}/deploys/matrix?status=completed&not_deployed_to=production`, cookie);
    const expected = await apiNumbers(owner, api, {
      status: 'completed',
      not_deployed_to: 'production',
      order_by: 'newest',
      limit: 500,
    });
    assert.equal(expected.length, 42);
    assert.deepEqual(
      matrix(filtered.body).rows.map((r) => r.number),
      expected.slice(0, 42),
    );
    const next = await page(`${base}/deploys/matrix?status=completed&not_deployed_to=production&offset=40`, cookie);
    assert.deepEqual(
      matrix(next.body).rows.map((r) => r.number),
      expected.slice(40),
    );
    assert.match(
      next.body,
      /href="[^"]+\/deploys\/matrix\?status=completed&amp;not_deployed_to=production">Newer items/,
    );
  });

  test('refused filters: a 400 page with the reason next to the field, the values kept', async () => {
    const { cookie, base } = await setUp();
    const bad = await page(`${base}/deploys/matrix?status=done&not_deployed_to=${'e'.repeat(256)}`, cookie);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.headers['content-type'] as string, /text\/html/);
    assert.match(
      bad.body,
      new RegExp(
        '<span class="field-error" id="error-status" role="alert">' +
          'status &quot;done&quot; is not one of someday, backlog, in-progress, completed, accepted</span>',
      ),
    );
    assert.match(
      bad.body,
      /id="error-not_deployed_to" role="alert">not deployed to each environment must be at most 255 characters</,
    );
    assert.match(bad.body, /<option value="done" selected>done<\/option>/);
    assert.match(bad.body, /aria-invalid="true" aria-describedby="error-status"/);
    assert.doesNotMatch(bad.body, /<table/);

    const offset = await page(`${base}/deploys/matrix?offset=abc`, cookie);
    assert.equal(offset.statusCode, 400);
    assert.match(offset.body, /<p class="error">The offset must be a whole number\.<\/p>/);
    const deep = await page(`${base}/deploys/matrix?offset=100001`, cookie);
    assert.equal(deep.statusCode, 400);
    assert.match(deep.body, /The offset must be at most 100000/);
  });

  test('environment names are text; a product with no deploys says so', async () => {
    const { owner, cookie, base, api, product } = await setUp();
    assert.match(
      (await page(`${base}/deploys/matrix`, cookie)).body,
      /Nothing of this product has been deployed yet\./,
    );
    const item = await makeItem(t.app, owner, product.id);
    await deploy(owner, api, {
      environment: '<img src=x onerror=alert(1)>',
      numbers: `${item.number}`,
      version: '"1"',
    });
    const res = await page(`${base}/deploys/matrix`, cookie);
    assert.doesNotMatch(res.body, /<img/);
    assert.deepEqual(matrix(res.body).columns, ['<img src=x onerror=alert(1)>']);
    assert.deepEqual(matrix(res.body).rows[0].cells, { '<img src=x onerror=alert(1)>': '"1"' });
  });

  test('someone who is not a member gets a 403 page on each of these pages', async () => {
    const { owner, base, api, product } = await setUp();
    const item = await makeItem(t.app, owner, product.id, { title: 'Secret' });
    const id = await deploy(owner, api, { environment: 'production', numbers: `${item.number}`, version: 'secret-1' });
    const outsider = await makeUser(t.db);
    const cookie = await signInByMail(t, outsider.email);
    for (const url of [
      `${base}/deploys/matrix`,
      `${base}/deploys/matrix?status=done`,
      `${base}/deploys/${id}`,
      `${base}/items/${item.number}/environments`,
      `${base}/items/${item.number}/deploys`,
    ]) {
      const res = await page(url, cookie);
      assert.equal(res.statusCode, 403, url);
      assert.doesNotMatch(res.body, /[Ss]ecret|production/, url);
    }
  });
});
