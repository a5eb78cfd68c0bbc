import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import MarkdownIt from 'markdown-it';
import { fillRenderedMarkdown } from '../src/app.js';
import { deliveredMail, deployTeam, makeApp, makeItem, signInByMail, type TestContext } from './helpers.js';

// Descriptions and deploy notes are rendered when they are written and kept beside their source;
// pages and mail show what was kept. On SQLite, or PostgreSQL with TEST_DATABASE_URL.

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

/**
 * markdown-it as the service is documented to use it: raw HTML shown as text, links made of
 * addresses, line breaks kept.
 */
const reference = new MarkdownIt({ html: false, linkify: true, breaks: true });

const HOSTILE_MARKUP = [
  '# Release *notes*',
  '',
  '<script>alert(1)</script> <img src=x onerror=alert(2)> <a href="javascript:alert(3)">a</a>',
  '[click](javascript:alert(4)) ![img](data:text/html;base64,PHNjcmlwdD4=) [ok](https://example.com/x)',
  'see https://example.com/y',
  '',
  '- one',
  '- **two**',
].join('\n');

/**
 * No markup that runs or loads anything: only the elements Markdown makes, no event handler, no
 * script or data address.
 */
function assertSafe(html: string, label: string): void {
  for (const [tag, name, attributes] of html.matchAll(/<\/?([a-z0-9]+)([^>]*)>/gi)) {
    assert.ok(
      ['div', 'h1', 'h3', 'p', 'em', 'strong', 'a', 'ul', 'li', 'br', 'img', 'code', 'pre'].includes(
        name.toLowerCase(),
      ),
      `${label}: ${tag}`,
    );
    assert.doesNotMatch(attributes, /\bon\w+\s*=|javascript:|data:text/i, `${label}: ${tag}`);
  }
}

const storedDescription = async (productId: number, number: number) =>
  await t.db
    .selectFrom('items')
    .select(['description', 'description_html'])
    .where('product_id', '=', productId)
    .where('number', '=', number)
    .executeTakeFirstOrThrow();
const storedNotes = async (id: number) =>
  await t.db.selectFrom('deploys').select(['notes', 'notes_html']).where('id', '=', id).executeTakeFirstOrThrow();

const page = async (url: string, cookie: string) => {
  const res = await t.app.inject({ method: 'GET', url, headers: { cookie } });
  assert.equal(res.statusCode, 200, res.body.slice(0, 300));
  return res.body;
};

describe('rendered when written', () => {
  test('a description and deploy notes are kept rendered, safe; the API answers the source as before', async () => {
    const { api, base, deployer, product } = await deployTeam(t);
    const item = await makeItem(t.app, deployer, product.id, { description: HOSTILE_MARKUP });
    assert.equal(item.description, HOSTILE_MARKUP);
    assert.ok(!('description_html' in item));
    const kept = await storedDescription(product.id, item.number);
    assert.equal(kept.description_html, reference.render(HOSTILE_MARKUP));
    assertSafe(kept.description_html!, 'description');
    assert.match(kept.description_html!, /<h1>Release <em>notes<\/em><\/h1>/);
    assert.match(kept.description_html!, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);

    const deploy = await api.post(`${base}/deploys.json`, {
      environment: 'production',
      numbers: String(item.number),
      notes: HOSTILE_MARKUP,
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
    assert.equal(deploy.json().notes, HOSTILE_MARKUP);
    assert.ok(!('notes_html' in deploy.json()));
    const notes = await storedNotes(deploy.json().id);
    assert.equal(notes.notes_html, reference.render(HOSTILE_MARKUP));
    assertSafe(notes.notes_html!, 'notes');
    const listed = (await api.get(`${base}/deploys.json`)).json();
    assert.equal(listed[0].notes, HOSTILE_MARKUP);
    assert.ok(!('notes_html' in listed[0]));

    // An update renders the new description; one that leaves it alone keeps the HTML it had.
    const updated = await api.post(`${base}/items/${item.number}.json`, { description: 'Now _this_' });
    assert.equal(updated.statusCode, 200, updated.body);
    assert.equal((await storedDescription(product.id, item.number)).description_html, '<p>Now <em>this</em></p>\n');
    await api.post(`${base}/items/${item.number}.json`, { title: 'Renamed' });
    assert.equal((await storedDescription(product.id, item.number)).description_html, '<p>Now <em>this</em></p>\n');
    const emptied = await api.post(`${base}/items/${item.number}.json`, { description: '' });
    assert.equal(emptied.statusCode, 200);
    assert.equal((await storedDescription(product.id, item.number)).description_html, '');
  });

  test('the item form renders its description when saved, as the API does', async () => {
    const { deployer, product } = await deployTeam(t);
    const cookie = await signInByMail(t, deployer.email);
    const board = await page(`/app/products/${product.id}/board`, cookie);
    const csrf = /name="csrf" value="([^"]+)"/.exec(board)![1];
    const res = await t.app.inject({
      method: 'POST',
      url: `/app/products/${product.id}/items`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        csrf,
        type: 'task',
        title: 'From the form',
        description: 'Line *one*\r\nline <two>',
      }).toString(),
    });
    assert.equal(res.statusCode, 303, res.body.slice(0, 300));
    const kept = await storedDescription(product.id, 1);
    assert.equal(kept.description, 'Line *one*\nline <two>');
    assert.equal(kept.description_html, '<p>Line <em>one</em><br>\nline &lt;two&gt;</p>\n');
  });

  test('pages and mail show what was kept, and render nothing themselves', async () => {
    const { api, base, deployer, alice, product } = await deployTeam(t);
    const item = await makeItem(t.app, deployer, product.id, {
      description: 'Plain *description*',
      assigned_to: alice.user.id,
    });
    const deploy = (
      await api.post(`${base}/deploys.json`, {
        environment: 'production',
        numbers: String(item.number),
        notes: 'Plain *notes*',
      })
    ).json();
    // What is kept is what is shown: a page that rendered the source would show <em> instead.
    await t.db
      .updateTable('items')
      .set({ description_html: '<p>KEPT description</p>\n' })
      .where('product_id', '=', product.id)
      .execute();
    await t.db.updateTable('deploys').set({ notes_html: '<p>KEPT notes</p>\n' }).where('id', '=', deploy.id).execute();

    const cookie = await signInByMail(t, deployer.email);
    const itemPage = await page(`/app/products/${product.id}/items/${item.number}`, cookie);
    assert.match(itemPage, /<div class="markdown"><p>KEPT description<\/p>/);
    assert.doesNotMatch(itemPage, /<em>description<\/em>/);
    for (const url of [`/app/products/${product.id}/deploys`, `/app/products/${product.id}/deploys/${deploy.id}`]) {
      const body = await page(url, cookie);
      assert.match(body, /<div class="markdown"><p>KEPT notes<\/p>/, url);
      assert.doesNotMatch(body, /<em>notes<\/em>/, url);
    }
    const mail = (await deliveredMail(t)).find(
      (m) => (m.headers.get('to') ?? '').includes(alice.email) && (m.headers.get('subject') ?? '').includes('Deployed'),
    );
    assert.ok(mail, 'no deploy mail');
    assert.match(mail.html, /<p>KEPT notes<\/p>/);
    assert.match(mail.text, /Plain \*notes\*/);
  });
});

describe('no lock while rendering', () => {
  test('a write waiting for its render holds no transaction: another write goes through meanwhile', async () => {
    const held = await makeApp();
    try {
      const { api, base, deployer, product } = await deployTeam(held);
      await makeItem(held.app, deployer, product.id);
      const renderer = held.app.markdown;
      const render = renderer.render.bind(renderer);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let rendering = 0;
      renderer.render = async (source: string) => {
        if (source.startsWith('Slow')) {
          rendering += 1;
          await gate;
        }
        return render(source);
      };
      const slowItem = api.post(`${base}/items.json`, {
        type: 'task',
        title: 'Slow one',
        description: 'Slow *description*',
      });
      const slowDeploy = api.post(`${base}/deploys.json`, {
        environment: 'production',
        numbers: '1',
        notes: 'Slow *notes*',
      });
      // Only if the other writes never finish (a render inside a transaction would hold them): let the renders go.
      let gaveUp = false;
      const giveUp = setTimeout(() => {
        gaveUp = true;
        release();
      }, 5_000);
      const other = await api.post(`${base}/items.json`, { type: 'task', title: 'Meanwhile', description: 'Quick' });
      const otherDeploy = await api.post(`${base}/deploys.json`, {
        environment: 'staging',
        numbers: '1',
        notes: 'Quick',
      });
      const finishedFirst = !gaveUp && rendering === 2;
      clearTimeout(giveUp);
      release();
      assert.equal(other.statusCode, 200);
      assert.equal(otherDeploy.statusCode, 200);
      assert.ok(finishedFirst, 'the other writes waited for the renders');
      assert.equal((await slowItem).statusCode, 200);
      assert.equal((await slowDeploy).statusCode, 200);
      const kept = await held.db
        .selectFrom('items')
        .select('description_html')
        .where('product_id', '=', product.id)
        .where('title', '=', 'Slow one')
        .executeTakeFirstOrThrow();
      assert.equal(kept.description_html, '<p>Slow <em>description</em></p>\n');
    } finally {
      await held.close();
    }
  });
});

describe('bounds', () => {
  test('a render past its deadline is kept as escaped text in paragraphs, as is text past the size bound', async () => {
    const quick = await makeApp({ markdown: { deadlineMs: 1, maxChars: 60_000 } });
    try {
      const { api, base, deployer, product } = await deployTeam(quick);
      // About 150 ms of markdown-it's time on a quiet machine: far past a deadline of 1 ms.
      const slow = `<b>x</b>\n\n${'![*'.repeat(19_990)}`;
      assert.ok(slow.length <= 60_000);
      const item = await makeItem(quick.app, deployer, product.id, { description: slow });
      const kept = await quick.db
        .selectFrom('items')
        .select('description_html')
        .where('product_id', '=', product.id)
        .where('number', '=', item.number)
        .executeTakeFirstOrThrow();
      assert.equal(kept.description_html, `<p>&lt;b&gt;x&lt;/b&gt;</p>\n<p>${'![*'.repeat(19_990)}</p>\n`);
      assert.ok(quick.app.markdown.fallbacks >= 1);

      const long = `*a*\n<i>b</i>${'y'.repeat(60_000)}`;
      const deploy = (
        await api.post(`${base}/deploys.json`, { environment: 'production', numbers: String(item.number), notes: long })
      ).json();
      const notes = await quick.db
        .selectFrom('deploys')
        .select('notes_html')
        .where('id', '=', deploy.id)
        .executeTakeFirstOrThrow();
      assert.equal(notes.notes_html, `<p>*a*<br>\n&lt;i&gt;b&lt;/i&gt;${'y'.repeat(60_000)}</p>\n`);

      // The renderer works on after a stopped render: a short text within the bounds is Markdown again.
      const fine = await makeApp({ markdown: { deadlineMs: 10_000 } });
      try {
        assert.equal(await fine.app.markdown.render('*ok*'), '<p><em>ok</em></p>\n');
      } finally {
        await fine.close();
      }
    } finally {
      await quick.close();
    }
  });

  test('a burst of writes past the renders that may wait keeps no HTML for the rest; the fill renders it', async () => {
    // Every text to the worker, short ones too.
    const busy = await makeApp({ markdown: { maxWaiting: 1, inlineChars: 0 } });
    try {
      const { api, base, product } = await deployTeam(busy);
      const made = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          api.post(`${base}/items.json`, { type: 'task', title: `Burst ${i}`, description: `*burst ${i}*` }),
        ),
      );
      assert.deepEqual(
        made.map((r) => r.statusCode),
        Array(8).fill(200),
      );
      const rows = () =>
        busy.db
          .selectFrom('items')
          .select(['title', 'description_html'])
          .where('product_id', '=', product.id)
          .orderBy('number')
          .execute();
      const deferred = (await rows()).filter((r) => r.description_html === null);
      assert.ok(deferred.length >= 1 && busy.app.markdown.deferred === deferred.length, `deferred: ${deferred.length}`);
      // Nothing is kept as escaped text for good: the fill renders each one as Markdown.
      assert.equal(await fillRenderedMarkdown(busy.app), deferred.length);
      assert.deepEqual(
        (await rows()).map((r) => r.description_html).sort(),
        Array.from({ length: 8 }, (_, i) => `<p><em>burst ${i}</em></p>\n`).sort(),
      );
    } finally {
      await busy.close();
    }
  });

  test('short texts are rendered at once, without waiting for the worker; longer ones go to it', async () => {
    // No render may wait for the worker: whatever would, is deferred.
    const none = await makeApp({ markdown: { maxWaiting: 0 } });
    try {
      const renderer = none.app.markdown;
      assert.equal(await renderer.render('*short*'), '<p><em>short</em></p>\n');
      assert.equal(await renderer.render(`${'a'.repeat(1020)} *b*`), `<p>${'a'.repeat(1020)} <em>b</em></p>\n`);
      assert.equal(renderer.deferred, 0);
      assert.equal(await renderer.render(`${'a'.repeat(1030)} *b*`), null);
      assert.equal(renderer.deferred, 1);
      // Safe as in the worker: raw HTML and script links stay text.
      assert.equal(
        await renderer.render('<b>x</b> [y](javascript:alert(1))'),
        '<p>&lt;b&gt;x&lt;/b&gt; [y](javascript:alert(1))</p>\n',
      );
    } finally {
      await none.close();
    }
  });

  test('HTML many times longer than its text is not kept: the text is, escaped', async () => {
    const small = await makeApp({ markdown: { maxHtmlChars: 2_000 } });
    try {
      // Nested quotes: about 30 bytes of HTML for each `>` of the text.
      const nested = `${'>'.repeat(90)} deep`;
      assert.equal(await small.app.markdown.render(nested), `<p>${'&gt;'.repeat(90)} deep</p>\n`);
      assert.equal(
        await small.app.markdown.render('> *one* level'),
        '<blockquote>\n<p><em>one</em> level</p>\n</blockquote>\n',
      );
    } finally {
      await small.close();
    }
  });

  test('after a render ran out of time, the next one gets a new worker and is Markdown', async () => {
    const app = await makeApp({ markdown: { deadlineMs: 2_000 } });
    try {
      // Pushed past its deadline by hand: the same path as a render that ran out of time.
      const renderer = app.app.markdown;
      (renderer.options as { deadlineMs: number }).deadlineMs = 1;
      assert.equal(await renderer.render(`${'![*'.repeat(19_990)}`), `<p>${'![*'.repeat(19_990)}</p>\n`);
      (renderer.options as { deadlineMs: number }).deadlineMs = 10_000;
      assert.equal(await renderer.render('**bold**'), '<p><strong>bold</strong></p>\n');
    } finally {
      await app.close();
    }
  });
});

describe('rows from before', () => {
  test('are shown as escaped text, safely, until the fill renders and keeps them', async () => {
    const { api, base, deployer, alice, product } = await deployTeam(t);
    const item = await makeItem(t.app, deployer, product.id, {
      description: HOSTILE_MARKUP,
      assigned_to: alice.user.id,
    });
    const deploy = (
      await api.post(`${base}/deploys.json`, {
        environment: 'production',
        numbers: String(item.number),
        notes: HOSTILE_MARKUP,
      })
    ).json();
    // As the migration leaves rows written before it.
    await t.db.updateTable('items').set({ description_html: null }).where('product_id', '=', product.id).execute();
    await t.db.updateTable('deploys').set({ notes_html: null }).where('id', '=', deploy.id).execute();

    const cookie = await signInByMail(t, deployer.email);
    const escaped = new RegExp(
      String.raw`<div class="markdown"><p># Release \*notes\*</p>\n` +
        String.raw`<p>&lt;script&gt;alert\(1\)&lt;/script&gt; &lt;img src=x onerror=alert\(2\)&gt;`,
    );
    const itemPage = await page(`/app/products/${product.id}/items/${item.number}`, cookie);
    assert.match(itemPage, escaped);
    const shown = (body: string) =>
      body.slice(
        body.indexOf('<div class="markdown">'),
        body.indexOf('</div>', body.indexOf('<div class="markdown">')),
      );
    assertSafe(shown(itemPage), 'item page');
    const deploysPage = await page(`/app/products/${product.id}/deploys`, cookie);
    assert.match(deploysPage, escaped);
    assertSafe(shown(deploysPage), 'deploys page');
    const mail = (await deliveredMail(t)).find(
      (m) => (m.headers.get('to') ?? '').includes(alice.email) && (m.headers.get('subject') ?? '').includes('Deployed'),
    );
    assert.ok(mail, 'no deploy mail');
    assert.match(mail.html, /<p>&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assertSafe(mail.html.slice(mail.html.indexOf('<h3'), mail.html.indexOf('<p style="color:#595959')), 'mail');

    // The fill renders what it finds, keeps it, and then finds nothing.
    assert.ok((await fillRenderedMarkdown(t.app)) >= 2);
    assert.equal((await storedDescription(product.id, item.number)).description_html, reference.render(HOSTILE_MARKUP));
    assert.equal((await storedNotes(deploy.id)).notes_html, reference.render(HOSTILE_MARKUP));
    assert.equal(await fillRenderedMarkdown(t.app), 0);
    assert.match(
      await page(`/app/products/${product.id}/items/${item.number}`, cookie),
      /<h1>Release <em>notes<\/em><\/h1>/,
    );
  });
});
