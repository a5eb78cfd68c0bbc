import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
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

const JSON_TYPE = 'application/json; charset=utf-8';
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

let t: TestContext;
let owner: TestUser;
let productId: number;
let items: string;

before(async () => {
  t = await makeApp();
  owner = await makeUser(t.db);
  productId = (await makeProduct(t.db, owner)).id;
  items = `/api/products/${productId}/items.json`;
});
after(() => t.close());

function api() {
  return client(t.app, owner);
}

/** A POST with an exact body and content type, as a client library would put it on the wire. */
function rawPost(
  url: string,
  contentType: string | undefined,
  payload: string | Buffer,
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { authorization: owner.auth };
  if (contentType !== undefined) headers['content-type'] = contentType;
  return t.app.inject({ method: 'POST', url, headers, payload });
}

function assertOk(res: LightMyRequestResponse, label = ''): any {
  assert.equal(res.statusCode, 200, `${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return res.json();
}

describe('request bodies', () => {
  test('form-urlencoded body', async () => {
    const res = await rawPost(items, 'application/x-www-form-urlencoded', 'type=task&title=Form+body&score=M');
    const item = assertOk(res);
    assert.equal(item.title, 'Form body');
    assert.equal(item.score, 'M');
  });

  test('form-urlencoded body with a charset', async () => {
    const payload = new URLSearchParams({ type: 'defect', title: 'Grüße aus Köln', description: '日本語' }).toString();
    for (const contentType of [
      'application/x-www-form-urlencoded; charset=UTF-8',
      'application/x-www-form-urlencoded;charset=utf-8',
    ]) {
      const item = assertOk(await rawPost(items, contentType, payload), contentType);
      assert.equal(item.type, 'defect');
      assert.equal(item.title, 'Grüße aus Köln');
      assert.equal(item.description, '日本語');
    }
  });

  test('JSON body', async () => {
    const res = await api().postJson(items, { type: 'test', title: 'JSON body', score: 'XL', tags: 'one' });
    const item = assertOk(res);
    assert.equal(item.type, 'test');
    assert.equal(item.title, 'JSON body');
    assert.equal(item.score, 'XL');
    assert.deepEqual(item.tags, ['one']);
  });

  test('JSON body with a charset', async () => {
    const res = await rawPost(
      items,
      'application/json; charset=utf-8',
      JSON.stringify({ type: 'task', title: 'JSON charset' }),
    );
    assert.equal(assertOk(res).title, 'JSON charset');
  });

  test('query-string parameters on a POST are read, the body winning', async () => {
    const url = `${items}?type=task&title=From+query&description=from%20query&score=S`;
    const form = assertOk(await rawPost(url, 'application/x-www-form-urlencoded', 'title=From+body&score=L'), 'form');
    assert.equal(form.type, 'task');
    assert.equal(form.title, 'From body');
    assert.equal(form.description, 'from query');
    assert.equal(form.score, 'L');

    const json = assertOk(await api().postJson(url, { title: 'From JSON', score: 'XL' }), 'json');
    assert.equal(json.type, 'task');
    assert.equal(json.title, 'From JSON');
    assert.equal(json.description, 'from query');
    assert.equal(json.score, 'XL');
  });

  test('query-string parameters alone are enough for a POST without a body', async () => {
    // What `curl -X POST 'https://.../deploys.json?environment=...&numbers=...'` sends.
    const res = await t.app.inject({
      method: 'POST',
      url: `${items}?type=task&title=Only+query`,
      headers: { authorization: owner.auth },
    });
    const item = assertOk(res, 'create item');
    assert.equal(item.title, 'Only query');
    const deploy = await t.app.inject({
      method: 'POST',
      url: `/api/products/${productId}/deploys.json?environment=production&numbers=${item.number}`,
      headers: { authorization: owner.auth },
    });
    assert.deepEqual(
      assertOk(deploy, 'create deploy').items.map((i: { number: number }) => i.number),
      [item.number],
    );
  });

  test('+ and %20 in form bodies decode to spaces', async () => {
    const res = await rawPost(
      items,
      'application/x-www-form-urlencoded',
      'type=task&title=hello+big%20world&tags=a+tag%2Cother%20tag',
    );
    const item = assertOk(res);
    assert.equal(item.title, 'hello big world');
    assert.deepEqual(item.tags, ['a tag', 'other tag']);
  });
});

describe('unknown and read-only parameters', () => {
  test('creating an item ignores unknown and read-only parameters', async () => {
    const res = await api().post(items, {
      type: 'task',
      title: 'With extras',
      number: '77',
      created_at: '2001-01-01T00:00:00+00:00',
      last_modified: '2001-01-01T00:00:00+00:00',
      short_url: 'http://evil.example/x',
      'product[id]': '999',
      'email[files]': 'x@example.com',
      sort: '-5',
      archived: 'true',
      limit: '100',
      offset: '3',
      order_by: 'bogus',
      children: 'maybe',
      progress: 'whatever',
      frobnicate: 'yes',
    });
    const item = assertOk(res);
    assert.equal(item.title, 'With extras');
    assert.notEqual(item.number, 77);
    assert.notEqual(item.created_at, '2001-01-01T00:00:00+00:00');
    assert.notEqual(item.short_url, 'http://evil.example/x');
    assert.equal(item.product.id, productId);
    assert.notEqual(item.email.files, 'x@example.com');
    assert.equal(item.archived, false);
  });

  test('an item posted back whole as a form is accepted; read-only fields keep their values', async () => {
    const original = await makeItem(t.app, owner, productId, { title: 'Round trip', tags: 'x,y' });
    const url = `/api/products/${productId}/items/${original.number}.json`;
    const res = await api().post(url, {
      number: String(original.number + 100),
      type: 'defect',
      title: 'Round trip, edited',
      description: original.description,
      score: original.score,
      status: original.status,
      tags: original.tags.join(','),
      created_at: '2001-01-01T00:00:00+00:00',
      last_modified: '2001-01-01T00:00:00+00:00',
      short_url: 'http://evil.example/x',
      'product[id]': String(original.product.id + 1),
      'product[name]': 'Other',
      'product[archived]': 'false',
      'email[files]': 'x@example.com',
      'email[discussion]': 'y@example.com',
      'created_by[id]': '999',
      'counts[comments]': '5',
      sort: String(original.sort + 12345),
      archived: 'false',
      limit: '100',
      offset: '0',
      order_by: 'newest',
    });
    const item = assertOk(res);
    assert.equal(item.title, 'Round trip, edited');
    assert.equal(item.number, original.number);
    assert.equal(item.type, 'task', 'type is fixed at creation');
    assert.equal(item.created_at, original.created_at);
    assert.equal(item.short_url, original.short_url);
    assert.equal(item.product.id, productId);
    assert.deepEqual(item.email, original.email);
    assert.deepEqual(item.created_by, original.created_by);
    assert.equal(item.sort, original.sort);
    assert.equal(item.archived, false);
    assert.deepEqual(item.tags, ['x', 'y']);
  });

  test('an item posted back whole as JSON is accepted; nested read-only objects are ignored', async () => {
    const original = await makeItem(t.app, owner, productId, { title: 'JSON round trip', tags: 'p,q' });
    const url = `/api/products/${productId}/items/${original.number}.json`;
    const res = await api().postJson(url, {
      ...original,
      title: 'JSON round trip, edited',
      sort: original.sort + 7,
      limit: 100,
    });
    const item = assertOk(res);
    assert.equal(item.title, 'JSON round trip, edited');
    assert.equal(item.number, original.number);
    assert.equal(item.sort, original.sort);
    assert.equal(item.created_at, original.created_at);
    assert.deepEqual(item.created_by, original.created_by);
    assert.deepEqual(item.tags, ['p', 'q']);
    assert.equal(item.assigned_to, null);
  });

  test('listing ignores unknown query parameters', async () => {
    const res = await api().get(items, { frobnicate: '1', sort: 'x', 'product[id]': '5' });
    assert.deepEqual(assertOk(res), assertOk(await api().get(items)));
  });
});

describe('lists', () => {
  test('comma lists are trimmed and empty entries dropped', async () => {
    const item = assertOk(
      await api().post(items, { type: 'task', title: 'Tagged', tags: ' alpha , beta,,  gamma delta ,, ' }),
    );
    assert.deepEqual(item.tags, ['alpha', 'beta', 'gamma delta']);

    const listed = assertOk(
      await api().get(items, { status: ' backlog , ,in-progress ,', tags: ' alpha ,, gamma delta ' }),
    );
    assert.deepEqual(
      listed.map((i: { number: number }) => i.number),
      [item.number],
    );
  });

  test('a JSON body may give lists as arrays', async () => {
    const item = assertOk(
      await api().postJson(items, { type: 'task', title: 'Array tags', tags: ['first tag', ' second ', 'third'] }),
    );
    assert.deepEqual(item.tags, ['first tag', 'second', 'third']);

    const deploy = assertOk(
      await api().postJson(`/api/products/${productId}/deploys.json`, {
        environment: 'staging',
        numbers: [item.number],
      }),
    );
    assert.deepEqual(
      deploy.items.map((i: { number: number }) => i.number),
      [item.number],
    );
  });

  test('a JSON body may give integers and booleans as JSON values', async () => {
    const story = await makeItem(t.app, owner, productId, {
      type: 'story',
      who: 'tester',
      what: 'json numbers',
      why: 'clients send them',
    });
    const child = assertOk(await api().postJson(items, { type: 'task', title: 'JSON child', parent: story.number }));
    assert.equal(child.parent.number, story.number);
  });
});

describe('booleans and integers', () => {
  let story: any;
  let child: any;
  before(async () => {
    story = await makeItem(t.app, owner, productId, {
      type: 'story',
      who: 'reader',
      what: 'sub-items',
      why: 'I see them',
    });
    child = await makeItem(t.app, owner, productId, { type: 'task', title: 'A sub-item', parent: story.number });
  });

  test('children accepts true/1/yes/y and false/0/no/n in any case', async () => {
    const numbers = async (value: string) => {
      const res = await api().get(items, { children: value, limit: '500' });
      return assertOk(res, `children=${value}`).map((i: { number: number }) => i.number) as number[];
    };
    for (const value of ['true', '1', 'yes', 'y', 'TRUE', 'True', 'YES', 'Y', 'yEs']) {
      assert.ok((await numbers(value)).includes(child.number), `children=${value} should list sub-items`);
    }
    for (const value of ['false', '0', 'no', 'n', 'FALSE', 'False', 'NO', 'N', 'nO']) {
      assert.ok(!(await numbers(value)).includes(child.number), `children=${value} should not list sub-items`);
    }
  });

  test('any other boolean value is 400', async () => {
    for (const value of ['maybe', '2', 'on', 'off', 't', 'f', 'yess', 'truee', '-1']) {
      assertError(await api().get(items, { children: value }), 400, {
        errors: ['children'],
        label: `children=${value}`,
      });
    }
  });

  test('limit and offset must be non-negative decimal integers', async () => {
    for (const name of ['limit', 'offset']) {
      for (const value of ['abc', '1.5', '-1', '1e2', '0x10', '10abc']) {
        assertError(await api().get(items, { [name]: value }), 400, { label: `items ${name}=${value}` });
        assertError(await api().get(`/api/products/${productId}/deploys.json`, { [name]: value }), 400, {
          label: `deploys ${name}=${value}`,
        });
      }
    }
  });

  test('limit=0 is 400', async () => {
    assertError(await api().get(items, { limit: '0' }), 400, { label: 'items' });
    assertError(await api().get(`/api/products/${productId}/deploys.json`, { limit: '0' }), 400, { label: 'deploys' });
  });

  test('limit above 500 is taken as 500', async () => {
    const own = await makeProduct(t.db, owner, [], 'Long list');
    const at = '2026-01-01T00:00:00+00:00';
    await t.db
      .insertInto('items')
      .values(
        Array.from({ length: 501 }, (_, i) => ({
          product_id: own.id,
          number: i + 1,
          type: 'task',
          status: 1,
          title: `Item ${i + 1}`,
          who: null,
          what: null,
          why: null,
          description: '',
          score: '~',
          archived: 0,
          created_by_id: owner.user.id,
          assigned_to_id: null,
          parent_id: null,
          sort: (i + 1) * 65536,
          close_reason: null,
          started_at: null,
          closed_at: null,
          accepted_at: null,
          created_at: at,
          last_modified: at,
          last_activity: at,
        })),
      )
      .execute();
    await t.db.updateTable('products').set({ last_number: 501 }).where('id', '=', own.id).execute();
    const first500 = Array.from({ length: 500 }, (_, i) => i + 1);
    for (const value of ['500', '501', '100000']) {
      const res = await api().get(`/api/products/${own.id}/items.json`, { limit: value });
      assert.deepEqual(
        assertOk(res, `limit=${value}`).map((i: { number: number }) => i.number),
        first500,
        `limit=${value}`,
      );
      assert.equal(res.headers['x-sprintly-item-count'], '501');
    }
  });

  test('valid limit and offset page the list', async () => {
    const own = await makeProduct(t.db, owner, [], 'Paged list');
    for (let i = 0; i < 3; i++) await makeItem(t.app, owner, own.id);
    const list = async (query: Record<string, string>) =>
      assertOk(await api().get(`/api/products/${own.id}/items.json`, query), JSON.stringify(query)).map(
        (i: { number: number }) => i.number,
      );
    assert.deepEqual(await list({ limit: '500' }), [1, 2, 3]);
    assert.deepEqual(await list({ limit: '2', offset: '1' }), [2, 3]);
    assert.deepEqual(await list({ offset: '0' }), [1, 2, 3]);
    assert.deepEqual(await list({ offset: '3' }), []);
  });
});

describe('responses', () => {
  test('are application/json; charset=utf-8', async () => {
    const item = await makeItem(t.app, owner, productId, { title: 'Content type' });
    const responses: [string, LightMyRequestResponse][] = [
      ['whoami', await api().get('/api/user/whoami.json')],
      ['products', await api().get('/api/products.json')],
      ['list items', await api().get(items)],
      ['create item', await api().post(items, { type: 'task', title: 'ct' })],
      ['fetch item', await api().get(`/api/products/${productId}/items/${item.number}.json`)],
      ['deploys', await api().get(`/api/products/${productId}/deploys.json`)],
      ['400', await api().get(items, { limit: '0' })],
      ['403', await t.app.inject({ method: 'GET', url: '/api/user/whoami.json' })],
      ['404 item', await api().get(`/api/products/${productId}/items/99999.json`)],
      ['404 route', await api().get('/api/nothing-here.json')],
    ];
    for (const [label, res] of responses) assert.equal(res.headers['content-type'], JSON_TYPE, label);
  });

  test('success is 200, creations included', async () => {
    const res = await api().post(items, { type: 'task', title: 'Status code' });
    assert.equal(res.statusCode, 200);
  });

  test('timestamps are ISO 8601 UTC with second precision and a numeric offset', async () => {
    const created = await makeItem(t.app, owner, productId, { title: 'Timestamps', status: 'accepted' });
    const deploy = assertOk(
      await api().post(`/api/products/${productId}/deploys.json`, {
        environment: 'production',
        numbers: String(created.number),
      }),
    );
    const item = assertOk(await api().get(`/api/products/${productId}/items/${created.number}.json`));
    const me = assertOk(await api().get('/api/user/whoami.json'));

    const stamps: Record<string, unknown> = {
      'item.created_at': item.created_at,
      'item.last_modified': item.last_modified,
      'item.last_activity': item.last_activity,
      'item.progress.started_at': item.progress.started_at,
      'item.progress.closed_at': item.progress.closed_at,
      'item.progress.accepted_at': item.progress.accepted_at,
      'item.deployed_to[0].deployed_at': item.deployed_to[0]?.deployed_at,
      'item.created_by.created_at': item.created_by.created_at,
      'deploy.created_at': deploy.created_at,
      'deploy.user.created_at': deploy.user.created_at,
      'whoami.created_at': me.created_at,
      'whoami.last_login': me.last_login,
    };
    for (const [label, value] of Object.entries(stamps)) assert.match(String(value), TIMESTAMP, label);
  });

  test('strings are stored and returned exactly, nothing HTML-escaped', async () => {
    const title = '<script>alert("x & y")</script> Ünïcödé 🚀 — “quotes” \'single\' &amp; 日本';
    const description = [
      '# Heading',
      '',
      '* **bold** and _italic_ <b>html</b> &nbsp; &lt;already&gt;',
      '',
      '```js',
      'if (a < b && c > d) { return "x"; }',
      '```',
      '',
      '> quote\ttab\r\nCRLF line  ',
      '',
    ].join('\n');
    const tags = ['<i>tag</i>', 'ça & là', '🏷️ emoji'];
    for (const [label, send] of [
      ['form', () => api().post(items, { type: 'task', title, description, tags: tags.join(',') })],
      ['json', () => api().postJson(items, { type: 'task', title, description, tags })],
    ] as const) {
      const res = await send();
      const created = assertOk(res, label);
      assert.equal(created.title, title, label);
      assert.equal(created.description, description, label);
      assert.deepEqual(created.tags, tags, label);
      assert.ok(res.body.includes('<script>alert('), `${label}: the raw body escapes <`);
      assert.ok(!res.body.includes('&lt;script'), `${label}: the raw body HTML-escapes`);

      const fetched = assertOk(await api().get(`/api/products/${productId}/items/${created.number}.json`), label);
      assert.equal(fetched.title, title, label);
      assert.equal(fetched.description, description, label);
      assert.deepEqual(fetched.tags, tags, label);
    }
  });

  test('story parts are stored exactly too', async () => {
    const story = assertOk(
      await api().post(items, { type: 'story', who: 'admin <b>', what: 'to see "Ü & ß"', why: '**it matters**' }),
    );
    assert.equal(story.who, 'admin <b>');
    assert.equal(story.what, 'to see "Ü & ß"');
    assert.equal(story.why, '**it matters**');
    assert.equal(story.title, 'As an admin <b>, I want to see "Ü & ß" so that **it matters**.');
  });
});

describe('errors', () => {
  test('an unknown route is 404 in the error shape', async () => {
    assertError(await api().get('/api/nothing-here.json'), 404, { label: 'unknown api path' });
    assertError(await api().get('/nothing'), 404, { label: 'outside /api' });
    assertError(await api().get(`/api/products/${productId}/items/1/nothing.json`), 404, {
      label: 'unknown product sub-path',
    });
    assertError(await api().post('/api/nothing-here.json', { a: '1' }), 404, { label: 'unknown POST' });
    assertError(await api().get(`/api/products/${productId}/items`), 404, { label: 'path without .json' });
  });

  test('an invalid JSON body is 400 in the error shape', async () => {
    for (const payload of ['{"type": "task",', '{type: task}', 'not json', '{"title": "x"} trailing']) {
      assertError(await rawPost(items, 'application/json', payload), 400, { label: payload });
    }
  });

  test('a body over 1 MiB is 413 in the error shape', async () => {
    const big = 'a'.repeat(1024 * 1024 + 1);
    assertError(
      await rawPost(items, 'application/x-www-form-urlencoded', `type=task&title=big&description=${big}`),
      413,
      { label: 'form' },
    );
    assertError(
      await rawPost(items, 'application/json', JSON.stringify({ type: 'task', title: 'big', description: big })),
      413,
      { label: 'json' },
    );
  });

  test('a body just under 1 MiB is read (and its too-long description refused as 400)', async () => {
    const res = await rawPost(
      items,
      'application/x-www-form-urlencoded',
      `type=task&title=big&description=${'a'.repeat(1000 * 1000)}`,
    );
    assertError(res, 400, { errors: ['description'], label: 'description too long' });
  });

  test('an unsupported content type is 400 in the error shape', async () => {
    assertError(await rawPost(items, 'text/plain', 'type=task&title=plain'), 400, { label: 'text/plain' });
    assertError(await rawPost(items, 'application/xml', '<item><type>task</type></item>'), 400, {
      label: 'application/xml',
    });
  });

  test('nothing a client sends produces a 500', async () => {
    const attempts: Array<[string, LightMyRequestResponse, number, string[]?]> = [
      ['a JSON array', await rawPost(items, 'application/json', '[1,2,3]'), 400],
      ['JSON null', await rawPost(items, 'application/json', 'null'), 400],
      ['a JSON string', await rawPost(items, 'application/json', '"a string"'), 400],
      [
        'arrays and objects as values',
        await api().postJson(items, { type: ['task', 'story'], title: { nested: true } }),
        400,
      ],
      ['a number as title', await api().postJson(items, { type: 'task', title: 12345 }), 200],
      [
        'repeated status and limit',
        await api().get(items, { status: ['backlog', 'in-progress'], limit: ['1', '2'] }),
        200,
      ],
      ['a huge item number', await api().get(`/api/products/${productId}/items/${'9'.repeat(40)}.json`), 404],
      ['a huge product id', await api().get(`/api/products/${'9'.repeat(40)}/items.json`), 404],
      ['a NUL in the title', await api().post(items, { type: 'task', title: '\u0000nul' }), 400, ['title']],
    ];
    for (const [label, res, status, errors] of attempts) {
      assert.equal(res.headers['content-type'], JSON_TYPE, label);
      if (status === 200) assertOk(res, label);
      else assertError(res, status, { errors, label });
    }
    assert.equal(attempts[4][1].json().title, '12345');
  });
});

describe('length limits', () => {
  test('a title of 256 characters is 400 naming title; 255 is accepted', async () => {
    assertError(await api().post(items, { type: 'task', title: 't'.repeat(256) }), 400, {
      errors: ['title'],
      label: 'title 256',
    });
    assert.equal(assertOk(await api().post(items, { type: 'task', title: 't'.repeat(255) })).title, 't'.repeat(255));
  });

  test('lengths count characters, not bytes or UTF-16 units', async () => {
    const emoji = '😀'.repeat(255);
    assert.equal(assertOk(await api().post(items, { type: 'task', title: emoji }), 'emoji title').title, emoji);
    const accents = 'é'.repeat(255);
    assert.equal(assertOk(await api().post(items, { type: 'task', title: accents }), 'accented title').title, accents);
    assertError(await api().post(items, { type: 'task', title: 'é'.repeat(256) }), 400, {
      label: 'accented title 256',
    });
  });

  test('an update with a title of 256 characters is 400', async () => {
    const item = await makeItem(t.app, owner, productId, { title: 'Short' });
    const url = `/api/products/${productId}/items/${item.number}.json`;
    assertError(await api().post(url, { title: 'u'.repeat(256) }), 400, {
      errors: ['title'],
      label: 'update title 256',
    });
    assert.equal(assertOk(await api().get(url)).title, 'Short');
  });

  test('story parts over 255 characters are 400', async () => {
    for (const part of ['who', 'what', 'why']) {
      const params = { type: 'story', who: 'w', what: 'x', why: 'y', [part]: 'p'.repeat(256) };
      assertError(await api().post(items, params), 400, { label: part });
    }
  });

  test('a description of 65,536 characters is 400; 65,535 is accepted', async () => {
    assertError(await api().post(items, { type: 'task', title: 'Long', description: 'd'.repeat(65536) }), 400, {
      label: 'description 65536',
    });
    const item = assertOk(await api().post(items, { type: 'task', title: 'Long', description: 'd'.repeat(65535) }));
    assert.equal(item.description.length, 65535);
  });

  test('a tag of 65 characters is 400; 64 is accepted', async () => {
    assertError(await api().post(items, { type: 'task', title: 'Tag', tags: `ok,${'g'.repeat(65)}` }), 400, {
      label: 'tag 65',
    });
    const item = assertOk(await api().post(items, { type: 'task', title: 'Tag', tags: 'g'.repeat(64) }));
    assert.deepEqual(item.tags, ['g'.repeat(64)]);
  });

  test('deploy environment and version over 255 characters are 400', async () => {
    const item = await makeItem(t.app, owner, productId, { title: 'Deployable' });
    const deploys = `/api/products/${productId}/deploys.json`;
    assertError(await api().post(deploys, { environment: 'e'.repeat(256), numbers: String(item.number) }), 400, {
      label: 'environment',
    });
    assertError(
      await api().post(deploys, { environment: 'prod', version: 'v'.repeat(256), numbers: String(item.number) }),
      400,
      { label: 'version' },
    );
    assertError(
      await api().post(deploys, { environment: 'prod', notes: 'n'.repeat(65536), numbers: String(item.number) }),
      400,
      { label: 'notes' },
    );
  });
});

describe('absolute-form request line', () => {
  test('GET http://host:port/api/... is routed on its path', async () => {
    const ctx = await makeApp();
    const user = await makeUser(ctx.db);
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = new net.Socket();
    try {
      const address = ctx.app.server.address();
      assert.ok(address && typeof address === 'object');
      const port = address.port;
      const raw = await new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('error', reject);
        socket.setTimeout(5000, () => reject(new Error('no response within 5 s')));
        socket.connect(port, '127.0.0.1', () => {
          socket.write(
            [
              `GET http://127.0.0.1:${port}/api/user/whoami.json HTTP/1.1`,
              `Host: 127.0.0.1:${port}`,
              `Authorization: ${user.auth}`,
              'Connection: close',
              '',
              '',
            ].join('\r\n'),
          );
        });
      });
      const [head, ...rest] = raw.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 200 /, head);
      assert.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      const body = JSON.parse(rest.join('\r\n\r\n'));
      assert.equal(body.id, user.user.id);
      assert.equal(body.email, user.email);
    } finally {
      socket.destroy();
      await ctx.close();
    }
  });
});
