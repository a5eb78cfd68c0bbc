import assert from 'node:assert/strict';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  assertError,
  basic,
  client,
  deliveredMail,
  invitationPath as invitationLinkOf,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type ParsedMail,
  type TestContext,
  type TestUser,
  tempDir,
} from './helpers.js';
import { openDatabase } from '../src/db/connection.js';
import { GroupCommitSqliteDialect } from '../src/db/dialect.js';
import * as initial from '../src/db/migrations/2026_11_22_0001_initial.js';
import { databaseOptionsFor } from './storage.js';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

const mailbox = () => deliveredMail(t);

const to = (mails: ParsedMail[], email: string) =>
  mails.filter((m) => (m.headers.get('to') ?? '').toLowerCase().includes(email.toLowerCase()));

const invitationPath = (email: string) => invitationLinkOf(t, email);

function open(url: string, html = false): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url, headers: html ? { accept: 'text/html,application/xhtml+xml' } : {} });
}

function accept(url: string, params: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(params).toString(),
  });
}

/** Any user's own product, as anyone may create one. */
async function ownProduct(owner: TestUser, name = 'Own product'): Promise<number> {
  const res = await client(t.app, owner).post('/api/products.json', { name });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().id;
}

const invite = (admin: TestUser, productId: number, params: Record<string, string>) =>
  client(t.app, admin).post(`/api/products/${productId}/people.json`, params);

describe('adding a person sends an invitation and nothing else', () => {
  test("a stranger added to anyone's product gets one invitation, and no deploy mail", async () => {
    const attacker = await makeUser(t.db);
    const productId = await ownProduct(attacker, 'Spam machine');
    const victim = 'victim@external.example';

    const res = await invite(attacker, productId, { email: victim, first_name: 'V', last_name: 'X' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { email: victim, status: 'invited', admin: false });
    assert.equal(
      await t.db.selectFrom('users').select('id').where('email', '=', victim).executeTakeFirst(),
      undefined,
      'a user was created',
    );

    const item = await makeItem(t.app, attacker, productId, { title: 'Deployed at the victim' });
    const deployed = await client(t.app, attacker).post(`/api/products/${productId}/deploys.json`, {
      environment: 'production',
      numbers: String(item.number),
    });
    assert.equal(deployed.statusCode, 200, deployed.body);

    const mails = to(await mailbox(), victim);
    assert.equal(mails.length, 1, 'the stranger gets the invitation only');
    const [mail] = mails;
    assert.match(mail.headers.get('subject')!, /invites you to “Spam machine” on Shiplog/);
    assert.equal(mail.headers.get('to'), victim, 'the name the inviter typed is not used');
    assert.equal(mail.headers.has('list-unsubscribe'), false, 'an invitation is no subscription');
    assert.match(mail.text, /Nothing happens unless you accept/);
    assert.doesNotMatch(mail.text + mail.html, /\bV X\b/);
    const rows = await t.db
      .selectFrom('outbox')
      .select(['kind', 'user_id'])
      .where('to_address', 'like', `%${victim}%`)
      .execute();
    assert.deepEqual(rows, [{ kind: 'invitation', user_id: null }]);
  });

  test('an invited user cannot be assigned nor gets deploy mail until they accept; then they can and do', async () => {
    const admin = await makeUser(t.db);
    const productId = await ownProduct(admin, 'Consent product');
    const invitee = await makeUser(t.db);
    const item = await makeItem(t.app, admin, productId, { title: 'To be assigned' });

    assert.deepEqual((await invite(admin, productId, { email: invitee.email })).json(), {
      email: invitee.email,
      status: 'invited',
      admin: false,
    });
    const assign = await client(t.app, admin).post(`/api/products/${productId}/items/${item.number}.json`, {
      assigned_to: invitee.user.id,
    });
    assertError(assign, 404, { label: 'assigning an invitee' });
    assertError(
      await client(t.app, admin).post(`/api/products/${productId}/items.json`, {
        type: 'task',
        title: 'x',
        assigned_to: invitee.user.id,
      }),
      404,
      { label: 'creating for an invitee' },
    );
    assertError(await client(t.app, invitee).get(`/api/products/${productId}/items.json`), 403, {
      label: 'an invitee reads the product',
    });
    await client(t.app, admin).post(`/api/products/${productId}/deploys.json`, {
      environment: 'staging',
      numbers: String(item.number),
    });
    const link = await invitationPath(invitee.email);
    assert.equal(to(await mailbox(), invitee.email).length, 1, 'only the invitation');

    const accepted = await accept(link);
    assert.equal(accepted.statusCode, 200, accepted.body);
    const body = accepted.json();
    assert.equal(body.email, invitee.email);
    assert.deepEqual(body.product, { id: productId, name: 'Consent product', archived: false });
    assert.equal(body.api_key, undefined, 'an existing user keeps their key');
    assert.equal(body.user.id, invitee.user.id);

    const reassign = await client(t.app, admin).post(`/api/products/${productId}/items/${item.number}.json`, {
      assigned_to: invitee.user.id,
    });
    assert.equal(reassign.statusCode, 200, reassign.body);
    await client(t.app, admin).post(`/api/products/${productId}/deploys.json`, {
      environment: 'production',
      numbers: String(item.number),
    });
    const mails = to(await mailbox(), invitee.email);
    assert.equal(mails.length, 2);
    assert.match(mails[1].headers.get('subject')!, /Deployed to production/);
  });

  test('the product name the inviter chose is quoted and shortened in the subject and body', async () => {
    const attacker = await makeUser(t.db, { firstName: 'Sam', lastName: 'Sender' });
    const sentence =
      'Payroll”. Your Shiplog account is suspended: ' +
      'verify it at https://evil.example/verify within 24 hours or lose all your data';
    const productId = await ownProduct(attacker, `\u202e${sentence}`);
    const victim = 'quoted@external.example';
    assert.equal((await invite(attacker, productId, { email: victim })).statusCode, 200);
    const [mail] = to(await mailbox(), victim);
    assert.ok(mail);
    // 60 characters of the name at most, its own closing quote made straight, the reversal mark gone.
    const shown = '“Payroll". Your Shiplog account is suspended: verify it at h…”';
    assert.equal(mail.headers.get('subject'), `Sam Sender invites you to ${shown} on Shiplog`);
    assert.ok(mail.text.includes(`invites you to join the product ${shown} on Shiplog.`), mail.text);
    assert.ok(mail.text.includes(`you are not a member of ${shown},`), mail.text);
    assert.ok(String(mail.html).includes(`<strong>${shown.replaceAll('"', '&quot;')}</strong>`), String(mail.html));
    for (const body of [mail.text, String(mail.html), String(mail.headers.get('subject'))]) {
      assert.ok(!body.includes('evil.example/verify'), 'the rest of the name is not shown');
      assert.ok(!body.includes('\u202e'), 'no direction marks');
    }
    const short = await ownProduct(attacker, 'Ünïcode 🚀 product');
    const other = 'quoted2@external.example';
    assert.equal((await invite(attacker, short, { email: other })).statusCode, 200);
    assert.equal(
      to(await mailbox(), other)[0].headers.get('subject'),
      'Sam Sender invites you to “Ünïcode 🚀 product” on Shiplog',
      'a short name is whole',
    );
  });

  test('a member who is not an admin cannot invite', async () => {
    const admin = await makeUser(t.db);
    const member = await makeUser(t.db);
    const product = await makeProduct(t.db, admin, [member]);
    const before = (await t.db.selectFrom('outbox').select('id').execute()).length;
    assertError(
      await invite(member, product.id, { email: 'someone@example.com', first_name: 'S', last_name: 'O' }),
      403,
    );
    assertError(await invite(admin, product.id, { first_name: 'No', last_name: 'Email' }), 400);
    assertError(await invite(admin, product.id, { email: 'not an address' }), 400);
    assert.equal((await t.db.selectFrom('outbox').select('id').execute()).length, before);
    assert.equal(
      await t.db.selectFrom('invitations').select('id').where('product_id', '=', product.id).executeTakeFirst(),
      undefined,
    );
  });
});

describe('the invitation link', () => {
  test('GET shows what accepting does and changes nothing; POST creates the user once, key shown once', async () => {
    const admin = await makeUser(t.db, { firstName: 'Ada', lastName: 'Admin' });
    const productId = await ownProduct(admin, 'Onboarding <b>product</b>');
    const email = 'new.person@invited.example';
    await invite(admin, productId, {
      email: 'New.Person@Invited.example',
      first_name: 'New',
      last_name: 'Person',
      admin: 'true',
    });
    const link = await invitationPath(email);

    const page = await open(link, true);
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(
      page.body,
      /Ada Admin invites new\.person@invited\.example to join Onboarding &lt;b&gt;product&lt;\/b&gt; as an admin/,
    );
    assert.match(page.body, /<form method="post">/);
    assert.match(page.body, /name="first_name" value="New"/);
    const shown = await open(link);
    assert.equal(shown.statusCode, 200);
    const view = shown.json();
    assert.equal(view.email, email);
    assert.equal(view.has_account, false);
    assert.equal(view.accepted, false);
    assert.equal(view.admin, true);
    assert.deepEqual([view.first_name, view.last_name], ['New', 'Person']);
    assert.match(view.expires_at, TIMESTAMP);
    const days = (Date.parse(view.expires_at) - Date.now()) / 86400_000;
    assert.ok(days > 6.9 && days <= 7, `valid for ${days} days`);
    assert.equal(
      await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(),
      undefined,
      'GET created the user',
    );

    const res = await accept(link);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    assert.match(body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.equal(body.admin, true);
    assert.equal(body.user.first_name, 'New');
    assert.equal(body.user.last_name, 'Person');
    const me = await t.app.inject({
      method: 'GET',
      url: '/api/user/whoami.json',
      headers: { authorization: basic(email, body.api_key) },
    });
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().email, email);
    const product = await t.app.inject({
      method: 'GET',
      url: `/api/products/${productId}.json`,
      headers: { authorization: basic(email, body.api_key) },
    });
    assert.equal(product.json().admin, true);

    const again = await accept(link);
    assertError(again, 410, { label: 'a second acceptance' });
    const used = await open(link);
    assert.equal(used.json().accepted, true);
    assert.equal(used.json().has_account, true);
    assert.equal((await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).length, 1);
  });

  test('an address invited without a name gives one when accepting; the HTML answer shows the key', async () => {
    const admin = await makeUser(t.db);
    const productId = await ownProduct(admin);
    const email = 'nameless@invited.example';
    assert.equal((await invite(admin, productId, { email })).statusCode, 200);
    const link = await invitationPath(email);
    assertError(await accept(link), 400, { label: 'no name' });
    assert.equal(await t.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(), undefined);
    const res = await t.app.inject({
      method: 'POST',
      url: link,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      payload: 'first_name=Nora&last_name=Named',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    const key = /<code[^>]*>([A-Za-z0-9]{32})<\/code>/.exec(res.body)?.[1];
    assert.ok(key, res.body);
    const me = await t.app.inject({
      method: 'GET',
      url: '/api/user/whoami.json',
      headers: { authorization: basic(email, key) },
    });
    assert.equal(me.json().first_name, 'Nora');
  });

  test('forged, foreign and expired links are refused', async () => {
    const admin = await makeUser(t.db);
    const productId = await ownProduct(admin);
    const email = 'late@invited.example';
    await invite(admin, productId, { email, first_name: 'Late', last_name: 'Comer' });
    const link = await invitationPath(email);
    const [payload, signature] = link.slice('/invitations/'.length).split('.');

    const otherId = Buffer.from(
      Buffer.from(payload, 'base64url')
        .toString()
        .replace(/^\d+/, (n) => String(Number(n) + 1)),
    ).toString('base64url');
    const later = Buffer.from(
      Buffer.from(payload, 'base64url')
        .toString()
        .replace(/ \d{4}/, ' 2999'),
    ).toString('base64url');
    const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    for (const forged of [
      `${otherId}.${signature}`,
      `${later}.${signature}`,
      `${payload}.${flipped}`,
      payload,
      `${payload}.${signature}.x`,
    ]) {
      assertError(await open(`/invitations/${forged}`), 404, { label: `GET ${forged}` });
      assertError(await accept(`/invitations/${forged}`), 404, { label: `POST ${forged}` });
    }
    // An unsubscribe token (same key, other purpose) is no invitation.
    assertError(await accept(`/invitations/${t.app.unsubscribeLinks.token(payload)}`), 404, {
      label: 'unsubscribe token',
    });

    // A link sent with an invitation that has run out.
    const second = 'expired@invited.example';
    await invite(admin, productId, { email: second, first_name: 'Ex', last_name: 'Pired' });
    // Delivered first: a message whose invitation has run out (or was cancelled) is not sent.
    const expired = await invitationPath(second);
    await t.db
      .updateTable('invitations')
      .set({ expires_at: '2026-01-01T00:00:00+00:00' })
      .where('email', '=', second)
      .execute();
    assertError(await open(expired), 410, { label: 'GET expired' });
    assertError(await accept(expired), 410, { label: 'POST expired' });
    assert.equal(
      await t.db.selectFrom('users').select('id').where('email', 'in', [email, second]).executeTakeFirst(),
      undefined,
      'a refused link created a user',
    );
  });
});

describe('what the inviter learns', () => {
  test('the answer is the same whether the address has an account or not, and holds no profile', async () => {
    const admin = await makeUser(t.db);
    const first = await ownProduct(admin, 'First');
    const second = await ownProduct(admin, 'Second');
    const email = 'maybe.account@invited.example';

    const unknown = await invite(admin, first, { email });
    await makeUser(t.db, { email }); // the operator creates the account meanwhile, and it logs in
    const existing = await invite(admin, second, { email });
    assert.equal(unknown.statusCode, 200, unknown.body);
    assert.equal(existing.statusCode, unknown.statusCode);
    assert.equal(existing.body, unknown.body, 'bodies differ');
    assert.equal(existing.headers['content-type'], unknown.headers['content-type']);
    assert.deepEqual(Object.keys(existing.json()).sort(), ['admin', 'email', 'status']);

    // Another address with and without an account: the same answer but for the address itself.
    const someone = await makeUser(t.db);
    const withAccount = await invite(admin, first, { email: someone.email });
    const without = await invite(admin, first, { email: 'nobody@zz.test' });
    assert.equal(without.statusCode, 200, 'a new address needs no name');
    assert.equal(withAccount.body.replace(someone.email, 'X'), without.body.replace('nobody@zz.test', 'X'));
  });

  test('a repeat within a day sends nothing more and answers the same; later it is sent again', async () => {
    const admin = await makeUser(t.db);
    const productId = await ownProduct(admin);
    const email = 'repeat@invited.example';
    const one = await invite(admin, productId, { email });
    const two = await invite(admin, productId, { email });
    assert.equal(two.body, one.body);
    const count = async () =>
      (await t.db.selectFrom('outbox').select('id').where('to_address', '=', email).execute()).length;
    assert.equal(await count(), 1);

    await t.db
      .updateTable('invitations')
      .set({ sent_at: '2026-01-01T00:00:00+00:00' })
      .where('email', '=', email)
      .execute();
    const three = await invite(admin, productId, { email, admin: 'true' });
    assert.deepEqual(three.json(), { email, status: 'invited', admin: true });
    assert.equal(await count(), 2);
    assert.equal(to(await mailbox(), email).length, 2);
  });

  test('inviting a member sets their role only, sends nothing, and says so', async () => {
    const admin = await makeUser(t.db);
    const member = await makeUser(t.db);
    const product = await makeProduct(t.db, admin, [member]);
    const promoted = await invite(admin, product.id, { email: member.email.toUpperCase(), admin: 'true' });
    assert.deepEqual(promoted.json(), { email: member.email, status: 'member', admin: true });
    assert.deepEqual((await invite(admin, product.id, { email: member.email })).json(), {
      email: member.email,
      status: 'member',
      admin: true,
    });
    assert.deepEqual((await invite(admin, product.id, { email: member.email, admin: 'false' })).json(), {
      email: member.email,
      status: 'member',
      admin: false,
    });
    assert.equal(
      (await t.db.selectFrom('outbox').select('id').where('to_address', '=', member.email).execute()).length,
      0,
    );
  });
});

describe('rate limits', () => {
  test('an inviter sends at most 20 invitations an hour, across products; a product at most 50', async () => {
    const busy = await makeUser(t.db);
    const [a, b] = [await ownProduct(busy, 'A'), await ownProduct(busy, 'B')];
    for (let i = 0; i < 20; i++) {
      const res = await invite(busy, i % 2 ? a : b, { email: `bulk${i}@limits.example` });
      assert.equal(res.statusCode, 200, `invitation ${i}: ${res.body}`);
    }
    const over = await invite(busy, b, { email: 'one.more@limits.example' });
    assertError(over, 429, { label: 'inviter limit' });
    assert.match(over.json().message, /20 invitations in the last hour/);
    const retryAfter = Number(over.headers['retry-after']);
    assert.ok(retryAfter > 3000 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
    assert.equal(
      await t.db
        .selectFrom('outbox')
        .select('id')
        .where('to_address', '=', 'one.more@limits.example')
        .executeTakeFirst(),
      undefined,
    );
    // A repeat within the day sends nothing, so it is not limited.
    assert.equal((await invite(busy, a, { email: 'bulk1@limits.example' })).statusCode, 200);

    // A product's limit counts all its admins.
    const admins = [await makeUser(t.db), await makeUser(t.db), await makeUser(t.db)];
    const shared = await makeProduct(t.db, admins[0], [], 'Shared');
    for (const extra of admins.slice(1))
      await t.db
        .insertInto('memberships')
        .values({ product_id: shared.id, user_id: extra.user.id, admin: 1, created_at: '2026-01-01T00:00:00+00:00' })
        .execute();
    for (let i = 0; i < 50; i++) {
      const res = await invite(admins[Math.floor(i / 20)], shared.id, { email: `team${i}@limits.example` });
      assert.equal(res.statusCode, 200, `invitation ${i}: ${res.body}`);
    }
    const full = await invite(admins[2], shared.id, { email: 'team50@limits.example' });
    assertError(full, 429, { label: 'product limit' });
    assert.match(full.json().message, /This product has sent 50/);
    assert.equal(
      (await invite(admins[2], await ownProduct(admins[2]), { email: 'elsewhere@limits.example' })).statusCode,
      200,
      'other products are not limited by it',
    );

    // An hour later the budget is back.
    await t.db
      .updateTable('invitations')
      .set({ sent_at: '2026-01-01T00:00:00+00:00' })
      .where('product_id', '=', shared.id)
      .execute();
    assert.equal((await invite(admins[2], shared.id, { email: 'team50@limits.example' })).statusCode, 200);
  });
});

describe('created_at and last_login', () => {
  test('are shown to the user themselves only: people, items, deploys', async () => {
    const admin = await makeUser(t.db);
    const member = await makeUser(t.db);
    const product = await makeProduct(t.db, admin, [member]);
    const base = `/api/products/${product.id}`;
    const item = await makeItem(t.app, member, product.id, { title: 'Whose dates', assigned_to: admin.user.id });
    const deploy = await client(t.app, member).post(`${base}/deploys.json`, {
      environment: 'production',
      numbers: String(item.number),
    });
    assert.equal(deploy.statusCode, 200);
    const deployUser = deploy.json().user;
    assert.match(deployUser.created_at, TIMESTAMP, 'the deployer sees their own');
    assert.match(deployUser.last_login, TIMESTAMP);

    const hidden = (u: Record<string, unknown>, label: string) => {
      assert.equal(u.created_at, undefined, `${label}: created_at`);
      assert.equal(u.last_login, undefined, `${label}: last_login`);
    };
    const shown = (u: Record<string, unknown>, label: string) => {
      assert.match(String(u.created_at), TIMESTAMP, `${label}: created_at`);
      assert.match(String(u.last_login), TIMESTAMP, `${label}: last_login`);
    };

    const people = (await client(t.app, admin).get(`${base}/people.json`)).json() as Record<string, unknown>[];
    hidden(people.find((u) => u.id === member.user.id)!, 'the admin sees a member');
    shown(people.find((u) => u.id === admin.user.id)!, 'the admin sees themselves');
    const theirs = (await client(t.app, member).get(`${base}/people.json`)).json() as Record<string, unknown>[];
    hidden(theirs.find((u) => u.id === admin.user.id)!, 'a member sees the admin');
    shown(theirs.find((u) => u.id === member.user.id)!, 'a member sees themselves');

    const fetched = (await client(t.app, admin).get(`${base}/items/${item.number}.json`)).json();
    hidden(fetched.created_by, 'item created_by');
    shown(fetched.assigned_to, 'item assigned_to (the viewer)');
    const [listed] = (await client(t.app, admin).get(`${base}/items.json`)).json();
    hidden(listed.created_by, 'listed created_by');
    const memberView = (await client(t.app, member).get(`${base}/items/${item.number}.json`)).json();
    shown(memberView.created_by, 'the creator sees themselves');
    hidden(memberView.assigned_to, 'the creator sees the assignee');
    const [deployed] = (await client(t.app, admin).get(`${base}/deploys.json`)).json();
    hidden(deployed.user, 'deploy user');
    // The items of a page of deploys are summaries that name no one; its receipt embeds them whole.
    assert.equal(deployed.items[0].created_by, undefined);
    hidden(deploy.json().items[0].assigned_to, 'deploy receipt item assigned_to (another)');

    const productJson = (await client(t.app, admin).get(`${base}.json`)).json();
    assert.deepEqual(Object.keys(productJson).sort(), ['admin', 'archived', 'created_at', 'id', 'name']);
    shown((await client(t.app, member).get('/api/user/whoami.json')).json(), 'whoami');
  });
});

describe('upgrading a database made before invitations', () => {
  test('the outbox keeps its rows, indexes and ids; messages may go to an address only', async () => {
    const dataDir = tempDir();
    const options = await databaseOptionsFor(dataDir);
    // The schema as the first release left it, with a queued message.
    const old = new Kysely<any>({
      dialect: options.databaseUrl
        ? new PostgresDialect({ pool: new pg.Pool({ connectionString: options.databaseUrl, max: 1 }) })
        : new GroupCommitSqliteDialect({ writer: new SQLite(path.join(dataDir, 'shiplog.db')) }),
    });
    const migrationTableSchema = options.databaseUrl
      ? (await sql<{ s: string }>`select current_schema() as s`.execute(old)).rows[0].s
      : undefined;
    const first = await new Migrator({
      db: old,
      provider: { getMigrations: async () => ({ '2026_11_22_0001_initial': initial }) },
      migrationTableSchema,
    }).migrateToLatest();
    assert.equal(first.error, undefined);
    const at = '2026-01-01T00:00:00+00:00';
    const user = await old
      .insertInto('users')
      .values({ email: 'old@example.com', first_name: 'O', last_name: 'Ld', api_key_hash: 'h', created_at: at })
      .returning('id')
      .executeTakeFirstOrThrow();
    const message = (n: number) => ({
      user_id: user.id,
      to_address: 'old@example.com',
      subject: `s${n}`,
      body_text: '',
      body_html: '',
      item_ids: '[]',
      message_id: `<m${n}@x>`,
      status: 'pending',
      attempts: 0,
      next_attempt_at: at,
      retry_until: at,
      created_at: at,
    });
    const ids = [];
    for (const n of [1, 2, 3])
      ids.push((await old.insertInto('outbox').values(message(n)).returning('id').executeTakeFirstOrThrow()).id);
    await old.deleteFrom('outbox').where('id', '=', ids[2]).execute();
    await old.destroy();

    const db = await openDatabase(options);
    try {
      const rows = await db.selectFrom('outbox').selectAll().orderBy('id').execute();
      assert.deepEqual(
        rows.map((r) => [r.id, r.subject, r.user_id, r.kind, r.invitation_id, r.status]),
        [
          [ids[0], 's1', user.id, 'deploy', null, 'pending'],
          [ids[1], 's2', user.id, 'deploy', null, 'pending'],
        ],
      );
      // The bodies are rendered when a message is sent: the columns that held them are gone.
      assert.ok(
        !('body_text' in rows[0]) && !('body_html' in rows[0]),
        `outbox columns: ${Object.keys(rows[0]).join(', ')}`,
      );
      const { body_text: _text, body_html: _html, ...fresh } = message(4);
      const added = await db
        .insertInto('outbox')
        .values({ ...fresh, user_id: null, kind: 'invitation' })
        .returning('id')
        .executeTakeFirstOrThrow();
      assert.ok(added.id > ids[2], 'an id was handed out again');
      assert.equal(
        (await db.selectFrom('outbox').select('user_id').where('id', '=', added.id).executeTakeFirstOrThrow()).user_id,
        null,
      );
      if (!options.databaseUrl) {
        const indexes = (
          await sql<{
            name: string;
          }>`select name from sqlite_master where type = 'index' and tbl_name = 'outbox'`.execute(db)
        ).rows;
        assert.ok(
          indexes.some((i) => i.name === 'outbox_due'),
          'the due index is gone',
        );
        assert.deepEqual((await sql`pragma foreign_key_check`.execute(db)).rows, []);
      }
    } finally {
      await db.destroy();
    }
  });
});
