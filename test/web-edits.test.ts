import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { client, makeApp, makeItem, makeProduct, makeUser, signInByMail, type TestContext } from './helpers.js';

/*
 * Two people editing one item on its page: the form carries the version it was opened at and the
 * values it showed, so a save changes only what the person changed, and a field somebody else
 * changed meanwhile is shown with both values instead of being overwritten. Pages are posted as a
 * browser posts them: every field of the form, as parsed from the page.
 */

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const unescapeHtml = (s: string) =>
  s.replace(
    /&(amp|lt|gt|quot|#39|#96);/g,
    (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' })[e]!,
  );

/**
 * The edit form's fields as a browser would send them, untouched: hidden and text inputs, checked
 * radios, the textarea, the selected options.
 */
function editForm(res: LightMyRequestResponse): Record<string, string> {
  // Not a story's form for new sub-items, which posts to .../items.
  const start = res.body.search(/<form class="item-form" method="post" action="[^"]*\/items\/\d+">/);
  assert.ok(start >= 0, `no edit form in ${res.body.slice(0, 300)}`);
  const form = res.body.slice(start, res.body.indexOf('</form>', start));
  const fields: Record<string, string> = {};
  for (const [input] of form.matchAll(/<input [^>]*>/g)) {
    const name = /name="([^"]+)"/.exec(input)?.[1];
    const type = /type="([^"]+)"/.exec(input)?.[1];
    if (!name || (type === 'radio' && !/ checked\b/.test(input))) continue;
    fields[name] = unescapeHtml(/value="([^"]*)"/.exec(input)?.[1] ?? '');
  }
  // The parser drops one newline right after <textarea>.
  for (const [, name, text] of form.matchAll(/<textarea [^>]*name="([^"]+)"[^>]*>\n?([\s\S]*?)<\/textarea>/g))
    fields[name] = unescapeHtml(text);
  for (const [, name, options] of form.matchAll(/<select [^>]*name="([^"]+)"[^>]*>([\s\S]*?)<\/select>/g)) {
    const chosen = /<option value="([^"]*)" selected>/.exec(options) ?? /<option value="([^"]*)"/.exec(options);
    fields[name] = unescapeHtml(chosen?.[1] ?? '');
  }
  return fields;
}

async function team() {
  const ada = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'Builder' });
  const product = await makeProduct(t.db, ada, [bob]);
  const [adaCookie, bobCookie] = [await signInByMail(t, ada.email), await signInByMail(t, bob.email)];
  const base = `/app/products/${product.id}`;
  const open = async (n: number, cookie: string) =>
    editForm(await t.app.inject({ method: 'GET', url: `${base}/items/${n}`, headers: { cookie } }));
  const save = (n: number, cookie: string, fields: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url: `${base}/items/${n}`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(fields).toString(),
    });
  const stored = async (n: number) =>
    (await client(t.app, ada).get(`/api/products/${product.id}/items/${n}.json`)).json();
  return { ada, bob, product, adaCookie, bobCookie, open, save, stored };
}

describe('two people editing one item on its page', () => {
  test('Bob changes the title, Ada (who opened the form before) only the description: both are kept', async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Old title', description: 'Old text', tags: 'ui' });
    const adas = await open(item.number, adaCookie);
    const bobs = await open(item.number, bobCookie);
    assert.ok(adas.version, 'the form carries its version');

    assert.equal((await save(item.number, bobCookie, { ...bobs, title: "Bob's title" })).statusCode, 303);
    const res = await save(item.number, adaCookie, { ...adas, description: "Ada's **text**\r\non two lines" });
    assert.equal(res.statusCode, 303, res.body);
    const json = await stored(item.number);
    assert.deepEqual(
      [json.title, json.description, json.tags],
      ["Bob's title", "Ada's **text**\non two lines", ['ui']],
    );
    // The description saved from the older version is shown rendered, as any other save's.
    const page = await t.app.inject({
      method: 'GET',
      url: `/app/products/${product.id}/items/${item.number}`,
      headers: { cookie: adaCookie },
    });
    assert.match(page.body, /Ada's <strong>text<\/strong><br>/);
  });

  test('both change the title: the second sees both, keeps theirs, and the rest of their save is made', async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Old title', description: 'Old text' });
    const adas = await open(item.number, adaCookie);
    const bobs = await open(item.number, bobCookie);
    assert.equal((await save(item.number, bobCookie, { ...bobs, title: "Bob's title", score: 'L' })).statusCode, 303);

    const clash = await save(item.number, adaCookie, { ...adas, title: "Ada's <title>", description: "Ada's text" });
    assert.equal(clash.statusCode, 409, clash.body.slice(0, 500));
    assert.match(
      clash.body,
      new RegExp(
        '<div class="conflict" id="conflict-title" role="alert">' +
          String.raw`<p>Somebody else changed the title since you opened this form\. Theirs:</p>\n` +
          '<blockquote class="theirs">Bob&#39;s title</blockquote>',
      ),
    );
    assert.match(clash.body, /aria-describedby="conflict-title"/);
    assert.doesNotMatch(clash.body, /id="conflict-description"/, 'nobody else changed the description');
    const again = editForm(clash);
    assert.equal(again.title, "Ada's <title>", "Ada's own title is kept in the field");
    assert.equal(again.keep_title, 'yours');
    let json = await stored(item.number);
    assert.deepEqual(
      [json.title, json.description, json.score],
      ["Bob's title", "Ada's text", 'L'],
      "Bob's title stays; Ada's description and Bob's score are saved",
    );

    // Ada keeps hers.
    const kept = await save(item.number, adaCookie, again);
    assert.equal(kept.statusCode, 303, kept.body.slice(0, 500));
    json = await stored(item.number);
    assert.deepEqual([json.title, json.description, json.score], ["Ada's <title>", "Ada's text", 'L']);
  });

  test('choosing to keep the other value leaves it, and the fields nobody else changed are saved', async () => {
    const { ada, bob, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Task', tags: 'a' });
    const adas = await open(item.number, adaCookie);
    const bobs = await open(item.number, bobCookie);
    assert.equal(
      (await save(item.number, bobCookie, { ...bobs, tags: 'b, c', assigned_to: String(bob.user.id) })).statusCode,
      303,
    );

    const clash = await save(item.number, adaCookie, { ...adas, tags: 'd', assigned_to: String(ada.user.id) });
    assert.equal(clash.statusCode, 409);
    assert.match(clash.body, /id="conflict-tags"[\s\S]*<blockquote class="theirs">b, c<\/blockquote>/);
    assert.match(clash.body, /id="conflict-assigned_to"[\s\S]*<blockquote class="theirs">Bob Builder<\/blockquote>/);
    const again = editForm(clash);
    assert.deepEqual([again.tags, again.assigned_to], ['d', String(ada.user.id)]);
    const res = await save(item.number, adaCookie, {
      ...again,
      keep_tags: 'theirs',
      keep_assigned_to: 'theirs',
      status: 'in-progress',
    });
    assert.equal(res.statusCode, 303, res.body.slice(0, 500));
    const json = await stored(item.number);
    assert.deepEqual([json.tags, json.assigned_to.id, json.status], [['b', 'c'], bob.user.id, 'in-progress']);
  });

  test("the same change made by both is no conflict; a story's parts merge", async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const story = await makeItem(t.app, ada, product.id, {
      type: 'story',
      who: 'user',
      what: 'a thing',
      why: 'it helps',
    });
    const adas = await open(story.number, adaCookie);
    const bobs = await open(story.number, bobCookie);
    const bobSave = await save(story.number, bobCookie, { ...bobs, what: 'two things', score: 'S' });
    assert.equal(bobSave.statusCode, 303, /class="(field-)?error"[^<]*<?[^<]*/.exec(bobSave.body)?.[0]);
    const res = await save(story.number, adaCookie, { ...adas, who: 'admin', score: 'S' });
    assert.equal(res.statusCode, 303, res.body.slice(0, 500));
    const json = await stored(story.number);
    assert.deepEqual([json.who, json.what, json.why, json.score], ['admin', 'two things', 'it helps', 'S']);
    assert.equal(json.title, 'As an admin, I want two things so that it helps.');
  });

  test("a person the product lacks is said next to the field naming them, with the API's 404", async () => {
    const { ada, product, adaCookie, open, save } = await team();
    const outsider = await makeUser(t.db, { firstName: 'Olga', lastName: 'Outside' });
    const item = await makeItem(t.app, ada, product.id, { title: 'Task' });
    const form = await open(item.number, adaCookie);
    for (const [id, reason] of [
      [String(outsider.user.id), 'names nobody (or nothing) of this product'],
      ['999999', 'unknown user'],
    ]) {
      const res = await save(item.number, adaCookie, { ...form, assigned_to: id });
      assert.equal(res.statusCode, 400, res.body.slice(0, 500));
      assert.ok(
        res.body.includes(`<span class="field-error" id="error-assigned_to" role="alert">assigned to ${reason}</span>`),
        `${id}: ${res.body.slice(0, 500)}`,
      );
      assert.match(res.body, /<select id="edit-assigned_to" name="assigned_to" aria-invalid="true"/);
    }
    const api = client(t.app, ada);
    const url = `/api/products/${product.id}/items/${item.number}.json`;
    const outside = await api.post(url, { assigned_to: outsider.user.id });
    assert.equal(outside.statusCode, 404);
    assert.equal(outside.body, '{"code":404,"message":"Parameter assigned_to names no member of this product."}');
    const unknown = await api.post(url, { assigned_to: 999999 });
    assert.equal(
      unknown.body,
      '{"code":404,"message":"Parameter assigned_to names no known user.","errors":{"assigned_to":"unknown user"}}',
    );
    assert.equal((await open(item.number, adaCookie)).assigned_to, '', 'nothing was saved');
  });

  test('a refused save keeps the version it was opened at: the next save still sees what changed', async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Old' });
    const adas = await open(item.number, adaCookie);
    const bobs = await open(item.number, bobCookie);
    assert.equal((await save(item.number, bobCookie, { ...bobs, title: "Bob's" })).statusCode, 303);
    const refused = await save(item.number, adaCookie, { ...adas, title: "Ada's", score: 'XXL' });
    assert.equal(refused.statusCode, 400);
    const again = editForm(refused);
    assert.deepEqual([again.version, again.seen_title, again.title], [adas.version, 'Old', "Ada's"]);
    const clash = await save(item.number, adaCookie, { ...again, score: 'M' });
    assert.equal(clash.statusCode, 409);
    assert.deepEqual([(await stored(item.number)).title, (await stored(item.number)).score], ["Bob's", 'M']);
  });

  test('a form without a version (opened before forms carried one) saves every field, as it always did', async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Old', description: 'Old text' });
    const adas = await open(item.number, adaCookie);
    assert.equal(
      (await save(item.number, bobCookie, { ...(await open(item.number, bobCookie)), title: "Bob's" })).statusCode,
      303,
    );
    const plain = Object.fromEntries(Object.entries(adas).filter(([k]) => k !== 'version' && !k.startsWith('seen_')));
    assert.equal((await save(item.number, adaCookie, { ...plain, description: "Ada's" })).statusCode, 303);
    assert.deepEqual([(await stored(item.number)).title, (await stored(item.number)).description], ['Old', "Ada's"]);
  });

  test('a description that starts with a line break survives a save of another field', async () => {
    const { ada, product, adaCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Spaced', description: '\nindented' });
    const adas = await open(item.number, adaCookie);
    assert.equal(adas.description, '\nindented');
    assert.equal((await save(item.number, adaCookie, { ...adas, score: 'M' })).statusCode, 303);
    assert.deepEqual([(await stored(item.number)).description, (await stored(item.number)).score], ['\nindented', 'M']);
  });

  test("an item stored before today's rules (a control character, a long description) takes changes", async () => {
    const { ada, product, adaCookie, bobCookie, open, save, stored } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Old rules', description: 'short' });
    const old = `bell\u0007 ${'\u{1F680}'.repeat(16_400)}`;
    await t.db
      .updateTable('items')
      .set({ description: old })
      .where('product_id', '=', product.id)
      .where('number', '=', item.number)
      .execute();
    const adas = await open(item.number, adaCookie);
    // Somebody else's change in between: Ada's form is of an older version, and is merged.
    assert.equal(
      (await save(item.number, bobCookie, { ...(await open(item.number, bobCookie)), score: 'L' })).statusCode,
      303,
    );
    const res = await save(item.number, adaCookie, { ...adas, title: 'New title' });
    assert.equal(res.statusCode, 303, res.body.slice(0, 500));
    const json = await stored(item.number);
    assert.deepEqual([json.title, json.score, json.description === old], ['New title', 'L', true]);
  });
});
