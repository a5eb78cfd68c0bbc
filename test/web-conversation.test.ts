import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  advanceClock,
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
} from './helpers.js';

/*
 * The conversation on an item's page, as a browser without script uses it: comments (with a
 * preview), the star, blocks either way, attachments; each change through the same service as the
 * API, its refusals shown next to the field it concerns with what was typed kept. Attachments are
 * limited to 1 MiB each and 1 MiB per product here, so that both limits are met.
 */

let t: TestContext;
before(async () => {
  t = await makeApp({ env: { ATTACHMENT_MAX_MB: '1', ATTACHMENTS_PER_PRODUCT_MB: '1' } });
});
after(() => t.close());

const get = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body.slice(0, 500)}`);
  return match[1];
}

const unescapeHtml = (s: string) =>
  s.replace(
    /&(amp|lt|gt|quot|#39|#96);/g,
    (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' })[e]!,
  );

/** The comment box's text as the page holds it (the parser drops the newline after <textarea>). */
const commentBox = (body: string) =>
  unescapeHtml(/<textarea id="comment-body"[^>]*>\n?([\s\S]*?)<\/textarea>/.exec(body)?.[1] ?? 'no box');

/** A team of three on one product, each signed in, and a form poster that sends the page's own token. */
async function team() {
  const ada = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'Builder' });
  const cy = await makeUser(t.db, { firstName: 'Cy', lastName: 'Young' });
  const product = await makeProduct(t.db, ada, [bob, cy]);
  const cookies = {
    ada: await signInByMail(t, ada.email),
    bob: await signInByMail(t, bob.email),
    cy: await signInByMail(t, cy.email),
  };
  const base = `/app/products/${product.id}`;
  const tokens = new Map<string, string>();
  const tokenOf = async (cookie: string) => {
    if (!tokens.has(cookie)) tokens.set(cookie, csrfOf(await get(`${base}/board`, cookie)));
    return tokens.get(cookie)!;
  };
  const post = async (url: string, cookie: string, fields: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf: await tokenOf(cookie), ...fields }).toString(),
    });
  const api = (user: typeof ada) => client(t.app, user);
  return { ada, bob, cy, product, cookies, base, post, tokenOf, api };
}

describe('comments on the item page', () => {
  test('posting: a flash, the comment rendered in the timeline after the creation, the API lists it', async () => {
    const { ada, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Talked about' });
    const res = await post(`${base}/items/${item.number}/comments`, cookies.ada, {
      body: 'Looks **good**\r\n<script>alert(1)</script>',
      post: '1',
    });
    assert.equal(res.statusCode, 303, res.body);
    const [comment] = (await api(ada).get(`/api/products/${product.id}/items/${item.number}/comments.json`)).json();
    assert.equal(comment.body, 'Looks **good**\n<script>alert(1)</script>');
    assert.equal(res.headers.location, `${base}/items/${item.number}?done=commented#comment-${comment.id}`);

    const page = await get(String(res.headers.location), cookies.ada);
    assert.match(
      page.body,
      /<p class="notice" role="status" id="flash" data-done="commented">Your comment is posted\.<\/p>/,
    );
    const timeline = page.body.slice(page.body.indexOf('id="timeline"'));
    assert.ok(timeline.indexOf('created the item') < timeline.indexOf(`id="comment-${comment.id}"`), 'newest last');
    assert.match(timeline, /Looks <strong>good<\/strong><br>\n&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.doesNotMatch(page.body, /<script>alert/);
    assert.equal(commentBox(page.body), '', 'the box is empty again');
    // The board's card counts it, in words for screen readers.
    const board = await get(`${base}/board`, cookies.ada);
    const card = board.body.slice(board.body.indexOf(`id="item-${item.number}"`));
    assert.match(
      card.slice(0, card.indexOf('</li>')),
      /<span class="mark comments">1<span class="sr-only"> comment<\/span><\/span>/,
    );
    // Without ?done there is no message.
    assert.doesNotMatch((await get(`${base}/items/${item.number}`, cookies.ada)).body, /id="flash"/);
  });

  test('refused: an empty or too long comment keeps the text in the box, the reason next to it', async () => {
    const { ada, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    const empty = await post(`${base}/items/${item.number}/comments`, cookies.ada, { body: '  \r\n ', post: '1' });
    assert.equal(empty.statusCode, 400);
    assert.match(empty.body, /<span class="field-error" id="error-body" role="alert">body must not be empty<\/span>/);
    assert.match(empty.body, /id="comment-body" name="body" rows="5" aria-invalid="true" aria-describedby="error-body/);
    assert.equal(commentBox(empty.body), '  \n ');

    const long = `${'é'.repeat(40_000)} the end`;
    const tooLong = await post(`${base}/items/${item.number}/comments`, cookies.ada, { body: long, post: '1' });
    assert.equal(tooLong.statusCode, 400);
    assert.match(tooLong.body, /id="error-body"[^>]*>body [^<]*65535/);
    assert.equal(commentBox(tooLong.body), long, 'every character typed is still there');
    const listed = await api(ada).get(`/api/products/${product.id}/items/${item.number}/comments.json`);
    assert.deepEqual(listed.json(), []);
  });

  test('preview: the text rendered above the box, still in it, nothing posted', async () => {
    const { ada, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    const res = await post(`${base}/items/${item.number}/comments`, cookies.ada, {
      body: '# Plan\r\n\r\n- one _two_',
      preview: '1',
    });
    assert.equal(res.statusCode, 200);
    const preview = /<section class="preview"[\s\S]*?<\/section>/.exec(res.body)?.[0] ?? '';
    assert.match(preview, /<h1>Plan<\/h1>/);
    assert.match(preview, /<li>one <em>two<\/em><\/li>/);
    assert.ok(res.body.indexOf('class="preview"') < res.body.indexOf('id="comment-body"'), 'above the box');
    assert.equal(commentBox(res.body), '# Plan\n\n- one _two_');
    const listed = await api(ada).get(`/api/products/${product.id}/items/${item.number}/comments.json`);
    assert.deepEqual(listed.json(), []);
  });

  test("deleting: one's own after a confirmation; someone else's is refused on the page", async () => {
    const { ada, bob, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    const adas = (
      await api(ada).post(`/api/products/${product.id}/items/${item.number}/comments.json`, { body: 'Mine' })
    ).json();
    const bobs = (
      await api(bob).post(`/api/products/${product.id}/items/${item.number}/comments.json`, { body: "Bob's" })
    ).json();
    const page = await get(`${base}/items/${item.number}`, cookies.ada);
    const deleteLink = (id: number) => `href="${base}/items/${item.number}/comments/${id}/delete"`;
    assert.ok(page.body.includes(deleteLink(adas.id)), 'a link to delete her own');
    assert.ok(!page.body.includes(deleteLink(bobs.id)), "none for Bob's");

    const confirm = await get(`${base}/items/${item.number}/comments/${adas.id}/delete`, cookies.ada);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /<blockquote class="quoted">Mine<\/blockquote>/);
    assert.match(confirm.body, /<button type="submit" class="danger">Delete this comment<\/button>/);

    const refused = await post(`${base}/items/${item.number}/comments/${bobs.id}/delete`, cookies.ada);
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /<p class="error">Only its author may delete a comment\.<\/p>/);
    const done = await post(`${base}/items/${item.number}/comments/${adas.id}/delete`, cookies.ada);
    assert.equal(done.statusCode, 303);
    assert.equal(done.headers.location, `${base}/items/${item.number}?done=uncommented#timeline`);
    const left = await api(ada).get(`/api/products/${product.id}/items/${item.number}/comments.json`);
    assert.deepEqual(
      left.json().map((c: { id: number }) => c.id),
      [bobs.id],
    );
  });

  test('the latest 50 entries, newest last, with a link to older ones that pages back to the creation', async () => {
    const { ada, product, cookies, base, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    for (let n = 1; n <= 60; n++)
      await api(ada).post(`/api/products/${product.id}/items/${item.number}/comments.json`, { body: `note ${n}` });
    const notes = (body: string) => [...body.matchAll(/<p>note (\d+)<\/p>/g)].map((m) => Number(m[1]));
    const first = await get(`${base}/items/${item.number}`, cookies.ada);
    assert.deepEqual(
      notes(first.body),
      Array.from({ length: 50 }, (_, n) => n + 11),
    );
    assert.doesNotMatch(first.body, /created the item/);
    const older = /<a href="([^"]+)#timeline">Older entries<\/a>/.exec(first.body)?.[1];
    assert.ok(older, 'a link to older entries');
    const second = await get(unescapeHtml(older), cookies.ada);
    assert.deepEqual(
      notes(second.body),
      Array.from({ length: 10 }, (_, n) => n + 1),
    );
    assert.match(second.body, /<strong>Ada Lovelace<\/strong> created the item\./);
    assert.doesNotMatch(second.body, /Older entries/);
    assert.match(second.body, /Newest entries/);
    const bad = await get(`${base}/items/${item.number}?skip_comment=x`, cookies.ada);
    assert.equal(bad.statusCode, 400);
  });
});

describe('the timeline', () => {
  test("comments, deploys and the item's changes merged by time, newest last; paged, each entry once", async () => {
    const { ada, bob, product, cookies, base, api } = await team();
    const item = await makeItem(t.app, ada, product.id, { title: 'Merged' });
    const at = `/api/products/${product.id}/items/${item.number}`;
    // Deploys are stamped by the wall clock, not the service's (which the other steps move on).
    const deployed = await api(ada).post(`/api/products/${product.id}/deploys.json`, {
      environment: 'staging',
      numbers: `${item.number}`,
    });
    assert.equal(deployed.statusCode, 200, deployed.body);
    const steps: (() => Promise<LightMyRequestResponse>)[] = [
      () => api(bob).post(`${at}/comments.json`, { body: 'first word' }),
      () => api(ada).post(`${at}.json`, { status: 'in-progress' }),
      () => api(bob).post(`${at}/comments.json`, { body: 'second word' }),
      () => api(ada).post(`${at}.json`, { title: 'Renamed' }),
    ];
    for (const step of steps) {
      advanceClock(2_000);
      const res = await step();
      assert.equal(res.statusCode, 200, res.body);
    }
    const page = await get(`${base}/items/${item.number}`, cookies.ada);
    const timeline = /<ol class="conversation">([\s\S]*?)<\/ol>/.exec(page.body)?.[1] ?? '';
    const entries = [...timeline.matchAll(/<li class="(\w+)[^"]*"[^>]*>[\s\S]*?<p>([\s\S]*?)<\/p>/g)].map(
      ([, kind, text]) =>
        `${kind}: ${text
          .replace(/<[^>]+>/g, '')
          .replace(/\s+/g, ' ')
          .trim()}`,
    );
    assert.deepEqual(entries, [
      'created: Ada Lovelace created the item.',
      'deploy: Ada Lovelace deployed to staging (the deploy)',
      'comment: Bob Builder commented:',
      `change: Ada Lovelace: Moved #${item.number} from backlog to in-progress`,
      'comment: Bob Builder commented:',
      `change: Ada Lovelace: Changed the title of #${item.number}`,
    ]);

    // 120 more comments: the activity log's window of a page is all comments (shown by their own
    // source), and nothing older than it may be taken before it is read.
    for (let n = 0; n < 120; n++) await api(bob).post(`${at}/comments.json`, { body: `more ${n}` });
    const seen: string[] = [];
    let url: string | undefined = `${base}/items/${item.number}`;
    for (let pages = 0; url && pages < 10; pages++) {
      const res = await get(url, cookies.ada);
      const list = /<ol class="conversation">([\s\S]*?)<\/ol>/.exec(res.body)?.[1] ?? '';
      const texts = [...list.matchAll(/<li class="(\w+)[^"]*"( id="comment-\d+")?>/g)].map((m) => m[1] + (m[2] ?? ''));
      seen.unshift(...texts);
      const older = /<a href="([^"]+)#timeline">Older entries<\/a>/.exec(res.body)?.[1];
      url = older && unescapeHtml(older);
    }
    assert.equal(seen.length, 6 + 120, 'every entry once');
    assert.equal(new Set(seen).size, seen.length - 1, 'no comment twice (the two changes look alike)');
    assert.equal(seen[0], 'created');
    assert.equal(seen.filter((s) => s === 'change').length, 2);
  });
});

describe('the star', () => {
  test('favorite and unfavorite one’s own; the count is everyone’s', async () => {
    const { ada, bob, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    await api(bob).post(`/api/products/${product.id}/items/${item.number}/favorites.json`);
    const star = (body: string) => /<button type="submit" class="star" aria-pressed="(\w+)">/.exec(body)?.[1];
    const count = (body: string) => /<span class="muted" id="favorite-count">([^<]+)<\/span>/.exec(body)?.[1];
    let page = await get(`${base}/items/${item.number}`, cookies.ada);
    assert.deepEqual([star(page.body), count(page.body)], ['false', '1 favorite']);

    const on = await post(`${base}/items/${item.number}/favorite`, cookies.ada, { favorite: '1' });
    assert.equal(on.headers.location, `${base}/items/${item.number}?done=favorited#favorite-count`);
    page = await get(String(on.headers.location), cookies.ada);
    assert.deepEqual([star(page.body), count(page.body)], ['true', '2 favorites']);
    assert.match(page.body, /Added to your favorites\./);
    assert.equal(
      (await api(ada).get(`/api/products/${product.id}/items/${item.number}.json`)).json().counts.favorites,
      2,
    );

    const off = await post(`${base}/items/${item.number}/favorite`, cookies.ada, { favorite: '0' });
    page = await get(String(off.headers.location), cookies.ada);
    assert.deepEqual([star(page.body), count(page.body)], ['false', '1 favorite']);
    const left = (await api(ada).get(`/api/products/${product.id}/items/${item.number}/favorites.json`)).json();
    assert.deepEqual(
      left.map((f: { user: { id: number } }) => f.user.id),
      [bob.user.id],
    );
  });
});

describe('blocks on the item page', () => {
  test('add either way by number; refusals next to the field with the number kept; the board marks it', async () => {
    const { ada, product, cookies, base, post, api } = await team();
    const [a, b, c] = [
      await makeItem(t.app, ada, product.id),
      await makeItem(t.app, ada, product.id),
      await makeItem(t.app, ada, product.id),
    ];
    const added = await post(`${base}/items/${a.number}/blocks`, cookies.ada, { blocked: String(b.number) });
    assert.equal(added.statusCode, 303, added.body);
    assert.equal(added.headers.location, `${base}/items/${a.number}?done=blocked#blocks-heading`);
    const by = await post(`${base}/items/${a.number}/blocks`, cookies.ada, { blocker: String(c.number) });
    assert.equal(by.statusCode, 303, by.body);
    const blocking = (await api(ada).get(`/api/products/${product.id}/items/${a.number}/blocking.json`)).json();
    assert.deepEqual(
      blocking.map((x: { blocked: { number: number } }) => x.blocked.number),
      [b.number],
    );
    assert.equal((await api(ada).get(`/api/products/${product.id}/items/${a.number}.json`)).json().counts.blockers, 1);
    const page = await get(`${base}/items/${a.number}`, cookies.ada);
    const section = (id: string) =>
      page.body.slice(
        page.body.indexOf(`id="${id}"`),
        page.body.indexOf('</section>', page.body.indexOf(`id="${id}"`)),
      );
    assert.match(section('blocking-heading'), new RegExp(`#${b.number} A task`));
    assert.match(section('blocked_by-heading'), new RegExp(`#${c.number} A task`));

    const refusals: [Record<string, string>, string, RegExp][] = [
      [{ blocked: String(a.number) }, 'blocked', /must name another item than this one/],
      [{ blocked: '999' }, 'blocked', /names no item of this product/],
      [{ blocked: 'two' }, 'blocked', /must be a whole number/],
      [{ blocker: '999' }, 'blocker', /names no item of this product/],
      [{ blocked: String(c.number) }, 'blocked', new RegExp(`#${c.number} already blocks #${a.number}`)],
      [{ blocker: String(b.number) }, 'blocker', new RegExp(`#${b.number} already blocks|already blocks`)],
    ];
    for (const [fields, field, reason] of refusals) {
      const res = await post(`${base}/items/${a.number}/blocks`, cookies.ada, fields);
      assert.equal(res.statusCode, 400, `${JSON.stringify(fields)}: ${res.statusCode}`);
      const error =
        new RegExp(`<span class="field-error" id="error-${field}" role="alert">${field} [^<]*</span>`).exec(
          res.body,
        )?.[0] ?? '';
      assert.match(error, reason, JSON.stringify(fields));
      assert.match(res.body, new RegExp(`name="${field}" value="${Object.values(fields)[0]}" aria-invalid="true"`));
    }

    const board = await get(`${base}/board`, cookies.ada);
    const card = (n: number) => {
      const start = board.body.indexOf(`id="item-${n}"`);
      return board.body.slice(start, board.body.indexOf('</li>', start));
    };
    assert.match(
      card(b.number),
      new RegExp('<span class="mark blocked">Blocked' + '<span class="sr-only"> by 1 item</span></span>'),
    );
    assert.doesNotMatch(card(c.number), /mark blocked/);
  });

  test('the creator removes, the assignee marks unblocked, anyone else sees no action and is refused', async () => {
    const { ada, bob, product, cookies, base, post, api } = await team();
    const blocker = await makeItem(t.app, ada, product.id, { title: 'Blocker' });
    const blocked = await makeItem(t.app, ada, product.id, { title: 'Blocked', assigned_to: String(bob.user.id) });
    const block = (
      await api(ada).post(`/api/products/${product.id}/items/${blocker.number}/blocking.json`, {
        blocked: String(blocked.number),
      })
    ).json();
    const action = `action="${base}/items/${blocked.number}/blocks/${block.id}/remove"`;
    const pageOf = async (cookie: string) => (await get(`${base}/items/${blocked.number}`, cookie)).body;
    assert.match(await pageOf(cookies.ada), new RegExp(`${action}[\\s\\S]*?>Remove</button>`));
    assert.match(await pageOf(cookies.bob), new RegExp(`${action}[\\s\\S]*?>Mark unblocked</button>`));
    assert.ok(!(await pageOf(cookies.cy)).includes(action), 'Cy may do nothing to it');

    const refused = await post(`${base}/items/${blocked.number}/blocks/${block.id}/remove`, cookies.cy, {
      from: String(blocker.number),
    });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /<p class="error">Only the block&#39;s creator may remove it/);

    const unblock = await post(`${base}/items/${blocked.number}/blocks/${block.id}/remove`, cookies.bob, {
      from: String(blocker.number),
    });
    assert.equal(unblock.headers.location, `${base}/items/${blocked.number}?done=unblocked#blocks-heading`);
    const after = (
      await api(ada).get(`/api/products/${product.id}/items/${blocker.number}/blocking/${block.id}.json`)
    ).json();
    assert.equal(after.unblocked, true);
    assert.match(await pageOf(cookies.bob), /<span class="unblocked">\(unblocked\)<\/span>/);

    const removed = await post(`${base}/items/${blocked.number}/blocks/${block.id}/remove`, cookies.ada, {
      from: String(blocker.number),
    });
    assert.equal(removed.headers.location, `${base}/items/${blocked.number}?done=block-removed#blocks-heading`);
    const gone = await api(ada).get(`/api/products/${product.id}/items/${blocker.number}/blocking/${block.id}.json`);
    assert.equal(gone.statusCode, 404);
  });
});

/** A multipart body as a browser sends the upload form. */
function multipart(fields: Record<string, string>, file?: { name: string; type: string; bytes: Buffer }) {
  const boundary = '----shiplogtest7MA4YWxkTrZu0gW';
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields))
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  const f = file ?? { name: '', type: 'application/octet-stream', bytes: Buffer.alloc(0) };
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${f.name}"\r\n` +
        `Content-Type: ${f.type}\r\n\r\n`,
    ),
    f.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { payload: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('attachments on the item page', () => {
  test('upload, download, limits and a missing file next to the field, delete where allowed', async () => {
    const { ada, product, cookies, base, tokenOf, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id);
    const upload = async (cookie: string, file?: { name: string; type: string; bytes: Buffer }) => {
      const body = multipart({ csrf: await tokenOf(cookie) }, file);
      return t.app.inject({
        method: 'POST',
        url: `${base}/items/${item.number}/attachments`,
        headers: { cookie, 'content-type': body.contentType },
        payload: body.payload,
      });
    };
    const ok = await upload(cookies.bob, { name: 'notes.txt', type: 'text/plain', bytes: Buffer.from('hello') });
    assert.equal(ok.statusCode, 303, ok.body);
    assert.equal(ok.headers.location, `${base}/items/${item.number}?done=attached#attachments-heading`);
    const [file] = (await api(ada).get(`/api/products/${product.id}/items/${item.number}/attachments.json`)).json();
    assert.equal(file.name, 'notes.txt');
    const page = await get(`${base}/items/${item.number}`, cookies.ada);
    assert.match(
      page.body,
      new RegExp(`<a href="${base}/items/${item.number}/attachments/${file.id}/file">notes.txt</a>`),
    );
    assert.equal((await get(`${base}/items/${item.number}/attachments/${file.id}/file`, cookies.ada)).body, 'hello');
    assert.ok(page.body.includes(`/attachments/${file.id}/delete`), 'Ada, an admin, may delete Bob’s file');
    const cys = await get(`${base}/items/${item.number}`, cookies.cy);
    assert.ok(!cys.body.includes(`/attachments/${file.id}/delete`), 'Cy, no admin, may not');

    const none = await upload(cookies.bob);
    assert.equal(none.statusCode, 400);
    assert.match(none.body, /id="error-file" role="alert">file is required: choose a file</);
    const big = await upload(cookies.bob, {
      name: 'big.bin',
      type: 'application/octet-stream',
      bytes: Buffer.alloc(1024 * 1024 + 10),
    });
    assert.equal(big.statusCode, 413);
    assert.match(big.body, /id="error-file" role="alert">file The file is larger than 1 MiB/);
    const huge = await upload(cookies.bob, {
      name: 'huge.bin',
      type: 'application/octet-stream',
      bytes: Buffer.alloc(1200 * 1024),
    });
    assert.equal(huge.statusCode, 413);
    assert.match(huge.body, /id="error-file" role="alert">file is larger than 1 MiB, the most one attachment may be/);
    const full = await upload(cookies.bob, {
      name: 'full.bin',
      type: 'application/octet-stream',
      bytes: Buffer.alloc(1024 * 1024 - 2),
    });
    assert.equal(full.statusCode, 413);
    assert.match(full.body, /id="error-file" role="alert">file The product&#39;s attachments would weigh more/);
    const tokenless = multipart({}, { name: 'x.txt', type: 'text/plain', bytes: Buffer.from('x') });
    const noToken = await t.app.inject({
      method: 'POST',
      url: `${base}/items/${item.number}/attachments`,
      headers: { cookie: cookies.bob, 'content-type': tokenless.contentType },
      payload: tokenless.payload,
    });
    assert.equal(noToken.statusCode, 403);

    const refused = await post(`${base}/items/${item.number}/attachments/${file.id}/delete`, cookies.cy);
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /<p class="error">Only whoever attached the file/);
    const confirm = await get(`${base}/items/${item.number}/attachments/${file.id}/delete`, cookies.bob);
    assert.match(confirm.body, /Delete this attachment<\/button>/);
    const deleted = await post(`${base}/items/${item.number}/attachments/${file.id}/delete`, cookies.bob);
    assert.equal(deleted.headers.location, `${base}/items/${item.number}?done=detached#attachments-heading`);
    const left = (await api(ada).get(`/api/products/${product.id}/items/${item.number}/attachments.json`)).json();
    assert.deepEqual(left, []);
  });
});

/**
 * What an accessibility checker reads of a page's markup: elements closed in order, ids unique,
 * every reference (label, aria-describedby, aria-labelledby) to an id that exists, every control
 * labelled, every button named, and the page's landmarks.
 */
function assertAccessible(body: string, label: string): void {
  const VOID = new Set(['input', 'br', 'img', 'meta', 'link', 'hr']);
  const open: string[] = [];
  const markup = body.replace(/<textarea([^>]*)>[\s\S]*?<\/textarea>/g, '<textarea$1></textarea>');
  for (const [tag, close, name] of markup.matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>/g)) {
    const element = name.toLowerCase();
    if (VOID.has(element) || tag.startsWith('<!')) continue;
    if (!close) open.push(element);
    else assert.equal(open.pop(), element, `${label}: </${element}> closes <${open.at(-1) ?? 'nothing'}>`);
  }
  assert.deepEqual(open, [], `${label}: left open`);
  const ids = [...markup.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(
    ids.filter((id, n) => ids.indexOf(id) !== n),
    [],
    `${label}: ids used twice`,
  );
  for (const [, attribute, refs] of markup.matchAll(/\s(for|aria-describedby|aria-labelledby)="([^"]+)"/g))
    for (const ref of refs.split(' ')) assert.ok(ids.includes(ref), `${label}: ${attribute}="${ref}" names no element`);
  for (const [control] of markup.matchAll(/<(?:input|select|textarea)\b[^>]*>/g)) {
    if (/type="(hidden|submit)"/.test(control)) continue;
    const id = /\sid="([^"]+)"/.exec(control)?.[1];
    const before = markup.slice(0, markup.indexOf(control));
    const wrapped = before.lastIndexOf('<label') > before.lastIndexOf('</label>');
    const labelled = /aria-label="[^"]+"/.test(control) || wrapped || (id && markup.includes(`for="${id}"`));
    assert.ok(labelled, `${label}: no label for ${control}`);
  }
  for (const [, attributes, text] of markup.matchAll(/<button([^>]*)>([\s\S]*?)<\/button>/g))
    assert.ok(
      /aria-label="[^"]+"/.test(attributes) || text.replace(/<[^>]+>/g, '').trim(),
      `${label}: a nameless button`,
    );
  for (const landmark of ['<header>', '<main>', '<nav'])
    assert.ok(markup.includes(landmark), `${label}: no ${landmark} landmark`);
}

describe('the item page, checked as an accessibility checker would', () => {
  test('every part shown (refusals included) is well formed, labelled and named', async () => {
    const { ada, bob, product, cookies, base, post, api } = await team();
    const item = await makeItem(t.app, ada, product.id, { assigned_to: String(bob.user.id) });
    const other = await makeItem(t.app, ada, product.id);
    const items = `/api/products/${product.id}/items`;
    await api(ada).post(`${items}/${item.number}/comments.json`, { body: 'A *comment*' });
    await api(bob).post(`${items}/${item.number}/favorites.json`);
    await api(ada).post(`${items}/${item.number}/blocking.json`, { blocked: String(other.number) });
    const attached = await t.app.inject({
      method: 'POST',
      url: `${items}/${item.number}/attachments.json?name=a.txt`,
      headers: { authorization: bob.auth, 'content-type': 'text/plain' },
      payload: 'A file',
    });
    assert.equal(attached.statusCode, 200, attached.body);
    const pages: [string, LightMyRequestResponse][] = [
      ['the page', await get(`${base}/items/${item.number}?done=commented`, cookies.ada)],
      ["the assignee's page", await get(`${base}/items/${item.number}`, cookies.bob)],
      ['a refused comment', await post(`${base}/items/${item.number}/comments`, cookies.ada, { body: '' })],
      ['a preview', await post(`${base}/items/${item.number}/comments`, cookies.ada, { body: 'x', preview: '1' })],
      ['a refused block', await post(`${base}/items/${item.number}/blocks`, cookies.ada, { blocker: '0' })],
      ['the board', await get(`${base}/board`, cookies.ada)],
    ];
    for (const [label, res] of pages) {
      assert.ok(res.statusCode < 500, `${label}: ${res.statusCode}`);
      assertAccessible(res.body, label);
    }
  });
});
