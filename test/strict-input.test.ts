import assert from 'node:assert/strict';
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

let t: TestContext;
let owner: TestUser;
let member: TestUser;
let productId: number;
let base: string;
let story: number;
let task: number;

before(async () => {
  t = await makeApp();
  owner = await makeUser(t.db);
  member = await makeUser(t.db);
  productId = (await makeProduct(t.db, owner, [member])).id;
  base = `/api/products/${productId}`;
  story = (await makeItem(t.app, owner, productId, { type: 'story', who: 'a user', what: 'x', why: 'y', tags: 'kept' }))
    .number;
  task = (await makeItem(t.app, owner, productId, { title: 'Assigned', assigned_to: member.user.id, tags: 'other' }))
    .number;
});
after(() => t.close());

const api = () => client(t.app, owner);

/** A request with an exact body, as a client puts it on the wire. */
function raw(
  method: 'GET' | 'POST',
  url: string,
  contentType?: string,
  payload?: string | Buffer,
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { authorization: owner.auth };
  if (contentType) headers['content-type'] = contentType;
  return t.app.inject({ method, url, headers, payload });
}
const form = (url: string, payload: string | Buffer) => raw('POST', url, 'application/x-www-form-urlencoded', payload);

/** A 400 in the interface's shape whose `errors` name `param`, and only it. */
const assertRefused = (res: LightMyRequestResponse, param: string, label = param) =>
  assertError(res, 400, { errors: [param], label });

const numbersOf = (items: Array<{ number: number }>) => items.map((i) => i.number);

describe('array-style and nested keys', () => {
  test('name[] for a parameter the endpoint reads is a 400 naming it, in the query and in the body', async () => {
    assertRefused(await raw('GET', `${base}/items.json?tags[]=kept`), 'tags', 'list tags[]');
    assertRefused(
      await raw('GET', `${base}/items.json?status[]=backlog&status[]=completed`),
      'status',
      'list status[]',
    );
    assertRefused(
      await form(`${base}/deploys.json`, `environment=prod&numbers[]=${story}&numbers[]=${task}`),
      'numbers',
      'deploy numbers[]',
    );
    assertRefused(
      await raw(
        'POST',
        `${base}/deploys.json?numbers[]=${story}`,
        'application/x-www-form-urlencoded',
        'environment=prod',
      ),
      'numbers',
      'deploy numbers[] in the query',
    );
    assertRefused(await form(`${base}/items/${task}.json`, 'tags[]=a&tags[]=b'), 'tags', 'update tags[]');
    assertRefused(
      await form(`${base}/items/${task}.json`, 'assigned_to[id][$gt]=0'),
      'assigned_to',
      'nested assigned_to',
    );
    assertRefused(await form(`${base}/items/${task}.json`, `title=x&title[x]=y`), 'title', 'title given twice over');
    // Nothing was changed by the refused requests.
    const item = (await api().get(`${base}/items/${task}.json`)).json();
    assert.deepEqual(item.tags, ['other']);
    assert.equal(item.assigned_to.id, member.user.id);
    assert.equal(item.title, 'Assigned');
  });

  test('bracketed keys of parameters not read are ignored, as a whole item posted back carries them', async () => {
    const res = await form(
      `${base}/items/${task}.json`,
      'title=Renamed&product[id]=99&product[name]=Other&email[files]=f%40x&progress[started_at]=2020' +
        '&counts[blockers]=3&deployed_to[0][environment]=prod',
    );
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().title, 'Renamed');
    assert.equal(res.json().product.name, 'Test product');
  });

  test('assigned_to[id] and parent[number] read like the embedded objects of JSON', async () => {
    const sub = await makeItem(t.app, owner, productId, { title: 'Sub' });
    const res = await form(
      `${base}/items/${sub.number}.json`,
      `assigned_to[id]=${member.user.id}&assigned_to[email]=x&parent[number]=${story}`,
    );
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().assigned_to.id, member.user.id);
    assert.equal(res.json().parent.number, story);
  });
});

describe('objects where a value is expected', () => {
  test('an operator object instead of an id is a 400 and changes nothing', async () => {
    assertRefused(
      await api().postJson(`${base}/items/${task}.json`, { assigned_to: { id: { $gt: 0 } } }),
      'assigned_to',
    );
    assertRefused(
      await api().postJson(`${base}/items/${task}.json`, { assigned_to: {} }),
      'assigned_to',
      'empty object',
    );
    assertRefused(await api().postJson(`${base}/items/${task}.json`, { parent: { number: { $ne: 0 } } }), 'parent');
    assertRefused(
      await api().postJson(`${base}/items.json`, { type: 'task', title: 'x', created_by: { id: [1] } }),
      'created_by',
    );
    assert.equal((await api().get(`${base}/items/${task}.json`)).json().assigned_to.id, member.user.id);
  });

  test('objects for text, lists, enums and numbers are a 400 naming the parameter', async () => {
    assertRefused(await api().postJson(`${base}/items/${task}.json`, { title: { $ne: '' } }), 'title');
    assertRefused(await api().postJson(`${base}/items/${task}.json`, { status: { $in: ['backlog'] } }), 'status');
    assertRefused(await api().postJson(`${base}/items/${task}.json`, { tags: { a: 1 } }), 'tags');
    assertRefused(
      await api().postJson(`${base}/deploys.json`, { environment: 'prod', numbers: { 0: story } }),
      'numbers',
    );
    assertRefused(await api().postJson(`${base}/items/${task}/resort.json`, { before: { $gt: 0 } }), 'before');
  });

  test('embedded objects with a plain id or number, and JSON arrays for lists, are read', async () => {
    const res = await api().postJson(`${base}/items/${task}.json`, {
      assigned_to: { id: owner.user.id, first_name: 'whatever' },
      tags: ['a', 'b'],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().assigned_to.id, owner.user.id);
    assert.deepEqual(res.json().tags, ['a', 'b']);
    const deploy = await api().postJson(`${base}/deploys.json`, { environment: 'json', numbers: [story, task] });
    assert.equal(deploy.statusCode, 200, deploy.body);
    assert.deepEqual(numbersOf(deploy.json().items), [story, task]);
  });
});

describe('numbers too large for what they name', () => {
  const HUGE = '99999999999999999999';
  const ABOVE = '2147483648';

  test('an item number of any length names nothing: 404 alike, skipped alike in a deploy', async () => {
    for (const n of [ABOVE, HUGE]) {
      assert.equal((await api().get(`${base}/items/${n}.json`)).statusCode, 404, `fetch ${n}`);
      assert.equal(
        (await api().post(`${base}/items.json`, { type: 'task', title: 'x', parent: n })).statusCode,
        404,
        `parent ${n}`,
      );
      assert.equal(
        (await api().post(`${base}/items/${task}/resort.json`, { before: n })).statusCode,
        404,
        `resort ${n}`,
      );
      assert.equal(
        (await api().post(`${base}/items.json`, { type: 'task', title: 'x', assigned_to: n })).statusCode,
        404,
        `assigned_to ${n}`,
      );
      assert.equal((await api().get(`${base}/items.json`, { created_by: n })).statusCode, 404, `created_by ${n}`);
      const alone = await api().post(`${base}/deploys.json`, { environment: 'big', numbers: n });
      assert.equal(alone.statusCode, 400, `deploy of ${n} alone: ${alone.body}`);
      assert.equal(alone.json().errors, undefined, 'refused as naming no item, not as malformed');
      const mixed = await api().post(`${base}/deploys.json`, { environment: 'big', numbers: `${story},${n}` });
      assert.equal(mixed.statusCode, 200, `deploy ${n}: ${mixed.body}`);
      assert.deepEqual(numbersOf(mixed.json().items), [story]);
    }
  });

  test("a huge limit is capped; a huge offset lies past the end, or past the item lists' bound (400)", async () => {
    const own = await makeProduct(t.db, owner, [], 'Huge pages');
    const ownBase = `/api/products/${own.id}`;
    for (let i = 0; i < 3; i++) await makeItem(t.app, owner, own.id);
    await api().post(`${ownBase}/deploys.json`, { environment: 'prod', numbers: '1' });
    const all = await api().get(`${ownBase}/items.json`, { limit: HUGE });
    assert.equal(all.statusCode, 200, all.body);
    assert.deepEqual(
      all.json().map((i: { number: number }) => i.number),
      [1, 2, 3],
    );
    assert.equal(all.headers['x-sprintly-item-count'], '3');
    const past = await api().get(`${ownBase}/items.json`, { offset: 100_000 });
    assert.equal(past.statusCode, 200, past.body);
    assert.deepEqual(past.json(), []);
    assert.equal(past.headers['x-sprintly-item-count'], '3');
    // Item list pages start at most 100,000 entries deep (see limits.test.ts): a huge offset is past that.
    assertError(await api().get(`${ownBase}/items.json`, { offset: HUGE }), 400, { errors: ['offset'] });
    const deploys = await api().get(`${ownBase}/deploys.json`, { limit: HUGE });
    assert.equal(deploys.json().length, 1);
    const deploysPast = await api().get(`${ownBase}/deploys.json`, { offset: HUGE, limit: HUGE });
    assert.equal(deploysPast.statusCode, 200, deploysPast.body);
    assert.deepEqual(deploysPast.json(), []);
    assert.equal(deploysPast.headers['x-sprintly-deploy-count'], '1');
  });
});

describe('text is valid Unicode or refused', () => {
  test('a lone surrogate in JSON text is a 400 naming the parameter', async () => {
    for (const title of ['\ud800', 'a\udc00b', 'end\ud83d']) {
      assertRefused(
        await api().postJson(`${base}/items.json`, { type: 'task', title }),
        'title',
        JSON.stringify(title),
      );
    }
    assertRefused(await api().postJson(`${base}/items/${task}.json`, { tags: ['ok', 'bad\ud800'] }), 'tags');
    assertRefused(
      await api().postJson(`${base}/deploys.json`, { environment: 'prod', numbers: [story], notes: '\udfff' }),
      'notes',
    );
  });

  test('percent-escapes that are not UTF-8 are a 400 naming the parameter, in bodies and query strings', async () => {
    for (const escaped of ['%ED%A0%80', '%FF', '%E2%82', '50%off']) {
      assertRefused(await form(`${base}/items.json`, `type=task&title=${escaped}`), 'title', escaped);
    }
    assertRefused(await raw('GET', `${base}/items.json?tags=%FF`), 'tags', 'query');
    // A parameter nobody reads stays ignored, whatever it holds.
    assert.equal((await raw('GET', `${base}/items.json?unused=%FF`)).statusCode, 200);
  });

  test('a body that is not UTF-8 is refused in the error shape', async () => {
    const bad = Buffer.concat([Buffer.from('type=task&title='), Buffer.from([0xff, 0xfe])]);
    const res = await form(`${base}/items.json`, bad);
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message']);
    const json = Buffer.concat([Buffer.from('{"type":"task","title":"'), Buffer.from([0xc3]), Buffer.from('"}')]);
    assert.equal((await raw('POST', `${base}/items.json`, 'application/json', json)).statusCode, 400);
  });

  test('text outside the Basic Multilingual Plane is stored exactly', async () => {
    const title = 'Ship 🚀 𝄞 ok';
    const viaJson = await api().postJson(`${base}/items.json`, { type: 'task', title });
    assert.equal(viaJson.json().title, title);
    const viaForm = await form(`${base}/items.json`, `type=task&title=${encodeURIComponent(title)}`);
    assert.equal(viaForm.json().title, title);
    const fetched = await api().get(`${base}/items/${viaForm.json().number}.json`);
    assert.equal(fetched.json().title, title);
  });
});
