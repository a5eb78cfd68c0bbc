import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { addAttachment, attachmentLimits } from '../src/attachments/index.js';
import { productScope } from '../src/products/index.js';
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
import { pageSession } from './fuzz.js';

const MIB = 1024 * 1024;

let t: TestContext;
before(async () => {
  // Small limits, so that a test can pass them: 1 MiB a file, 3 MiB a product.
  t = await makeApp({ env: { ATTACHMENT_MAX_MB: '1', ATTACHMENTS_PER_PRODUCT_MB: '3' } });
});
after(() => t.close());

/** An admin (the owner), a member, an outsider, and a product of two items. */
async function setup() {
  const owner = await makeUser(t.db, { firstName: 'Olive', lastName: 'Owner' });
  const member = await makeUser(t.db, { firstName: 'Mo', lastName: 'Member' });
  const other = await makeUser(t.db);
  const outsider = await makeUser(t.db);
  const product = await makeProduct(t.db, owner, [member, other], 'Files');
  const item = await makeItem(t.app, owner, product.id, { title: 'Has files' });
  const second = await makeItem(t.app, owner, product.id, { title: 'Another' });
  const base = `/api/products/${product.id}/items`;
  return {
    owner,
    member,
    other,
    outsider,
    product,
    item,
    second,
    base,
    list: `${base}/${item.number}/attachments.json`,
  };
}

/** A multipart/form-data body as a browser or curl -F sends it, made by the platform's own FormData. */
async function multipart(
  files: { field?: string; name: string; type?: string; bytes: Buffer | string }[],
  fields: Record<string, string> = {},
): Promise<{ payload: Buffer; type: string }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files)
    form.append(f.field ?? 'file', new Blob([Buffer.from(f.bytes)], f.type ? { type: f.type } : {}), f.name);
  const request = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  return { payload: Buffer.from(await request.arrayBuffer()), type: request.headers.get('content-type')! };
}

function send(
  user: TestUser | undefined,
  method: 'GET' | 'POST' | 'DELETE' | 'HEAD',
  url: string,
  body?: { payload: Buffer | string; type: string },
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method,
    url,
    headers: {
      ...(user ? { authorization: user.auth } : {}),
      ...(body ? { 'content-type': body.type } : {}),
      ...headers,
    },
    payload: body?.payload,
  });
}

/** Uploads one file as multipart/form-data; returns the answer. */
async function upload(user: TestUser, url: string, name: string, bytes: Buffer | string, type = 'text/plain') {
  return send(user, 'POST', url, await multipart([{ name, type, bytes }]));
}

async function uploaded(user: TestUser, url: string, name: string, bytes: Buffer | string, type?: string) {
  const res = await upload(user, url, name, bytes, type);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const storedCount = async (productId: number) =>
  Number(
    (
      await t.db
        .selectFrom('attachments')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('product_id', '=', productId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('attachments: upload, list, fetch, download, delete', () => {
  test('a file goes up as multipart, is listed oldest first, fetched, downloaded and deleted', async () => {
    const s = await setup();
    const first = await uploaded(s.member, s.list, 'build.log', 'line 1\nline 2\n');
    assert.deepEqual(Object.keys(first).sort(), [
      'content_type',
      'created_at',
      'created_by',
      'href',
      'id',
      'item',
      'name',
      'size',
    ]);
    assert.equal(first.name, 'build.log');
    assert.equal(first.content_type, 'text/plain');
    assert.equal(first.size, 14);
    assert.match(first.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.equal(first.created_by.id, s.member.user.id);
    assert.equal(first.created_by.first_name, 'Mo');
    assert.deepEqual(first.item, {
      number: s.item.number,
      title: 'Has files',
      type: 'task',
      status: 'backlog',
      product: { id: s.product.id, name: 'Files', archived: false },
      short_url: s.item.short_url,
    });
    assert.equal(
      first.href,
      `http://shiplog.test/api/products/${s.product.id}/items/${s.item.number}/attachments/${first.id}/file`,
    );
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0xff]);
    const second = await uploaded(s.owner, s.list, 'shot.png', png, 'image/png');

    const listed = await send(s.other, 'GET', s.list);
    assert.equal(listed.statusCode, 200, listed.body);
    assert.deepEqual(
      listed.json().map((a: { id: number }) => a.id),
      [first.id, second.id],
    );
    assert.equal(listed.headers['x-sprintly-attachment-count'], '2');
    // Another viewer sees the uploader without their private fields.
    assert.equal(listed.json()[0].created_by.created_at, undefined);
    const paged = await send(s.other, 'GET', `${s.list}?offset=1&limit=1`);
    assert.deepEqual(
      paged.json().map((a: { id: number }) => a.id),
      [second.id],
    );

    const one = await send(s.other, 'GET', `${s.base}/${s.item.number}/attachments/${second.id}.json`);
    assert.equal(one.statusCode, 200, one.body);
    assert.equal(one.json().name, 'shot.png');
    assert.equal(one.json().created_by.id, s.owner.user.id);

    const file = await send(s.other, 'GET', new URL(second.href).pathname);
    assert.equal(file.statusCode, 200);
    assert.deepEqual(file.rawPayload, png);
    assert.equal(file.headers['content-type'], 'image/png');
    assert.equal(file.headers['content-length'], String(png.length));
    assert.equal(file.headers['content-disposition'], `inline; filename="shot.png"; filename*=UTF-8''shot.png`);
    assert.equal(file.headers['cache-control'], 'private, no-cache');
    assert.equal(file.headers['x-content-type-options'], 'nosniff');
    const etag = String(file.headers.etag);
    assert.match(etag, /^"[^"]+"$/);
    const again = await send(s.other, 'GET', new URL(second.href).pathname, undefined, { 'if-none-match': etag });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');

    const deleted = await send(s.member, 'DELETE', `${s.base}/${s.item.number}/attachments/${first.id}.json`);
    assert.equal(deleted.statusCode, 200, deleted.body);
    assert.equal(deleted.json().id, first.id);
    assertError(await send(s.member, 'GET', `${s.base}/${s.item.number}/attachments/${first.id}.json`), 404);
    assertError(await send(s.member, 'GET', new URL(first.href).pathname), 404);
    assert.deepEqual(
      (await send(s.member, 'GET', s.list)).json().map((a: { id: number }) => a.id),
      [second.id],
    );
  });

  test('the file itself as the body, named in the query string, of its own type', async () => {
    const s = await setup();
    const bytes = Buffer.from([0, 1, 2, 3, 254, 255]);
    const res = await send(s.member, 'POST', `${s.list}?name=dump.bin`, {
      payload: bytes,
      type: 'application/octet-stream',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().name, 'dump.bin');
    assert.equal(res.json().size, 6);
    const file = await send(s.member, 'GET', new URL(res.json().href).pathname);
    assert.deepEqual(file.rawPayload, bytes);
    const log = await send(s.member, 'POST', `${s.list}?name=ci.log`, { payload: 'ok\n', type: 'text/plain' });
    assert.equal(log.statusCode, 200, log.body);
    assert.equal(log.json().content_type, 'text/plain');
    // A name field of the form wins over the part's file name.
    const named = await send(
      s.member,
      'POST',
      s.list,
      await multipart([{ name: 'blob', type: 'text/plain', bytes: 'x' }], { name: 'renamed.txt' }),
    );
    assert.equal(named.json().name, 'renamed.txt');
  });

  test('an upload without a file, or without a name, is a 400 and stores nothing', async () => {
    const s = await setup();
    const api = client(t.app, s.member);
    assertError(await api.post(s.list, { name: 'x.txt' }), 400, { errors: ['file'] });
    assertError(await api.postJson(s.list, { name: 'x.txt', file: 'text' }), 400, { errors: ['file'] });
    assertError(await send(s.member, 'POST', s.list, { payload: 'bytes', type: 'text/plain' }), 400, {
      errors: ['name'],
    });
    assertError(await send(s.member, 'POST', s.list, await multipart([], { name: 'x' })), 400, { errors: ['file'] });
    const two = await multipart([
      { name: 'a.txt', bytes: 'a' },
      { name: 'b.txt', bytes: 'b' },
    ]);
    assertError(await send(s.member, 'POST', s.list, two), 400, { errors: ['file'] });
    assertError(
      await send(s.member, 'POST', s.list, { payload: '--nope\r\ngarbage', type: 'multipart/form-data; boundary=xyz' }),
      400,
    );
    assert.equal(await storedCount(s.product.id), 0);
  });
});

describe('attachments: the activity log', () => {
  test('an upload is an activity of the item, with the name it was stored under', async () => {
    const s = await setup();
    const file = await uploaded(s.member, s.list, '../report.txt', 'all green');
    const log = await client(t.app, s.owner).get(`${s.base}/${s.item.number}/activities.json`);
    const [latest] = log.json().activities;
    assert.equal(latest.action, 'attached');
    assert.equal(latest.user.email, s.member.email);
    assert.deepEqual(latest.meta, { attachment_id: file.id, name: 'report.txt' });
  });
});

describe('attachments: limits', () => {
  test('a file over ATTACHMENT_MAX_MB is a 413 and nothing is stored; one of exactly the limit is taken', async () => {
    const s = await setup();
    const over = await upload(s.member, s.list, 'big.bin', Buffer.alloc(MIB + 1));
    assertError(over, 413, { message: /larger than 1 MiB/ });
    assert.equal(over.json().code, 413);
    // A body far past the limit is refused while it is read.
    const huge = await send(s.member, 'POST', `${s.list}?name=huge.bin`, {
      payload: Buffer.alloc(2 * MIB),
      type: 'application/octet-stream',
    });
    assertError(huge, 413);
    assert.equal(await storedCount(s.product.id), 0);
    const exact = await uploaded(s.member, s.list, 'exact.bin', Buffer.alloc(MIB, 7), 'application/octet-stream');
    assert.equal(exact.size, MIB);
    const file = await send(s.member, 'GET', new URL(exact.href).pathname);
    assert.equal(file.rawPayload.length, MIB);
    assert.ok(file.rawPayload.every((b) => b === 7));
  });

  test("a file that would take the product's attachments past ATTACHMENTS_PER_PRODUCT_MB is a 413", async () => {
    const s = await setup();
    const others = await setup();
    const full = Buffer.alloc(MIB);
    const kept = [];
    for (const [i, url] of [s.list, s.list, `${s.base}/${s.second.number}/attachments.json`].entries())
      kept.push(await uploaded(s.owner, url, `part-${i}.bin`, full));
    const refused = await upload(s.member, s.list, 'one-more.txt', 'x');
    assertError(refused, 413, { message: /3 MiB in all/ });
    assert.equal(await storedCount(s.product.id), 3);
    // Another product has its own total.
    await uploaded(others.owner, others.list, 'elsewhere.txt', 'x');
    // Deleting makes room again.
    assert.equal(
      (await send(s.owner, 'DELETE', `${s.base}/${s.item.number}/attachments/${kept[0].id}.json`)).statusCode,
      200,
    );
    await uploaded(s.member, s.list, 'one-more.txt', 'x');
  });

  test('addAttachment, as mail to the files address calls it, keeps the same limits', async () => {
    const s = await setup();
    const scope = await productScope(t.db, s.member.user, String(s.product.id));
    const limits = attachmentLimits(t.config);
    const attach = (bytes: Buffer) =>
      t.db
        .transaction()
        .execute((trx) =>
          addAttachment(
            trx,
            scope,
            s.item.number,
            { name: 'mailed/notes.txt', contentType: 'TEXT/PLAIN', bytes },
            limits,
          ),
        );
    const { row } = await attach(Buffer.from('from mail'));
    assert.equal(row.name, 'notes.txt');
    assert.equal(row.content_type, 'text/plain');
    assert.equal(row.created_by_id, s.member.user.id);
    await assert.rejects(attach(Buffer.alloc(MIB + 1)), { statusCode: 413 });
    // What a mail part may say of its type is kept only when it reads as a media type.
    const odd = await t.db
      .transaction()
      .execute((trx) =>
        addAttachment(
          trx,
          scope,
          s.item.number,
          { name: '', contentType: 'not a type', bytes: Buffer.from('x') },
          limits,
        ),
      );
    assert.equal(odd.row.content_type, 'application/octet-stream');
    assert.equal(odd.row.name, 'attachment');
    await assert.rejects(
      t.db
        .transaction()
        .execute((trx) =>
          addAttachment(trx, scope, 999, { name: 'x', contentType: undefined, bytes: Buffer.from('x') }, limits),
        ),
      { statusCode: 404 },
    );
    const listed = (await send(s.member, 'GET', s.list)).json();
    assert.deepEqual(
      listed.map((a: { name: string }) => a.name),
      ['notes.txt', 'attachment'],
    );
  });
});

describe('attachments: names and types', () => {
  test('names lose paths, control and direction characters, and are bounded', async () => {
    const s = await setup();
    const cases: [string, string][] = [
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\me\\report.pdf', 'report.pdf'],
      ['bell\u0007\u0000tab\t.txt', 'belltab.txt'],
      ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
      ['  spaced.txt  ', 'spaced.txt'],
      ['..', 'attachment'],
      ['dir/', 'attachment'],
      ['Ünïcödé 😀.txt', 'Ünïcödé 😀.txt'],
    ];
    for (const [given, kept] of cases) {
      const res = await send(s.member, 'POST', `${s.list}?name=${encodeURIComponent(given)}`, {
        payload: 'x',
        type: 'text/plain',
      });
      assert.equal(res.statusCode, 200, `${given}: ${res.body}`);
      assert.equal(res.json().name, kept, JSON.stringify(given));
    }
    const long = await send(s.member, 'POST', `${s.list}?name=${'n'.repeat(400)}.txt`, {
      payload: 'x',
      type: 'text/plain',
    });
    const name = long.json().name as string;
    assert.equal([...name].length, 255);
    assert.ok(name.endsWith('n.txt'), name);
    // A multipart file name is sanitized the same way.
    const part = await send(s.member, 'POST', s.list, await multipart([{ name: '/tmp/../secret.txt', bytes: 'x' }]));
    assert.equal(part.json().name, 'secret.txt');
    // The download names the file in ASCII and in UTF-8.
    const unicode = (await send(s.member, 'GET', s.list)).json().find((a: { name: string }) => a.name.startsWith('Ü'));
    const file = await send(s.member, 'GET', new URL(unicode.href).pathname);
    assert.equal(
      file.headers['content-disposition'],
      `inline; filename="_n_c_d_ __.txt"; filename*=UTF-8''%C3%9Cn%C3%AFc%C3%B6d%C3%A9%20%F0%9F%98%80.txt`,
    );
  });

  test('HTML, SVG and unknown types are downloads, never shown; safe types are shown inline', async () => {
    const s = await setup();
    const cases: [string, string, string, string][] = [
      // sent type, kept type, served type, disposition
      ['text/html', 'text/html', 'application/octet-stream', 'attachment'],
      ['image/svg+xml', 'image/svg+xml', 'application/octet-stream', 'attachment'],
      ['application/javascript', 'application/javascript', 'application/octet-stream', 'attachment'],
      ['application/xhtml+xml', 'application/xhtml+xml', 'application/octet-stream', 'attachment'],
      ['application/x-made-up', 'application/x-made-up', 'application/octet-stream', 'attachment'],
      ['Text/Plain; Charset=UTF-8; x=<b>', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8', 'inline'],
      ['image/jpeg', 'image/jpeg', 'image/jpeg', 'inline'],
      ['application/pdf', 'application/pdf', 'application/pdf', 'inline'],
    ];
    for (const [sent, kept, served, how] of cases) {
      const res = await send(s.member, 'POST', `${s.list}?name=f`, {
        payload: '<script>alert(1)</script>',
        type: sent,
      });
      assert.equal(res.statusCode, 200, `${sent}: ${res.body}`);
      assert.equal(res.json().content_type, kept, sent);
      const file = await send(s.member, 'GET', new URL(res.json().href).pathname);
      assert.equal(file.headers['content-type'], served, sent);
      assert.match(String(file.headers['content-disposition']), new RegExp(`^${how};`), sent);
      assert.equal(file.headers['x-content-type-options'], 'nosniff', sent);
      assert.match(String(file.headers['content-security-policy']), /sandbox/, sent);
    }
  });
});

describe('attachments: who may, and what exists', () => {
  test('checks in order: credentials, product, membership, parameters, item, attachment', async () => {
    const s = await setup();
    const a = await uploaded(s.member, s.list, 'a.txt', 'a');
    const oneUrl = `${s.base}/${s.item.number}/attachments/${a.id}.json`;
    const fileUrl = new URL(a.href).pathname;
    const body = await multipart([{ name: 'x.txt', bytes: 'x' }]);
    for (const [method, url] of [
      ['GET', s.list],
      ['POST', s.list],
      ['GET', oneUrl],
      ['GET', fileUrl],
      ['DELETE', oneUrl],
    ] as const) {
      const label = `${method} ${url}`;
      const b = method === 'POST' ? body : undefined;
      assertError(await send(undefined, method, url, b), 403, { label: `${label} without credentials` });
      assertError(await send(s.outsider, method, url, b), 403, { label: `${label} by a non-member` });
      // Membership before the item: a non-member learns nothing of which items exist.
      assertError(await send(s.outsider, method, url.replace(`/items/${s.item.number}/`, '/items/999/'), b), 403, {
        label,
      });
      assertError(
        await send(s.member, method, url.replace(`/products/${s.product.id}/`, '/products/999999/'), b),
        404,
        {
          label,
        },
      );
      assertError(await send(s.member, method, url.replace(`/items/${s.item.number}/`, '/items/999/'), b), 404, {
        label: `${label} of an unknown item`,
      });
    }
    // The parameters before the item (docs/INTERFACE.md §2): no file, or one too large, for an unknown item.
    assertError(await client(t.app, s.member).post(`${s.base}/999/attachments.json`, {}), 400, { errors: ['file'] });
    assertError(await upload(s.member, `${s.base}/999/attachments.json`, 'big.bin', Buffer.alloc(MIB + 1)), 413);
    assert.equal(await storedCount(s.product.id), 1);
  });

  test('unknown attachments, and those of another item or product, are 404', async () => {
    const s = await setup();
    const elsewhere = await setup();
    const mine = await uploaded(s.member, s.list, 'a.txt', 'a');
    const theirs = await uploaded(elsewhere.owner, elsewhere.list, 'b.txt', 'b');
    const onSecond = `${s.base}/${s.second.number}/attachments`;
    for (const id of [String(mine.id + 100000), 'abc', '1.5', '-1', '99999999999999999999', String(theirs.id)]) {
      assertError(await send(s.member, 'GET', `${s.base}/${s.item.number}/attachments/${id}.json`), 404, { label: id });
      assertError(await send(s.member, 'GET', `${s.base}/${s.item.number}/attachments/${id}/file`), 404, { label: id });
    }
    // Another item's attachment, through this product's other item.
    assertError(await send(s.member, 'GET', `${onSecond}/${mine.id}.json`), 404);
    assertError(await send(s.member, 'GET', `${onSecond}/${mine.id}/file`), 404);
    assertError(await send(s.owner, 'DELETE', `${onSecond}/${mine.id}.json`), 404);
    assert.equal(await storedCount(s.product.id), 1);
  });

  test('the uploader or an admin deletes an attachment; another member gets 403', async () => {
    const s = await setup();
    const a = await uploaded(s.member, s.list, 'a.txt', 'a');
    const b = await uploaded(s.member, s.list, 'b.txt', 'b');
    const url = (id: number) => `${s.base}/${s.item.number}/attachments/${id}.json`;
    assertError(await send(s.other, 'DELETE', url(a.id)), 403, { message: /admin/ });
    assert.equal(await storedCount(s.product.id), 2);
    assert.equal((await send(s.member, 'DELETE', url(a.id))).statusCode, 200);
    assert.equal((await send(s.owner, 'DELETE', url(b.id))).statusCode, 200);
    assert.equal(await storedCount(s.product.id), 0);
    assertError(await send(s.owner, 'DELETE', url(b.id)), 404);
  });
});

describe('attachments: on the pages', () => {
  test("a signed-in member downloads a file through the pages, with the API's headers; others cannot", async () => {
    const s = await setup();
    const a = await uploaded(s.member, s.list, 'page.html', '<h1>hi</h1>', 'text/html');
    const path = `/app/products/${s.product.id}/items/${s.item.number}/attachments/${a.id}/file`;
    const page = (cookie?: string) => t.app.inject({ method: 'GET', url: path, headers: cookie ? { cookie } : {} });
    const member = await pageSession(t, s.other);
    const res = await page(member.cookie);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.body, '<h1>hi</h1>');
    assert.equal(res.headers['content-type'], 'application/octet-stream');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="page.html"/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; sandbox");
    const outsider = await pageSession(t, s.outsider);
    const refused = await page(outsider.cookie);
    assert.equal(refused.statusCode, 403);
    assert.match(String(refused.headers['content-type']), /^text\/html/);
    assert.equal((await page()).statusCode, 303);
    const missing = await t.app.inject({
      method: 'GET',
      url: path.replace(`/attachments/${a.id}/`, `/attachments/${a.id + 1000}/`),
      headers: { cookie: member.cookie },
    });
    assert.equal(missing.statusCode, 404);
  });
});
