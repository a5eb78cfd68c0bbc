import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ValidationError } from '../src/errors.js';
import {
  fieldTerm,
  EXCERPT_READS,
  KeptWindows,
  matchedExcerpt,
  matchedSpans,
  matchedTag,
  MergeSearchIndex,
  namesCaller,
  parseSearchQuery,
  withoutTerm,
  withTerm,
  writtenTerms,
} from '../src/search/index.js';
import { pgBase } from './storage.js';
import {
  assertError,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
  type TestUser,
} from './helpers.js';

// Searching items: the query language (pure), then the endpoint on SQLite, or PostgreSQL with
// TEST_DATABASE_URL: membership, ranking, the fallback, and the index kept with every write.

describe('the query language', () => {
  test('words must all match, the last one as a prefix while typing; phrases and exclusions', () => {
    const q = parseSearchQuery('Login  FAILS "on Safari" -mobile -"dark mode" deplo');
    assert.deepEqual(q.text, [['login'], ['fails'], ['on', 'safari'], ['deplo']]);
    assert.deepEqual(q.excluded, [['mobile'], ['dark', 'mode']]);
    assert.equal(q.prefix, true);
    assert.equal(parseSearchQuery('deplo ').prefix, false, 'a space after the last word ends it');
    assert.equal(parseSearchQuery('"deplo"').prefix, false, 'a phrase is exact');
    assert.equal(parseSearchQuery('a de').prefix, false, 'one or two letters match as a whole word');
    assert.equal(parseSearchQuery('dep').prefix, true);
    assert.equal(parseSearchQuery('deploy -x').prefix, false, 'the last term is an exclusion');
    assert.deepEqual(parseSearchQuery('e-mail, café!').text, [['e', 'mail'], ['café']]);
    assert.deepEqual(parseSearchQuery('"unclosed phrase').text, [['unclosed', 'phrase']]);
    assert.deepEqual(parseSearchQuery('&& -- ""').text, [], 'punctuation alone is no word');
  });

  test('every field term, negated or not', () => {
    const q = parseSearchQuery(
      'tag:ui -tag:"old stuff" type:Defect status:in-progress assignee:me author:ann@x.io assignee:bob ' +
        'product:12 is:open is:closed is:blocked -is:favorite has:comments deployed:prod not-deployed:"eu 1" #123 -#7',
    );
    assert.deepEqual(q.text, []);
    assert.deepEqual(
      q.terms.map((t) => [t.negated, t.condition]),
      [
        [false, { kind: 'tag', tag: 'ui' }],
        [true, { kind: 'tag', tag: 'old stuff' }],
        [false, { kind: 'type', type: 'defect' }],
        [false, { kind: 'status', status: 'in-progress' }],
        [false, { kind: 'assignee', person: { me: true } }],
        [false, { kind: 'author', person: { email: 'ann@x.io' } }],
        [false, { kind: 'assignee', person: { local: 'bob' } }],
        [false, { kind: 'product', id: 12 }],
        [false, { kind: 'open' }],
        [false, { kind: 'closed' }],
        [false, { kind: 'blocked' }],
        [true, { kind: 'favorite' }],
        [false, { kind: 'comments' }],
        [false, { kind: 'deployed', environment: 'prod' }],
        [false, { kind: 'not-deployed', environment: 'eu 1' }],
        [false, { kind: 'number', number: 123 }],
        [true, { kind: 'number', number: 7 }],
      ],
    );
  });

  test('a term it cannot read is a 400 naming it', () => {
    for (const [q, named] of [
      ['fix colour:red', 'colour:red'],
      ['type:epic', 'type:epic'],
      ['status:done', 'status:done'],
      ['is:lovely', 'is:lovely'],
      ['has:attachments', 'has:attachments'],
      ['#12a', '#12a'],
      ['product:abc', 'product:abc'],
      ['tag:', 'tag:'],
      ['assignee:', 'assignee:'],
      ['deployed:""', 'deployed:""'],
      ['http://example.com', 'http://example.com'],
    ]) {
      assert.throws(
        () => parseSearchQuery(q),
        (err: unknown) => err instanceof ValidationError && err.errors!.q.includes(`"${named}"`),
        q,
      );
    }
    assert.throws(() => parseSearchQuery('x'.repeat(501)), ValidationError);
    assert.throws(() => parseSearchQuery(Array(33).fill('w').join(' ')), ValidationError);
    assert.doesNotThrow(() => parseSearchQuery('"http://example.com"'), 'quoted, it is text');
  });
});

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const search = async (user: TestUser, query: Record<string, string | number | boolean>) => {
  const res = await client(t.app, user).get('/api/items/search.json', query);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { items: any[]; total_count: number; facets?: any; fuzzy: boolean };
};
const titles = (answer: { items: { title: string }[] }) => answer.items.map((i) => i.title);

/** Two products: Ann's (with Bob), and Eve's, which neither Ann nor Bob is in; each word appears in both. */
async function world() {
  const ann = await makeUser(t.db, { firstName: 'Ann', lastName: 'A' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'B' });
  const eve = await makeUser(t.db, { firstName: 'Eve', lastName: 'E' });
  const mine = await makeProduct(t.db, ann, [bob], 'Mine');
  const theirs = await makeProduct(t.db, eve, [], 'Theirs');
  return { ann, bob, eve, mine, theirs };
}

describe('the query language written back, for the pages', () => {
  test('terms taken out as written, added before a word still being typed, quoted when they must be', () => {
    const q = 'login -tag:"old stuff" status:backlog #12 "a phrase"';
    assert.deepEqual(
      writtenTerms(q).map((t) => t.raw),
      ['-tag:"old stuff"', 'status:backlog', '#12'],
    );
    const [old, status] = writtenTerms(q);
    assert.equal(withoutTerm(q, old), 'login status:backlog #12 "a phrase"');
    assert.equal(withoutTerm(q, status), 'login -tag:"old stuff" #12 "a phrase"');
    assert.equal(withTerm('deplo', 'status:backlog'), 'status:backlog deplo', 'the prefix stays last');
    assert.equal(parseSearchQuery(withTerm('deplo', 'status:backlog')).prefix, true);
    assert.equal(withTerm('deploy ', 'tag:ui'), 'deploy tag:ui', 'a finished word is not a prefix');
    assert.equal(withTerm('', 'tag:ui'), 'tag:ui');
    assert.equal(withTerm('colour:red', 'tag:ui'), 'colour:red tag:ui', 'an unreadable query is added to');
    assert.equal(fieldTerm('tag', 'ui'), 'tag:ui');
    assert.equal(fieldTerm('tag', 'needs review'), 'tag:"needs review"');
    assert.deepEqual(parseSearchQuery(fieldTerm('tag', 'needs review')!).terms, [
      { negated: false, condition: { kind: 'tag', tag: 'needs review' } },
    ]);
    assert.equal(fieldTerm('tag', 'say "hi"'), undefined, 'no term can hold a double quote');
    assert.equal(fieldTerm('tag', ''), undefined);
  });

  test('the words a query matches in a title: whole words, the last as a prefix, never excluded ones', () => {
    const marked = (text: string, q: string) =>
      matchedSpans(text, parseSearchQuery(q)).map(([a, b]) => text.slice(a, b));
    assert.deepEqual(marked('Deploy the DEPLOYMENT <script>', 'deploy'), ['Deploy', 'DEPLOYMENT']);
    assert.deepEqual(marked('Deploy the DEPLOYMENT', 'deploy '), ['Deploy'], 'a finished word is whole');
    assert.deepEqual(marked('<script>alert</script>', 'script'), ['script', 'script']);
    assert.deepEqual(marked('Café au lait', '"café au" -lait'), ['Café', 'au']);
    assert.deepEqual(marked('Do it', 'do'), ['Do'], 'two letters match as a whole word only');
    assert.deepEqual(marked('Dome', 'do'), []);
    assert.deepEqual(marked('Anything', 'status:backlog'), [], 'no words, nothing marked');
  });

  test('an excerpt around the first word matched, cut at spaces with …, the words marked as in a title', () => {
    const excerpt = (text: string, q: string, markdown = false) =>
      matchedExcerpt(text, parseSearchQuery(q), { markdown })
        ?.map((p) => (p.marked ? `[${p.text}]` : p.text))
        .join('');
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');
    const long = `${filler(30)} The deployment pipeline fails when the cache is cold. ${filler(30)}`;
    const cut = excerpt(long, 'deploy')!;
    assert.match(cut, /^…word\d+ .* The \[deployment\] pipeline fails .* word\d+…$/, cut);
    assert.ok(cut.length <= 162, `about 160 characters: ${cut.length}`);
    assert.equal(excerpt(long, 'deplo'), cut, 'the last word as a prefix while typing');
    assert.equal(excerpt(long, 'deplo '), undefined, 'a finished word is whole');
    assert.match(excerpt(long, '"cache is" -cold')!, / the \[cache\] \[is\] cold\. /, 'phrases; never excluded words');
    assert.match(excerpt(long, 'pipeline -fails')!, /\[pipeline\] fails/);
    assert.equal(excerpt(long, 'nothing here'), undefined, 'nothing matches');
    assert.equal(excerpt(long, 'status:backlog'), undefined, 'no words');
    assert.equal(
      excerpt('Short and   to\n\nthe point', 'point'),
      'Short and to the [point]',
      'uncut, spaces collapsed',
    );
    assert.match(excerpt(`${filler(40)} the end`, 'end')!, /^…word\d+ .* the \[end\]$/, 'the end is not cut');
    const markdown =
      '## Login fails\n\n* **Steps**: open [the `login` page](https://example.com/login "x") ![a shot](s.png)\n' +
      '> quoted _twice_ in snake_case\n\n```sh\ncurl -v\n```\n| a | b |\n[ref]: https://example.com/ref';
    assert.equal(
      excerpt(markdown, 'login', true),
      '[Login] fails Steps: open the [login] page a shot quoted twice in snake_case curl -v a b',
      'Markdown read as its text: no marks, no link targets',
    );
    assert.equal(excerpt(markdown, 'example', true), undefined, 'link targets are not text');
    assert.equal(excerpt('Fix <script>alert(1)</script> now', 'script', true), 'Fix <[script]>alert(1)</[script]> now');
    const huge = `${'x '.repeat(EXCERPT_READS / 2 - 10)}early ${'y '.repeat(30_000)}late`;
    assert.match(excerpt(huge, 'early')!, /\[early\] y y .*…$/, 'read up to EXCERPT_READS characters');
    assert.equal(excerpt(huge, 'late'), undefined, 'and no further: a long description costs no more');
    const pair = `${'a '.repeat(EXCERPT_READS / 2 - 3)}word \u{1F600} tail`;
    assert.equal(pair.charCodeAt(EXCERPT_READS - 1), 0xd83d, 'the pair is cut where reading stops');
    assert.match(excerpt(pair, 'word')!, /a \[word\]…$/, 'never half a surrogate pair');
  });

  test('the tags a query matched: the words, or the whole tag a tag: term names', () => {
    const tag = (text: string, q: string) =>
      matchedTag(text, parseSearchQuery(q))
        .map((p) => (p.marked ? `[${p.text}]` : p.text))
        .join('');
    assert.equal(tag('needs-review', 'review'), 'needs-[review]');
    assert.equal(tag('UI', 'tag:ui'), '[UI]', 'the case of A-Z ignored, as tag: finds it');
    assert.equal(tag('ui', '-tag:ui'), 'ui');
    assert.equal(tag('backend', 'tag:ui login'), 'backend');
  });

  test('a query names its caller with me or is:favorite', () => {
    assert.equal(namesCaller(parseSearchQuery('assignee:me')), true);
    assert.equal(namesCaller(parseSearchQuery('-author:me login')), true);
    assert.equal(namesCaller(parseSearchQuery('is:favorite')), true);
    assert.equal(namesCaller(parseSearchQuery('assignee:ann is:open me')), false);
  });
});

describe('searching items', () => {
  test('nothing of a product the caller is not in: items, totals, facets, products=, product:', async () => {
    const { ann, eve, mine, theirs } = await world();
    await makeItem(t.app, ann, mine.id, { title: 'Zebra crossing sign', tags: 'zebra,road', assigned_to: ann.user.id });
    for (let i = 0; i < 3; i++)
      await makeItem(t.app, eve, theirs.id, { title: `Zebra secret ${i}`, tags: 'zebra,secret', type: 'defect' });
    const found = await search(ann, { q: 'zebra', facets: true });
    assert.deepEqual(titles(found), ['Zebra crossing sign']);
    assert.equal(found.total_count, 1);
    assert.deepEqual(found.facets, {
      status: { backlog: 1 },
      type: { task: 1 },
      tag: { road: 1, zebra: 1 },
      assignee: { [ann.email]: 1 },
    });
    const fieldOnly = await search(ann, { q: 'tag:zebra', facets: true });
    assert.equal(fieldOnly.total_count, 1);
    assert.deepEqual(fieldOnly.facets.tag, { road: 1, zebra: 1 });
    assert.equal(
      (await search(ann, { q: '' })).items.every((i) => i.product.id === mine.id),
      true,
    );
    assert.equal((await search(ann, { q: `zebra product:${theirs.id}` })).total_count, 0);
    assert.equal((await search(ann, { q: 'secrte' })).items.length, 0, 'nor through the fallback');
    assertError(await client(t.app, ann).get('/api/items/search.json', { products: `${theirs.id}` }), 404);
    assert.equal((await search(eve, { q: 'zebra' })).total_count, 3);
    assertError(await client(t.app, { auth: 'Basic eDp5' }).get('/api/items/search.json'), 403);
  });

  test('ranked: a word in the title before tags, the description, then comments', async () => {
    const { ann, mine } = await world();
    const base = `/api/products/${mine.id}`;
    const inComment = await makeItem(t.app, ann, mine.id, { title: 'Quarterly report' });
    await client(t.app, ann).post(`${base}/items/${inComment.number}/comments.json`, { body: 'the walrus said so' });
    await makeItem(t.app, ann, mine.id, { title: 'Fix the printer', description: 'A walrus sat on it.' });
    await makeItem(t.app, ann, mine.id, { title: 'Tidy up', tags: 'walrus' });
    await makeItem(t.app, ann, mine.id, { title: 'Walrus feeding times' });
    const found = await search(ann, { q: 'walrus', products: `${mine.id}` });
    assert.deepEqual(titles(found), ['Walrus feeding times', 'Tidy up', 'Fix the printer', 'Quarterly report']);
    assert.equal(found.total_count, 4);
    const reversed = await search(ann, { q: 'walrus', order: 'asc', products: `${mine.id}` });
    assert.deepEqual(titles(reversed), ['Quarterly report', 'Fix the printer', 'Tidy up', 'Walrus feeding times']);
    const byNumber = await search(ann, { q: 'walrus', sort: 'number', order: 'asc', products: `${mine.id}` });
    assert.deepEqual(
      byNumber.items.map((i) => i.number),
      [...byNumber.items.map((i) => i.number)].sort((a, b) => a - b),
    );
    const page = await client(t.app, ann).get('/api/items/search.json', { q: 'walrus', limit: 3 });
    assert.equal(page.json().items.length, 3);
    assert.equal(page.headers['x-sprintly-next-offset'], '3');
  });

  test('words in any order, prefixes as people type, phrases, exclusions', async () => {
    const { ann, mine } = await world();
    await makeItem(t.app, ann, mine.id, { title: 'Login fails on Safari', description: 'Since the upgrade.' });
    await makeItem(t.app, ann, mine.id, { title: 'Safari shows the login page twice' });
    await makeItem(t.app, ann, mine.id, { title: 'Logout button misplaced' });
    // What matches the text itself; the typo-tolerant fallback's titles are marked and left out.
    const q = async (text: string) => {
      const found = await search(ann, { q: text, sort: 'number', order: 'asc' });
      return found.fuzzy ? [] : titles(found).sort();
    };
    assert.deepEqual(await q('safari login'), ['Login fails on Safari', 'Safari shows the login page twice']);
    assert.deepEqual(await q('upgrade safari'), ['Login fails on Safari'], 'title and description together');
    assert.deepEqual(await q('log'), [
      'Login fails on Safari',
      'Logout button misplaced',
      'Safari shows the login page twice',
    ]);
    const finished = await search(ann, { q: 'log ' });
    assert.equal(finished.fuzzy, true, 'a finished word matches whole words only; then titles close to it');
    assert.deepEqual(await q('"login fails"'), ['Login fails on Safari']);
    assert.deepEqual(await q('"fails login"'), []);
    assert.deepEqual(await q('login -twice'), ['Login fails on Safari']);
    assert.deepEqual(await q('-safari'), ['Logout button misplaced'], 'exclusions alone');
    assert.deepEqual(await q('safari -"page twice"'), ['Login fails on Safari']);
  });

  test('field terms over the items: type, status, tags, people, is:, has:, deployed:, #number', async () => {
    const { ann, bob, mine } = await world();
    const base = `/api/products/${mine.id}`;
    const a = await makeItem(t.app, ann, mine.id, { title: 'Alpha', tags: 'ui,urgent', assigned_to: bob.user.id });
    const b = await makeItem(t.app, bob, mine.id, { title: 'Beta', type: 'defect', status: 'in-progress' });
    const c = await makeItem(t.app, ann, mine.id, { title: 'Gamma', status: 'completed', tags: 'ui' });
    await client(t.app, bob).post(`${base}/items/${a.number}/favorites.json`);
    await client(t.app, ann).post(`${base}/items/${b.number}/comments.json`, { body: 'hello' });
    await client(t.app, ann).post(`${base}/items/${c.number}/blocking.json`, { blocked: a.number });
    const deploy = await client(t.app, ann).post(`${base}/deploys.json`, {
      environment: 'production',
      numbers: `${b.number}`,
      version: 'v1',
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
    const q = async (text: string, who = ann) =>
      titles(await search(who, { q: text, products: `${mine.id}`, sort: 'number', order: 'asc' }));
    assert.deepEqual(await q('type:defect'), ['Beta']);
    assert.deepEqual(await q('type:defect type:task'), ['Alpha', 'Beta', 'Gamma'], 'repeated: either');
    assert.deepEqual(await q('-type:defect'), ['Alpha', 'Gamma']);
    assert.deepEqual(await q('status:in-progress status:completed'), ['Beta', 'Gamma']);
    assert.deepEqual(await q('tag:ui'), ['Alpha', 'Gamma']);
    assert.deepEqual(await q('tag:ui tag:urgent'), ['Alpha'], 'tags: all of them');
    assert.deepEqual(await q('tag:ui -tag:urgent'), ['Gamma']);
    assert.deepEqual(await q('tag:UI'), ['Alpha', 'Gamma'], 'the case of A-Z ignored, as items.json ignores it');
    assert.deepEqual(await q('alpha tag:Urgent'), ['Alpha']);
    assert.deepEqual(await q('-tag:URGENT'), ['Beta', 'Gamma']);
    assert.deepEqual(await q('assignee:me', bob), ['Alpha']);
    assert.deepEqual(await q(`assignee:${bob.email.toUpperCase()}`), ['Alpha']);
    assert.deepEqual(await q(`assignee:${bob.email.split('@')[0]}`), ['Alpha']);
    assert.deepEqual(await q('-assignee:me', bob), ['Beta', 'Gamma'], 'unassigned items are not assigned to me');
    assert.deepEqual(await q('assignee:nobody'), []);
    assert.deepEqual(await q('author:me', bob), ['Beta']);
    assert.deepEqual(await q('is:open'), ['Alpha', 'Beta']);
    assert.deepEqual(await q('is:closed'), ['Gamma']);
    assert.deepEqual(await q('is:blocked'), ['Alpha']);
    assert.deepEqual(await q('is:favorite', bob), ['Alpha']);
    assert.deepEqual(await q('is:favorite'), [], "favorites are the caller's own");
    assert.deepEqual(await q('has:comments'), ['Beta']);
    assert.deepEqual(await q('deployed:production'), ['Beta']);
    assert.deepEqual(await q('not-deployed:production'), ['Alpha', 'Gamma']);
    assert.deepEqual(await q(`#${c.number}`), ['Gamma']);
    assert.deepEqual(await q(`#${c.number} #${a.number}`), ['Alpha', 'Gamma']);
    assert.deepEqual(await q(`-#${c.number} is:open gamma`), []);
    assert.deepEqual(await q(`product:${mine.id} alp`), ['Alpha']);
  });

  test('a search right after a change finds it: titles, descriptions, tags, comments, stories', async () => {
    const { ann, mine } = await world();
    const api = client(t.app, ann);
    const at = `/api/products/${mine.id}/items`;
    const item = await makeItem(t.app, ann, mine.id, { title: 'Old heading' });
    const q = async (text: string) => {
      const found = await search(ann, { q: text, products: `${mine.id}` });
      return found.fuzzy ? 0 : found.total_count;
    };
    assert.equal((await api.post(`${at}/${item.number}.json`, { title: 'Porcupine heading' })).statusCode, 200);
    assert.equal(await q('porcupine'), 1);
    assert.equal(await q('old heading'), 0, 'the old title is gone from the index');
    await api.post(`${at}/${item.number}.json`, { description: 'Needs a hedgehog' });
    assert.equal(await q('hedgehog'), 1);
    await api.post(`${at}/${item.number}.json`, { tags: 'platypus' });
    assert.equal(await q('platypus'), 1);
    await api.post(`${at}/${item.number}.json`, { tags: '' });
    assert.equal(await q('platypus'), 0);
    const comment = (await api.post(`${at}/${item.number}/comments.json`, { body: 'An armadillo appeared' })).json();
    assert.equal(await q('armadillo'), 1);
    assert.equal((await api.delete(`${at}/${item.number}/comments/${comment.id}.json`)).statusCode, 200);
    assert.equal(await q('armadillo'), 0);
    await makeItem(t.app, ann, mine.id, { type: 'story', who: 'beekeeper', what: 'honey', why: 'sweetness' });
    assert.equal(await q('beekeeper honey sweetness'), 1);
    await api.delete(`${at}/${item.number}.json`);
    assert.equal(await q('porcupine'), 0, 'archived items are not found');
  });

  test('a kept answer is the one a fresh search gives, and never outlives a change or a membership', async () => {
    const { bob, mine } = await world();
    const api = client(t.app, bob);
    const at = `/api/products/${mine.id}/items`;
    const item = await makeItem(t.app, bob, mine.id, { title: 'Walrus heading', tags: 'tusk' });
    const query = { q: 'walrus', facets: true };
    const first = await api.get('/api/items/search.json', query);
    const kept = await api.get('/api/items/search.json', query);
    const fresh = await t.app.inject({
      method: 'GET',
      url: '/api/items/search.json?q=walrus&facets=true',
      headers: { authorization: bob.auth, 'cache-control': 'no-cache' },
    });
    for (const res of [kept, fresh]) {
      assert.equal(res.body, first.body);
      assert.equal(res.headers['x-sprintly-item-count'], '1');
      assert.equal(res.headers.etag, first.headers.etag);
    }
    const notModified = await t.app.inject({
      method: 'GET',
      url: '/api/items/search.json?q=walrus&facets=true',
      headers: { authorization: bob.auth, 'if-none-match': String(first.headers.etag) },
    });
    assert.equal(notModified.statusCode, 304);
    await api.post(`${at}/${item.number}.json`, { title: 'Walrus heading renamed', status: 'in-progress' });
    const changed = (await api.get('/api/items/search.json', query)).json();
    assert.deepEqual(titles(changed), ['Walrus heading renamed']);
    assert.deepEqual(changed.facets.status, { 'in-progress': 1 });
    await t.db.deleteFrom('memberships').where('user_id', '=', bob.user.id).execute();
    const gone = (await api.get('/api/items/search.json', query)).json();
    assert.deepEqual([gone.items, gone.total_count, gone.facets.tag], [[], 0, {}]);
  });

  test('nothing matches: titles close to the words (typos), marked fuzzy', async () => {
    const { ann, mine } = await world();
    await makeItem(t.app, ann, mine.id, { title: 'Deployment pipeline broken' });
    await makeItem(t.app, ann, mine.id, { title: 'Unrelated chores' });
    const found = await search(ann, { q: 'deploymnet', products: `${mine.id}` });
    assert.equal(found.fuzzy, true);
    assert.deepEqual(titles(found), ['Deployment pipeline broken']);
    assert.equal(found.total_count, 1);
    const exact = await search(ann, { q: 'pipeline', products: `${mine.id}` });
    assert.equal(exact.fuzzy, false);
    assert.deepEqual(titles(await search(ann, { q: 'xqzwv', products: `${mine.id}` })), []);
  });

  test('bad parameters are 400s naming them', async () => {
    const { ann } = await world();
    const api = client(t.app, ann);
    const bad = assertError(await api.get('/api/items/search.json', { q: 'bug colour:red' }), 400);
    assert.match(bad.message, /colour:red/);
    assert.deepEqual(Object.keys(bad.errors!), ['q']);
    const many = assertError(await api.get('/api/items/search.json', { sort: 'size', order: 'up', limit: 0 }), 400);
    assert.deepEqual(Object.keys(many.errors!).sort(), ['limit', 'order', 'sort']);
    assertError(await api.get('/api/items/search.json', { offset: 10_001 }), 400);
    assertError(await api.get('/api/items/search.json', { products: 'x' }), 400);
  });
});

describe('the background merge of the index', () => {
  test('merges the segments the writers left (SQLite; none on PostgreSQL); searches find everything', async () => {
    const { ann, mine } = await world();
    for (let i = 0; i < 12; i++) await makeItem(t.app, ann, mine.id, { title: `Narwhal sighting ${i}` });
    const merge = new MergeSearchIndex(t.db, t.app.log);
    const steps = await merge.mergeNow();
    if (pgBase) assert.equal(steps, 0);
    else assert.ok(steps > 0, 'twelve transactions left segments to merge');
    assert.equal(await merge.mergeNow(), 0, 'and then none');
    await merge.stop();
    assert.equal((await search(ann, { q: 'narwhal', products: `${mine.id}` })).total_count, 12);
  });
});

describe('the windows of matches kept', () => {
  const window = (ids: number[]) => ({ ids, fuzzy: false });

  test('one per query: a window of earlier revisions goes when the query is read at later ones', async () => {
    const kept = new KeptWindows();
    let reads = 0;
    const read = (ids: number[]) => async () => {
      reads += 1;
      return window(ids);
    };
    assert.deepEqual((await kept.getOrMake('["login"]', '[1]', read([1]))).ids, [1]);
    assert.deepEqual((await kept.getOrMake('["login"]', '[1]', read([9]))).ids, [1], 'kept at the same revisions');
    for (let revision = 2; revision <= 50; revision++)
      await kept.getOrMake('["login"]', `[${revision}]`, read([revision]));
    assert.equal(reads, 50);
    assert.equal(kept.size, 1, 'forty-nine writes leave one window, not fifty');
    assert.deepEqual((await kept.getOrMake('["login"]', '[50]', read([0]))).ids, [50]);
    await kept.getOrMake('["billing"]', '[50]', read([7]));
    assert.equal(kept.size, 2);
  });

  test('searches at the same revisions share one read; at other revisions they read their own', async () => {
    const kept = new KeptWindows();
    const reads: string[] = [];
    const read = (revisions: string) => async () => {
      reads.push(revisions);
      await new Promise((resolve) => setImmediate(resolve));
      return window([Number(revisions[1])]);
    };
    const answers = await Promise.all([
      kept.getOrMake('q', '[1]', read('[1]')),
      kept.getOrMake('q', '[1]', read('[1]')),
      kept.getOrMake('q', '[2]', read('[2]')),
    ]);
    assert.deepEqual(reads, ['[1]', '[2]']);
    assert.deepEqual(
      answers.map((a) => a.ids),
      [[1], [1], [2]],
    );
  });
});
