import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertError, client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

/*
 * An item's version over HTTP: every answer of one item carries its ETag, which moves with every
 * change to what the item shows; If-Match on update and resort refuses (412) a change to a version
 * the caller has not seen; without If-Match, changes are made as they always were.
 */

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const STRONG_TAG = /^"[\x21\x23-\x7e]+"$/;

function etagOf(res: LightMyRequestResponse): string {
  const tag = String(res.headers.etag ?? '');
  assert.match(tag, STRONG_TAG, `a strong, quoted ETag on ${res.statusCode} ${res.body.slice(0, 200)}`);
  return tag;
}

async function team() {
  const ada = await makeUser(t.db, { firstName: 'Ada' });
  const bob = await makeUser(t.db, { firstName: 'Bob' });
  const product = await makeProduct(t.db, ada, [bob]);
  const base = `/api/products/${product.id}`;
  return { ada, bob, product, base, asAda: client(t.app, ada), asBob: client(t.app, bob) };
}

const itemUrl = (base: string, n: number) => `${base}/items/${n}.json`;

describe('ETag on every answer of one item', () => {
  test('create, fetch, update, resort, archive and follow carry it; it changes with the item, only then', async () => {
    const { ada, asAda, base, product } = await team();
    const created = await asAda.post(`${base}/items.json`, { type: 'task', title: 'First' });
    assert.equal(created.statusCode, 200);
    const first = etagOf(created);
    const n = created.json().number;
    await makeItem(t.app, ada, product.id, { title: 'Second' });

    const fetched = await asAda.get(itemUrl(base, n));
    assert.equal(etagOf(fetched), first, 'a fetch names the version the creation answered with');
    // Nothing changed: the same version, as last_modified stays too (docs/INTERFACE.md §7.4).
    const same = await asAda.post(itemUrl(base, n), { title: 'First' });
    assert.equal(etagOf(same), first);

    const seen = new Set([first]);
    const moved = (res: LightMyRequestResponse, what: string) => {
      assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      const tag = etagOf(res);
      assert.ok(!seen.has(tag), `${what} gives a new ETag, not ${tag} again`);
      seen.add(tag);
      assert.equal(tag, etagOf(res), what);
      return tag;
    };
    moved(await asAda.post(itemUrl(base, n), { title: 'Renamed' }), 'a new title');
    moved(await asAda.post(itemUrl(base, n), { tags: 'ui,api' }), 'new tags');
    moved(await asAda.post(itemUrl(base, n), { status: 'in-progress' }), 'a new status');
    moved(await asAda.post(itemUrl(base, n), { status: 'backlog' }), 'back to the backlog');
    moved(await asAda.post(`${base}/items/${n}/resort.json`, { after: 2 }), 'a new place');
    const deploy = await asAda.post(`${base}/deploys.json`, {
      environment: 'staging',
      numbers: String(n),
      version: '1.0',
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
    const afterDeploy = await asAda.get(itemUrl(base, n));
    assert.equal(afterDeploy.json().deployed_to[0].environment, 'staging');
    moved(afterDeploy, 'a deploy');
    moved(await asAda.delete(itemUrl(base, n)), 'archiving');
    assert.equal(etagOf(await asAda.get(itemUrl(base, n))), [...seen].at(-1), 'a fetch names the latest version');
  });

  test('an item of another product, or none, is still a 404, If-Match or not', async () => {
    const { asAda, base } = await team();
    assertError(await asAda.post(itemUrl(base, 99), { title: 'x' }, { 'if-match': '"1-1"' }), 404);
    assertError(await asAda.post(`${base}/items/99/resort.json`, { after: 1 }, { 'if-match': '*' }), 404);
  });
});

describe('If-Match on update', () => {
  test("Bob's change, then Ada's made against the version before it: 412, and Bob's title stays", async () => {
    const { asAda, asBob, base } = await team();
    const item = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Old title', description: 'Old text' });
    const opened = etagOf(item);
    const n = item.json().number;

    const bobs = await asBob.post(itemUrl(base, n), { title: "Bob's title" }, { 'if-match': opened });
    assert.equal(bobs.statusCode, 200, bobs.body);
    const now = etagOf(bobs);
    assert.notEqual(now, opened);

    const stale = await asAda.post(
      itemUrl(base, n),
      { title: 'Old title', description: "Ada's text" },
      { 'if-match': opened },
    );
    const body = assertError(stale, 412, { message: /changed since/ });
    assert.match(body.message, new RegExp(now.replaceAll('"', '')), 'the message names the current version');
    const stored = (await asAda.get(itemUrl(base, n))).json();
    assert.deepEqual(
      [stored.title, stored.description],
      ["Bob's title", 'Old text'],
      'nothing of the refused change is stored',
    );
    assert.equal(etagOf(await asAda.get(itemUrl(base, n))), now);

    // JSON bodies, a list of tags, the current one among them.
    const listed = await asAda.postJson(
      itemUrl(base, n),
      { description: "Ada's text" },
      { 'if-match': `${opened}, ${now}` },
    );
    assert.equal(listed.statusCode, 200, listed.body);
    assert.equal(listed.json().description, "Ada's text");
    assert.equal(listed.json().title, "Bob's title");
  });

  test('If-Match: * takes any version; a weak tag never matches; a malformed header is a 400 naming it', async () => {
    const { asAda, base } = await team();
    const item = await asAda.post(`${base}/items.json`, { type: 'task', title: 'One' });
    etagOf(item);
    const n = item.json().number;
    assert.equal((await asAda.post(itemUrl(base, n), { title: 'Two' })).statusCode, 200);

    const any = await asAda.post(itemUrl(base, n), { title: 'Three' }, { 'if-match': '*' });
    assert.equal(any.statusCode, 200, any.body);
    const current = etagOf(any);
    assertError(await asAda.post(itemUrl(base, n), { title: 'Four' }, { 'if-match': `W/${current}` }), 412);
    for (const malformed of ['', ' ', current.replaceAll('"', ''), `${current} x`, '"a" "b"', ',']) {
      assertError(await asAda.post(itemUrl(base, n), { title: 'Four' }, { 'if-match': malformed }), 400, {
        errors: ['If-Match'],
        label: `If-Match: ${malformed}`,
      });
    }
    assert.equal((await asAda.get(itemUrl(base, n))).json().title, 'Three');
    // A tag of another item, at the same version number, is not this one's.
    const other = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Other' });
    const fresh = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Fresh' });
    assertError(
      await asAda.post(itemUrl(base, fresh.json().number), { title: 'x' }, { 'if-match': etagOf(other) }),
      412,
    );
    assert.equal(
      (await asAda.post(itemUrl(base, fresh.json().number), { title: 'y' }, { 'if-match': etagOf(fresh) })).statusCode,
      200,
    );
  });

  test('without If-Match a change is made whatever happened since, as Sprint.ly clients expect', async () => {
    const { asAda, asBob, base } = await team();
    const item = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Old' });
    const n = item.json().number;
    assert.equal((await asBob.post(itemUrl(base, n), { title: "Bob's" })).statusCode, 200);
    const ada = await asAda.post(itemUrl(base, n), { title: "Ada's", description: 'all of it' });
    assert.equal(ada.statusCode, 200, ada.body);
    assert.deepEqual([ada.json().title, ada.json().description], ["Ada's", 'all of it']);
  });

  test('two changes sent at once with the same If-Match: one is made, the other is a 412', async () => {
    const { asAda, asBob, base } = await team();
    const item = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Contested' });
    const opened = etagOf(item);
    const n = item.json().number;
    const answers = await Promise.all([
      asAda.post(itemUrl(base, n), { title: "Ada's" }, { 'if-match': opened }),
      asBob.post(itemUrl(base, n), { title: "Bob's" }, { 'if-match': opened }),
    ]);
    const statuses = answers.map((a) => a.statusCode).sort();
    assert.deepEqual(statuses, [200, 412], answers.map((a) => a.body).join('\n'));
    const winner = answers.find((a) => a.statusCode === 200)!;
    assert.equal((await asAda.get(itemUrl(base, n))).json().title, winner.json().title);
  });
});

describe('If-Match on resort', () => {
  test('a stale version is a 412 and the order stays; the current one, or *, moves the item', async () => {
    const { asAda, asBob, base } = await team();
    const made = [];
    for (const title of ['A', 'B', 'C']) made.push(await asAda.post(`${base}/items.json`, { type: 'task', title }));
    const [a, , c] = made.map((r) => r.json().number);
    const opened = etagOf(made[2]);
    const order = async () =>
      (await asAda.get(`${base}/items.json`, { status: 'backlog' })).json().map((i: { number: number }) => i.number);
    const before = await order();

    assert.equal((await asBob.post(itemUrl(base, c), { score: 'M' })).statusCode, 200);
    assertError(await asAda.post(`${base}/items/${c}/resort.json`, { after: a }, { 'if-match': opened }), 412);
    assert.deepEqual(await order(), before);

    const current = etagOf(await asAda.get(itemUrl(base, c)));
    const moved = await asAda.post(`${base}/items/${c}/resort.json`, { after: a }, { 'if-match': current });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.notEqual(etagOf(moved), current);
    assert.deepEqual(await order(), [c, ...before.filter((x: number) => x !== c)]);
    assert.equal(
      (await asAda.post(`${base}/items/${c}/resort.json`, { before: a }, { 'if-match': '*' })).statusCode,
      200,
    );
    // Without If-Match, as before.
    assert.equal((await asAda.post(`${base}/items/${c}/resort.json`, { after: a })).statusCode, 200);
  });

  test('every item whose sort a renumbering moved gets a new ETag', async () => {
    const { asAda, base } = await team();
    const numbers: number[] = [];
    for (let i = 0; i < 4; i++)
      numbers.push((await asAda.post(`${base}/items.json`, { type: 'task', title: `Item ${i}` })).json().number);
    const state = async () =>
      new Map<number, { sort: number; tag: string }>(
        await Promise.all(
          numbers.map(async (n) => {
            const res = await asAda.get(itemUrl(base, n));
            return [n, { sort: res.json().sort, tag: etagOf(res) }] as const;
          }),
        ),
      );
    let was = await state();
    let renumbered = false;
    // Each move lands directly below the first item, halving the gap there until it is used up.
    for (let i = 0; i < 40 && !renumbered; i++) {
      const mover = numbers[1 + (i % 3)];
      assert.equal((await asAda.post(`${base}/items/${mover}/resort.json`, { before: numbers[0] })).statusCode, 200);
      const now = await state();
      const movedSorts = numbers.filter((n) => now.get(n)!.sort !== was.get(n)!.sort);
      for (const n of movedSorts)
        assert.notEqual(now.get(n)!.tag, was.get(n)!.tag, `#${n}'s sort moved, so must its ETag`);
      renumbered = movedSorts.length > 1;
      was = now;
    }
    assert.ok(renumbered, 'the gap was used up and the status renumbered');
  });
});

describe('the version moves with deploys, rollbacks and follows', () => {
  test('a deploy and its rollback each change deployed_to, and the ETag', async () => {
    const { asAda, asBob, base } = await team();
    const item = await asAda.post(`${base}/items.json`, { type: 'task', title: 'Shipped' });
    const n = item.json().number;
    const tags = [etagOf(item)];
    for (const params of [
      { environment: 'production', numbers: String(n), version: '1.0' },
      { environment: 'production', numbers: String(n), version: '1.1' },
      { environment: 'production', rollback: 'true', version: '1.0' },
    ]) {
      const res = await asAda.post(`${base}/deploys.json`, params);
      assert.equal(res.statusCode, 200, res.body);
      tags.push(etagOf(await asAda.get(itemUrl(base, n))));
    }
    const followed = await asBob.post(`${base}/items/${n}/follow.json`);
    tags.push(etagOf(followed));
    assert.equal(new Set(tags).size, tags.length, `every change a new ETag: ${tags.join(' ')}`);
    assertError(await asAda.post(itemUrl(base, n), { title: 'x' }, { 'if-match': tags[0] }), 412);
  });
});
