import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { makeApp, makeItem, makeProduct, makeUser, signInByMail, type TestContext } from './helpers.js';

/*
 * The search pages through inject: the results page (membership, facets, marks and escaping, the
 * jump to an item, refusals beside the field) and the board's query filter.
 */

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
const search = (cookie: string, params: Record<string, string>) =>
  page(`/app/search?${new URLSearchParams(params)}`, cookie);

/** The main part of a page (the header's box and navigation left out). */
const mainOf = (body: string): string => body.slice(body.indexOf('<main>'));
/** What a results page found: from its summary on (the form and its hint left out). */
const foundOf = (body: string): string => body.slice(body.indexOf('<p class="summary"'));

/** The item links of a results page: product id and number, in order. */
const resultLinks = (body: string): string[] =>
  [...mainOf(body).matchAll(/<ol class="results">([\s\S]*?)<\/ol>/g)].flatMap((m) =>
    [...m[1].matchAll(/href="\/app\/products\/(\d+)\/items\/(\d+)"/g)].map((l) => `${l[1]}#${l[2]}`),
  );

/** The board's card numbers, in every column. */
const cards = (body: string): number[] =>
  [...body.matchAll(/<li class="card" id="item-(\d+)"/g)].map((m) => Number(m[1])).sort((a, b) => a - b);

describe('the search page', () => {
  test('shows nothing of a product the caller is not a member of, facets and totals included', async () => {
    const me = await makeUser(t.db);
    const stranger = await makeUser(t.db, { firstName: 'Stranger' });
    const mine = await makeProduct(t.db, me, [], 'Mine');
    const theirs = await makeProduct(t.db, stranger, [], 'Theirs');
    await makeItem(t.app, me, mine.id, { title: 'Zephyr login page', tags: 'shared-tag' });
    for (let i = 0; i < 3; i++)
      await makeItem(t.app, stranger, theirs.id, {
        title: `Zephyr secret ${i}`,
        tags: 'secret-tag,shared-tag',
        type: 'defect',
        assigned_to: String(stranger.user.id),
      });
    const cookie = await signInByMail(t, me.email);

    const res = await search(cookie, { q: 'zephyr' });
    assert.equal(res.statusCode, 200, res.body);
    const main = foundOf(res.body);
    assert.deepEqual(resultLinks(res.body), [`${mine.id}#1`]);
    assert.match(main, /1 item matches/);
    assert.doesNotMatch(main, /secret|Theirs|defect|shared-tag<\/a> <span class="count">[2-9]/i);
    assert.doesNotMatch(main, new RegExp(stranger.email.replace(/[.+]/g, '\\$&')));
    assert.match(main, /shared-tag<\/a> <span class="count">1</);
    // A field-only query (no words) and an empty one reach no other product either.
    for (const q of ['tag:shared-tag', 'type:defect', '']) {
      const body = foundOf((await search(cookie, { q })).body);
      assert.doesNotMatch(body, /secret|Theirs|stranger/i, q);
      assert.ok(!body.includes(stranger.email), q);
    }
    // Their product named outright: refused beside the product field, nothing of it shown.
    const refused = await search(cookie, { q: 'zephyr', product: String(theirs.id) });
    assert.equal(refused.statusCode, 404);
    assert.match(refused.body, /id="search-product" name="product" aria-invalid="true"/);
    assert.match(refused.body, /The product is not one of your products/);
    assert.doesNotMatch(mainOf(refused.body), /secret|Theirs/);
    // #1 is an item of both products: the caller's alone is theirs to see, so it is where #1 goes.
    const jump = await search(cookie, { q: '#1' });
    assert.equal(jump.statusCode, 303);
    assert.equal(jump.headers.location, `/app/products/${mine.id}/items/1`);
  });

  test('escapes every title and marks the words matched, never inside markup', async () => {
    const me = await makeUser(t.db);
    const product = await makeProduct(t.db, me, [], 'Escapes & <b>marks</b>');
    await makeItem(t.app, me, product.id, { title: 'Fix <script>alert(1)</script> & "quotes" in the scripting' });
    const cookie = await signInByMail(t, me.email);
    const res = await search(cookie, { q: 'script' });
    assert.equal(res.statusCode, 200, res.body);
    const main = mainOf(res.body);
    assert.doesNotMatch(main, /<script>alert|<b>marks/);
    const marked =
      '#1 Fix &lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt; &amp; &quot;quotes&quot; ' +
      'in the <mark>scripting</mark></a>';
    assert.ok(main.includes(marked), main);
    assert.match(main, /Escapes &amp; &lt;b&gt;marks&lt;\/b&gt;/);
    // Words named by markup only are never marked inside it: "mark" and "lt" are not words of the title.
    const none = mainOf((await search(cookie, { q: 'lt quot' })).body);
    assert.doesNotMatch(none, /<mark>/);
    // The query itself is given back escaped in the field.
    const typed = await search(cookie, { q: '"><img src=x>' });
    assert.match(typed.body, /value="&quot;&gt;&lt;img src=x&gt;"/);
    assert.doesNotMatch(typed.body, /<img src=x>/);
  });

  test('a match beyond the title shows why: a line of the description and the tags, the words marked', async () => {
    const me = await makeUser(t.db);
    const product = await makeProduct(t.db, me, [], 'Why');
    const description =
      '## Notes\n\nThe **quasar** cache drops <script>alert(1)</script> & [its keys](https://example.com/keys) ' +
      `when cold. ${'Filler words follow here. '.repeat(20)}`;
    await makeItem(t.app, me, product.id, { title: 'Slow pages', description, tags: 'quasar-cache,perf' });
    await makeItem(t.app, me, product.id, { title: 'Quasar in the title', description: 'The quasar again' });
    const cookie = await signInByMail(t, me.email);
    const res = await search(cookie, { q: 'quasar' });
    assert.equal(res.statusCode, 200, res.body);
    const lines = [...foundOf(res.body).matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => m[1]);
    const why = lines.find((l) => l.includes('Slow pages'))!;
    const excerpt = /<p class="excerpt">([\s\S]*?)<\/p>/.exec(why)?.[1] ?? '';
    assert.ok(
      excerpt.startsWith(
        'Notes The <mark>quasar</mark> cache drops &lt;script&gt;alert(1)&lt;/script&gt; &amp; its keys when cold.',
      ),
      why,
    );
    assert.ok(excerpt.endsWith('\u2026'), 'cut where it was cut');
    assert.doesNotMatch(why, /<script>|example\.com|\*\*|##/);
    assert.match(why, /<span class="tags"><span><mark>quasar<\/mark>-cache<\/span><span>perf<\/span><\/span>/);
    // The title shows every word already: no excerpt, and no tags to show.
    const titled = lines.find((l) => l.includes('in the title'))!;
    assert.doesNotMatch(titled, /class="excerpt"|class="tags"/);
    // A tag: term marks the tag it names; a description the words do not reach shows nothing.
    const byTag = foundOf((await search(cookie, { q: 'tag:PERF' })).body);
    assert.match(byTag, /<span><mark>perf<\/mark><\/span>/);
    assert.doesNotMatch(byTag, /class="excerpt"/);
  });

  test('facets add their term to the query and take it out again; sorts and pages are links', async () => {
    const me = await makeUser(t.db);
    const product = await makeProduct(t.db, me, [], 'Facets');
    for (let i = 0; i < 3; i++) await makeItem(t.app, me, product.id, { title: `Gadget ${i}`, tags: 'needs review' });
    await makeItem(t.app, me, product.id, { title: 'Gadget done', status: 'completed' });
    const cookie = await signInByMail(t, me.email);
    const res = await search(cookie, { q: 'gadg', limit: '2' });
    const main = mainOf(res.body);
    assert.match(main, /4 items match; 1–2 shown/);
    // The term goes before the word still being typed, which stays a prefix.
    const backlog = new URLSearchParams({ q: 'status:backlog gadg', limit: '2' });
    assert.ok(main.includes(`href="/app/search?${backlog.toString().replaceAll('&', '&amp;')}"`), main);
    const tagged = new URLSearchParams({ q: 'tag:"needs review" gadg', limit: '2' });
    assert.ok(main.includes(`href="/app/search?${tagged.toString().replaceAll('&', '&amp;')}"`));
    assert.match(main, /rel="next"/);
    assert.match(main, /sort=number/);

    const narrowed = await search(cookie, { q: 'status:backlog gadg' });
    assert.equal(resultLinks(narrowed.body).length, 3);
    const body = mainOf(narrowed.body);
    assert.match(body, /<span class="term">status:backlog <a href="\/app\/search\?q=gadg" aria-label="Remove/);
    assert.match(body, /<a href="\/app\/search\?q=gadg" aria-current="true">backlog/);
  });

  test('a refused query comes back beside the field, 400; a bare number goes to the item', async () => {
    const me = await makeUser(t.db);
    const product = await makeProduct(t.db, me, [], 'Refusals');
    const item = await makeItem(t.app, me, product.id, { title: 'Numbered' });
    const cookie = await signInByMail(t, me.email);
    const res = await search(cookie, { q: 'login colour:red' });
    assert.equal(res.statusCode, 400);
    assert.match(res.body, /id="search-q" type="search" name="q" maxlength="500" value="login colour:red"/);
    assert.match(res.body, /aria-invalid="true" aria-describedby="error-q search-hint"/);
    assert.match(res.body, /id="error-q" role="alert">The query cannot read &quot;colour:red&quot;: unknown field/);
    assert.doesNotMatch(res.body, /<ol class="results">/);
    for (const q of ['#', 'status:nope', 'x'.repeat(501)])
      assert.equal((await search(cookie, { q })).statusCode, 400, q);
    assert.equal((await search(cookie, { q: 'a', sort: 'sideways' })).statusCode, 400);
    // The API's rule for how far a search pages, refused the same way (not cut short).
    const deep = await search(cookie, { q: 'numbered', offset: '10001' });
    assert.equal(deep.statusCode, 400);
    assert.match(deep.body, /must be at most 10000; narrow the query instead/);

    const jump = await search(cookie, { q: ` ${item.number} `, product: String(product.id) });
    assert.equal(jump.statusCode, 303);
    assert.equal(jump.headers.location, `/app/products/${product.id}/items/${item.number}`);
    // A number no item has: the results (none), not a jump.
    assert.equal((await search(cookie, { q: '#999' })).statusCode, 200);
  });

  test('every signed-in page has the search box in its header; signed out, the page asks to sign in', async () => {
    const me = await makeUser(t.db);
    const cookie = await signInByMail(t, me.email);
    const products = await page('/app/products', cookie);
    assert.match(
      products.body,
      /<header>[\s\S]*<form class="search" role="search" method="get" action="\/app\/search">/,
    );
    assert.match(products.body, /<label for="search-q" class="sr-only">Search items<\/label>/);
    const signedOut = await t.app.inject({ method: 'GET', url: '/app/search?q=x' });
    assert.equal(signedOut.statusCode, 303);
    assert.match(String(signedOut.headers.location), /^\/app\/sign-in\?next=/);
  });
});

describe("the board's query filter", () => {
  test('filters the columns by the search language, with the other filters', async () => {
    const me = await makeUser(t.db);
    const product = await makeProduct(t.db, me, [], 'Board query');
    const a = await makeItem(t.app, me, product.id, { title: 'Login button', tags: 'ui' });
    const b = await makeItem(t.app, me, product.id, { title: 'Login page', type: 'defect', status: 'in-progress' });
    await makeItem(t.app, me, product.id, { title: 'Logout', tags: 'ui' });
    const cookie = await signInByMail(t, me.email);
    const base = `/app/products/${product.id}/board`;
    const board = (q: Record<string, string>) => page(`${base}?${new URLSearchParams(q)}`, cookie);
    assert.deepEqual(cards((await board({ q: 'login' })).body), [a.number, b.number]);
    assert.deepEqual(cards((await board({ q: 'login -button' })).body), [b.number]);
    assert.deepEqual(cards((await board({ q: 'login', tags: 'ui' })).body), [a.number]);
    assert.deepEqual(cards((await board({ q: 'type:defect' })).body), [b.number]);
    assert.deepEqual(cards((await board({ q: 'nothing matches this' })).body), []);
    // Column links carry the query.
    assert.match((await board({ q: 'login' })).body, /board\?q=login&amp;status=backlog/);

    // A query that names the viewer is theirs: a kept board of one member is never another's.
    const ada = await makeUser(t.db);
    const grace = await makeUser(t.db);
    // Both members (not admins), who share kept boards.
    const shared = await makeProduct(t.db, await makeUser(t.db), [ada, grace], 'Shared board');
    const adas = await makeItem(t.app, ada, shared.id, { title: 'Ada', assigned_to: String(ada.user.id) });
    const graces = await makeItem(t.app, ada, shared.id, { title: 'Grace', assigned_to: String(grace.user.id) });
    const mine = `/app/products/${shared.id}/board?q=assignee%3Ame`;
    assert.deepEqual(cards((await page(mine, await signInByMail(t, ada.email))).body), [adas.number]);
    assert.deepEqual(cards((await page(mine, await signInByMail(t, grace.email))).body), [graces.number]);

    const refused = await board({ q: 'is:sideways' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /id="filter-q" type="search" name="q" maxlength="500" value="is:sideways"/);
    assert.match(refused.body, /id="error-q" role="alert">The query cannot read &quot;is:sideways&quot;/);
    assert.equal(cards(refused.body).length, 3, 'the board unfiltered under the refused form');
  });
});
