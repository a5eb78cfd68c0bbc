import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  advanceClock,
  client,
  deliveredMail,
  invitationPath,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  signInByMail,
  type TestContext,
} from './helpers.js';

/* The team's work in the pages: products, people and invitations, an item's parent, archiving, replays. */

let t: TestContext;
before(async () => {
  t = await makeApp({ env: { WEBHOOKS_ALLOW_PRIVATE: '1' } });
});
after(() => t.close());

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
const post = (url: string, cookie: string, fields: Record<string, string>) =>
  t.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body.slice(0, 300)}`);
  return match[1];
}

async function signedIn() {
  const ada = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
  const cookie = await signInByMail(t, ada.email);
  const csrf = csrfOf(await page('/app/products', cookie));
  return { ada, cookie, csrf };
}

describe('making a product on the products page', () => {
  test('makes the signed-in person its admin and leads to its people', async () => {
    const { ada, cookie, csrf } = await signedIn();
    const list = await page('/app/products', cookie);
    assert.match(list.body, /<form class="new-product" method="post" action="\/app\/products">/);
    assert.match(list.body, /<a href="\/docs">API docs<\/a>/, 'the navigation links the API docs');

    const refused = await post('/app/products', cookie, { csrf, name: '   ' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /id="error-name" role="alert">name is required/);

    const made = await post('/app/products', cookie, { csrf, name: 'Made on a page' });
    assert.equal(made.statusCode, 303, made.body);
    const location = String(made.headers.location);
    const id = /^\/app\/products\/(\d+)\/people\?done=created$/.exec(location)?.[1];
    assert.ok(id, location);
    const products = (await client(t.app, ada).get('/api/products.json')).json();
    assert.deepEqual(
      products.map((p: { id: number; name: string; admin: boolean }) => [p.id, p.name, p.admin]),
      [[Number(id), 'Made on a page', true]],
    );
    const people = await page(location, cookie);
    assert.equal(people.statusCode, 200);
    assert.match(people.body, /Product created\. Invite the people who work on it\./);

    assert.equal((await post('/app/products', cookie, { name: 'No token' })).statusCode, 403);
  });
});

describe('an item on its page', () => {
  test('the edit form moves a task under another story or out of one; the type stays', async () => {
    const { ada, cookie } = await signedIn();
    const product = await makeProduct(t.db, ada);
    const api = client(t.app, ada);
    const first = await makeItem(t.app, ada, product.id, { type: 'story', who: 'a', what: 'b', why: 'c' });
    const second = await makeItem(t.app, ada, product.id, { type: 'story', who: 'd', what: 'e', why: 'f' });
    const task = await makeItem(t.app, ada, product.id, { type: 'task', title: 'Sub', parent: String(first.number) });
    const url = `/app/products/${product.id}/items/${task.number}`;
    const shown = await page(url, cookie);
    const form = shown.body.slice(shown.body.indexOf('<form class="item-form"'));
    const fields: Record<string, string> = {};
    for (const [, name, value] of form
      .slice(0, form.indexOf('</form>'))
      .matchAll(/<input [^>]*name="([^"]+)"[^>]*value="([^"]*)"/g))
      fields[name] = value;
    assert.equal(fields.parent, String(first.number));
    assert.match(shown.body, /This is a task: an item keeps the type it was made with\./);

    let res = await post(url, cookie, { ...fields, parent: String(second.number), description: '' });
    assert.equal(res.statusCode, 303, res.body);
    const moved = (await api.get(`/api/products/${product.id}/items/${task.number}.json`)).json();
    assert.equal(moved.parent.number, second.number);
    assert.equal(moved.type, 'task');

    res = await post(url, cookie, { ...fields, seen_parent: String(second.number), parent: '999', description: '' });
    assert.equal(res.statusCode, 400);
    assert.match(res.body, /id="error-parent"/);

    res = await post(url, cookie, { ...fields, seen_parent: String(second.number), parent: '', description: '' });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal((await api.get(`/api/products/${product.id}/items/${task.number}.json`)).json().parent, undefined);
  });

  test('archiving asks first, then archives as the API does', async () => {
    const { ada, cookie, csrf } = await signedIn();
    const product = await makeProduct(t.db, ada);
    const item = await makeItem(t.app, ada, product.id, { title: 'To be archived' });
    const url = `/app/products/${product.id}/items/${item.number}`;
    assert.ok((await page(url, cookie)).body.includes(`href="${url}/archive"`));
    const confirm = await page(`${url}/archive`, cookie);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Archive <a href="[^"]+">#\d+ To be archived<\/a>\?/);
    assert.match(confirm.body, /cannot be undone/);
    const stored = async () =>
      (await client(t.app, ada).get(`/api/products/${product.id}/items/${item.number}.json`)).json();
    assert.equal((await stored()).archived, false, 'asking changes nothing');

    const done = await post(`${url}/archive`, cookie, { csrf });
    assert.equal(done.statusCode, 303);
    assert.equal(done.headers.location, `${url}?done=archived`);
    assert.equal((await stored()).archived, true);
    const after = await page(String(done.headers.location), cookie);
    assert.match(after.body, /The item is archived/);
    assert.ok(!after.body.includes(`href="${url}/archive"`), 'no second archive');
  });
});

describe('webhook deliveries', () => {
  test('a delivery is replayed from the deliveries page, as a new delivery', async () => {
    const { ada, cookie, csrf } = await signedIn();
    const product = await makeProduct(t.db, ada);
    const api = `/api/products/${product.id}`;
    const hook = (
      await client(t.app, ada).post(`${api}/webhooks.json`, { url: 'http://127.0.0.1:9/hook', events: 'item.created' })
    ).json();
    await makeItem(t.app, ada, product.id);
    const deliveries = async () =>
      (await client(t.app, ada).get(`${api}/webhooks/${hook.id}/deliveries.json`)).json() as {
        delivery_id: string;
        replay: number;
      }[];
    const [original] = await deliveries();
    const url = `/app/products/${product.id}/webhooks/${hook.id}`;
    const shown = await page(url, cookie);
    const action = `${url}/deliveries/${original.delivery_id}/replay`;
    assert.ok(shown.body.includes(`action="${action}"`), 'each delivery has its replay button');

    const res = await post(action, cookie, { csrf });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `${url}?replayed=1`);
    const now = await deliveries();
    assert.equal(now.length, 2);
    assert.equal(now.filter((d) => d.replay > 0).length, 1);
    assert.match((await page(`${url}?replayed=1`, cookie)).body, /Sent again as a new delivery/);

    // A delivery of another webhook is not replayed through this one.
    const other = (
      await client(t.app, ada).post(`${api}/webhooks.json`, { url: 'http://127.0.0.1:9/other', events: 'item.created' })
    ).json();
    const elsewhere = await post(
      `/app/products/${product.id}/webhooks/${other.id}/deliveries/${original.delivery_id}/replay`,
      cookie,
      {
        csrf,
      },
    );
    assert.equal(elsewhere.statusCode, 404);
  });
});

describe("the API's pending invitations", () => {
  test('admins list and cancel them; the links then stop working; members are refused', async () => {
    const ada = await makeUser(t.db);
    const bob = await makeUser(t.db);
    const product = await makeProduct(t.db, ada, [bob]);
    const p = `/api/products/${product.id}`;
    const admin = client(t.app, ada);
    assert.equal(
      (await admin.post(`${p}/people.json`, { email: 'api.invitee@example.com', admin: 'true' })).statusCode,
      200,
    );
    const link = await invitationPath(t, 'api.invitee@example.com');
    const listed = (await admin.get(`${p}/invitations.json`)).json();
    assert.deepEqual(
      listed.map((i: { email: string; admin: boolean }) => [i.email, i.admin]),
      [['api.invitee@example.com', true]],
    );
    assert.equal((await client(t.app, bob).get(`${p}/invitations.json`)).statusCode, 403);
    assert.equal((await client(t.app, bob).delete(`${p}/invitations/${listed[0].id}.json`)).statusCode, 403);
    const resent = await admin.post(`${p}/invitations/${listed[0].id}/resend.json`);
    assert.equal(resent.statusCode, 429, 'not again within 15 minutes');
    const cancelled = await admin.delete(`${p}/invitations/${listed[0].id}.json`);
    assert.equal(cancelled.statusCode, 200, cancelled.body);
    assert.equal(cancelled.json().email, 'api.invitee@example.com');
    assert.deepEqual((await admin.get(`${p}/invitations.json`)).json(), []);
    assert.equal((await t.app.inject({ method: 'POST', url: link })).statusCode, 410);
    assert.equal((await admin.delete(`${p}/invitations/${listed[0].id}.json`)).statusCode, 404);
  });
});

// Last: it moves the clock for the rest of the file.
describe('people and invitations', () => {
  test('members who are not admins, and invitations of other products, are refused', async () => {
    const { ada } = await signedIn();
    const bob = await makeUser(t.db);
    const product = await makeProduct(t.db, ada, [bob]);
    const other = await makeProduct(t.db, ada);
    const adaCookie = await signInByMail(t, ada.email);
    const adaCsrf = csrfOf(await page('/app/products', adaCookie));
    await post(`/app/products/${other.id}/people`, adaCookie, { csrf: adaCsrf, email: 'elsewhere@example.com' });
    const otherPage = await page(`/app/products/${other.id}/people`, adaCookie);
    const id = /\/people\/invitations\/(\d+)\/resend/.exec(otherPage.body)?.[1];
    assert.ok(id);
    const through = `/app/products/${product.id}/people/invitations/${id}/cancel`;
    assert.equal((await post(through, adaCookie, { csrf: adaCsrf })).statusCode, 404);

    const bobCookie = await signInByMail(t, bob.email);
    const bobCsrf = csrfOf(await page('/app/products', bobCookie));
    assert.equal((await page(`/app/products/${product.id}/people`, bobCookie)).statusCode, 403);
    const asBob = await post(`/app/products/${product.id}/people`, bobCookie, {
      csrf: bobCsrf,
      email: 'x@example.com',
    });
    assert.equal(asBob.statusCode, 403);
    assert.doesNotMatch((await page(`/app/products/${product.id}/board`, bobCookie)).body, />People</);
  });
  test('an admin invites, sees the invitation pending, sends it again, and cancels it after confirming', async () => {
    const { ada, cookie, csrf } = await signedIn();
    const bob = await makeUser(t.db);
    const product = await makeProduct(t.db, ada, [bob]);
    const people = `/app/products/${product.id}/people`;
    const shown = await page(people, cookie);
    assert.equal(shown.statusCode, 200);
    assert.match(shown.body, /No invitation is waiting for an answer\./);
    assert.ok(shown.body.includes(`<a href="${people}" aria-current="page">People</a>`));
    assert.ok(shown.body.includes(bob.email), 'members are listed');

    const bad = await post(people, cookie, { csrf, email: 'not an address' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /id="error-email"/);
    assert.ok(bad.body.includes('value="not an address"'), 'what was typed is kept');

    const invited = await post(people, cookie, { csrf, email: 'Ivy@Example.com', first_name: 'Ivy', admin: 'true' });
    assert.equal(invited.statusCode, 303, invited.body);
    assert.equal(invited.headers.location, `${people}?done=invited`);
    const firstLink = await invitationPath(t, 'ivy@example.com');
    let listed = await page(`${people}?done=invited`, cookie);
    assert.match(listed.body, /Invitation sent\./);
    assert.match(listed.body, /<td>ivy@example\.com <span class="muted">\(Ivy\)<\/span><\/td><td>admin<\/td>/);
    const id = /\/people\/invitations\/(\d+)\/resend/.exec(listed.body)?.[1];
    assert.ok(id);

    // Sent again by hand: not within 15 minutes of the last sending, then with a new link.
    const soon = await post(`${people}/invitations/${id}/resend`, cookie, { csrf });
    assert.equal(soon.statusCode, 429);
    assert.match(soon.body, /sent less than 15 minutes ago/);
    advanceClock(16 * 60_000);
    const mailsBefore = (await deliveredMail(t)).length;
    const resent = await post(`${people}/invitations/${id}/resend`, cookie, { csrf });
    assert.equal(resent.statusCode, 303, resent.body);
    assert.equal(resent.headers.location, `${people}?done=resent`);
    assert.equal((await deliveredMail(t)).length, mailsBefore + 1, 'one more message');
    const secondLink = await invitationPath(t, 'ivy@example.com');
    assert.notEqual(secondLink, firstLink);

    // Cancelling asks first; then every link sent stops working.
    const confirm = await page(`${people}/invitations/${id}/cancel`, cookie);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Cancel the invitation of <strong>ivy@example\.com<\/strong>/);
    assert.match(confirm.body, new RegExp(`<form method="post" action="${people}/invitations/${id}/cancel">`));
    const cancelled = await post(`${people}/invitations/${id}/cancel`, cookie, { csrf });
    assert.equal(cancelled.statusCode, 303);
    listed = await page(String(cancelled.headers.location), cookie);
    assert.match(listed.body, /Invitation cancelled/);
    assert.match(listed.body, /No invitation is waiting for an answer\./);
    for (const link of [firstLink, secondLink]) {
      assert.equal((await t.app.inject({ method: 'GET', url: link })).statusCode, 410, link);
      assert.equal((await t.app.inject({ method: 'POST', url: link })).statusCode, 410, link);
    }
    assert.equal((await post(`${people}/invitations/${id}/cancel`, cookie, { csrf })).statusCode, 404);

    // Invited again, the person gets a message at once, with a link that works.
    assert.equal((await post(people, cookie, { csrf, email: 'ivy@example.com' })).statusCode, 303);
    const third = await invitationPath(t, 'ivy@example.com');
    assert.equal((await t.app.inject({ method: 'GET', url: third })).statusCode, 200);
  });
});
