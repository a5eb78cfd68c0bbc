import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, mock, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import {
  assertError,
  basic,
  client,
  deliveredMail,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  tempDir,
  type TestContext,
} from './helpers.js';
import { runCli } from './processes.js';
import { databaseOptionsFor, storageEnv } from './storage.js';

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(() => t.close());

let ipSeq = 0;
/** Each test asks from an address of its own, so the per-client limit of one does not touch another. */
const newIp = () => `10.0.${Math.floor(++ipSeq / 250)}.${(ipSeq % 250) + 1}`;

function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

function askForLink(email: string, ip: string, ctx = t): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method: 'POST',
    url: '/app/sign-in',
    remoteAddress: ip,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    payload: form({ email }),
  });
}

/** The path of the sign-in link in the latest message to `email`, or undefined. */
async function mailedLink(email: string, ctx = t): Promise<string | undefined> {
  const mine = (await deliveredMail(ctx)).filter((m) =>
    (m.headers.get('to') ?? '').toLowerCase().includes(email.toLowerCase()),
  );
  const match = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/.exec(mine.at(-1)?.text ?? '');
  return match?.[1];
}

const follow = (link: string, method: 'GET' | 'POST', ctx = t, remoteAddress?: string) =>
  ctx.app.inject({ method, url: link, remoteAddress });

/** The cookie header a browser would send back after this answer set its session cookie. */
function sessionCookie(res: LightMyRequestResponse): string {
  const set = [res.headers['set-cookie'] ?? []].flat().find((c) => String(c).startsWith('shiplog_session='));
  assert.ok(set, `no session cookie in ${JSON.stringify(res.headers)}`);
  return String(set).split(';')[0];
}

/** Signs `email` in through the mail, as a person would; returns the cookie. */
async function signIn(email: string, ctx = t): Promise<string> {
  assert.equal((await askForLink(email, newIp(), ctx)).statusCode, 200);
  const link = await mailedLink(email, ctx);
  assert.ok(link, 'no sign-in link mailed');
  const res = await follow(link, 'POST', ctx);
  assert.equal(res.statusCode, 303, res.body);
  assert.equal(res.headers.location, '/app/products');
  return sessionCookie(res);
}

const page = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

function csrfOf(res: LightMyRequestResponse): string {
  const match = /name="csrf" value="([^"]+)"/.exec(res.body);
  assert.ok(match, `no form token in ${res.body}`);
  return match[1];
}

function postForm(url: string, cookie: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form(params),
  });
}

describe('signing in with a mailed link', () => {
  test('the link in the mail signs in once; GET only shows a button', async () => {
    const person = await makeUser(t.db);
    const asked = await askForLink(person.email, newIp());
    assert.equal(asked.statusCode, 200);
    assert.match(asked.headers['content-type'] as string, /^text\/html/);
    const link = await mailedLink(person.email);
    assert.ok(link);

    for (let i = 0; i < 2; i++) {
      const shown = await follow(link, 'GET');
      assert.equal(shown.statusCode, 200, 'a GET (a mail scanner) must not use the link up');
      assert.match(shown.body, /<form method="post"><p><button type="submit">Sign in<\/button>/);
      assert.equal(shown.headers['set-cookie'], undefined);
      assert.equal(shown.headers['referrer-policy'], 'same-origin');
    }
    const used = await follow(link, 'POST');
    assert.equal(used.statusCode, 303);
    const cookie = sessionCookie(used);
    const products = await page('/app/products', cookie);
    assert.equal(products.statusCode, 200);
    assert.ok(products.body.includes(person.email), 'the page shows who is signed in');

    const again = await follow(link, 'POST');
    assert.equal(again.statusCode, 410);
    assert.match(again.body, /expired or has been used/);
    assert.equal(again.headers['set-cookie'], undefined);
    assert.equal((await follow(link, 'GET')).statusCode, 410);
  });

  test('an expired link is refused', async () => {
    const person = await makeUser(t.db);
    await askForLink(person.email, newIp());
    const link = await mailedLink(person.email);
    assert.ok(link);
    await t.db
      .updateTable('signin_links')
      .set({ expires_at: '2020-01-01T00:00:00+00:00' })
      .where('user_id', '=', person.user.id)
      .execute();
    const res = await follow(link, 'POST');
    assert.equal(res.statusCode, 410);
    assert.equal(res.headers['set-cookie'], undefined);
    assert.equal((await follow(`/app/sign-in/${'A'.repeat(43)}`, 'POST')).statusCode, 410, 'a made-up token');
    assert.equal((await follow('/app/sign-in/short', 'POST')).statusCode, 410, 'a malformed token');
  });

  test('an unknown address gets the same page and no mail', async () => {
    const known = await makeUser(t.db);
    const stranger = `nobody-${process.pid}@example.com`;
    const a = await askForLink(known.email, newIp());
    const b = await askForLink(stranger, newIp());
    assert.equal(a.statusCode, b.statusCode);
    assert.equal(a.body, b.body);
    assert.ok(await mailedLink(known.email));
    assert.equal(await mailedLink(stranger), undefined);
    const rows = await t.db.selectFrom('outbox').select('id').where('to_address', 'like', `%${stranger}%`).execute();
    assert.equal(rows.length, 0);
  });

  test('a malformed address is answered with the form again (400), never a 500', async () => {
    const res = await askForLink('not an address', newIp());
    assert.equal(res.statusCode, 400);
    // The reason next to the field, tied to it, and what was typed kept in it.
    assert.match(
      res.body,
      new RegExp(
        '<input id="email"[^>]* value="not an address" aria-invalid="true" aria-describedby="error-email">' +
          '<span class="field-error" id="error-email" role="alert">email must be an email address',
      ),
    );
  });

  test('links are limited per address and client, per client, and per address from anywhere', async () => {
    const person = await makeUser(t.db);
    const stranger = `stranger-${process.pid}@example.com`;
    for (const email of [person.email, stranger]) {
      const ip = newIp();
      for (let i = 0; i < 5; i++) assert.equal((await askForLink(email, ip)).statusCode, 200);
      const limited = await askForLink(email, ip);
      assert.equal(limited.statusCode, 429, email);
      assert.match(limited.body, /Too many sign-in links/);
      assert.ok(Number(limited.headers['retry-after']) > 0);
    }
    const sent = await t.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'signin')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(sent.length, 5);

    const ip = newIp();
    for (let i = 0; i < 20; i++)
      assert.equal((await askForLink(`client-${i}-${process.pid}@example.com`, ip)).statusCode, 200);
    assert.equal((await askForLink(`client-last-${process.pid}@example.com`, ip)).statusCode, 429);
    assert.equal(
      (await askForLink(`client-last-${process.pid}@example.com`, newIp())).statusCode,
      200,
      'another client is not limited',
    );
  });

  test('a stranger asking from one network cannot lock a person out; the address has a ceiling', async () => {
    const person = await makeUser(t.db);
    const strangerIp = newIp();
    for (let i = 0; i < 5; i++) assert.equal((await askForLink(person.email, strangerIp)).statusCode, 200);
    assert.equal(
      (await askForLink(person.email, strangerIp)).statusCode,
      429,
      'the stranger has used up their own count',
    );
    // The person, from their own network, still gets a link, and can use it.
    const own = await askForLink(person.email, newIp());
    assert.equal(own.statusCode, 200, own.body);
    const link = await mailedLink(person.email);
    assert.ok(link);
    assert.equal((await follow(link, 'POST')).statusCode, 303);

    // Requests from many networks at once are bounded by the ceiling per address: 30 messages an hour.
    for (let i = 0; i < 24; i++)
      assert.equal((await askForLink(person.email, newIp())).statusCode, 200, `request ${i}`);
    const ceiling = await askForLink(person.email, newIp());
    assert.equal(ceiling.statusCode, 429);
    assert.match(ceiling.body, /Too many sign-in links were asked for this address/);
    const sent = await t.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'signin')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(sent.length, 30);
  });

  /** Asks for links for `email` from new networks, 5 from each (all one may), until the ceiling per address refuses. */
  async function fillCeiling(email: string): Promise<void> {
    for (let n = 0; n < 7; n++) {
      const ip = newIp();
      for (let i = 0; i < 5; i++) {
        const res = await askForLink(email, ip);
        if (res.statusCode === 429) {
          assert.match(res.body, /Too many sign-in links were asked for this address;/);
          return;
        }
        assert.equal(res.statusCode, 200, res.body);
      }
    }
    assert.fail('the ceiling per address was never reached');
  }

  /** Asks for a link from `ip` and uses it from there, as the person would. */
  async function signInFrom(email: string, ip: string): Promise<void> {
    assert.equal((await askForLink(email, ip)).statusCode, 200);
    const link = await mailedLink(email);
    assert.ok(link, 'no sign-in link mailed');
    assert.equal((await follow(link, 'POST', t, ip)).statusCode, 303);
  }

  test('strangers on many networks cannot lock out a person where they signed in; elsewhere: a ceiling', async () => {
    const person = await makeUser(t.db);
    const other = await makeUser(t.db);
    const unknown = `nobody-${process.pid}-${ipSeq}@example.com`;
    const home = newIp();
    const v6home = `2001:db8:${(++ipSeq).toString(16)}:7`;
    await signInFrom(person.email, home);
    await signInFrom(person.email, `${v6home}::1`);
    for (const email of [person.email, other.email, unknown]) await fillCeiling(email);
    const sent = async () =>
      (
        await t.db
          .selectFrom('outbox')
          .select('id')
          .where('kind', '=', 'signin')
          .where('user_id', '=', person.user.id)
          .execute()
      ).length;
    const before = await sent();

    // Home has only its own count for the address: 4 more of its 5 this hour.
    for (let i = 0; i < 4; i++)
      assert.equal((await askForLink(person.email, home)).statusCode, 200, `request ${i} from home`);
    const own = await askForLink(person.email, home);
    assert.equal(own.statusCode, 429);
    assert.match(own.body, /asked for this address from your network/);
    assert.equal(await sent(), before + 4);
    const link = await mailedLink(person.email);
    assert.ok(link);
    assert.equal((await follow(link, 'POST', t, home)).statusCode, 303, 'and the link works');
    // Another address of the IPv6 network signed in from is that network.
    assert.equal((await askForLink(person.email, `${v6home}:ffff::2`)).statusCode, 200, 'the same /64');

    // A network the person never signed in from is refused at the ceiling, as before.
    const elsewhere = await askForLink(person.email, newIp());
    assert.equal(elsewhere.statusCode, 429);
    assert.match(elsewhere.body, /Too many sign-in links were asked for this address;/);
    assert.equal(
      (await askForLink(person.email, `2001:db8:${(++ipSeq).toString(16)}:7::1`)).statusCode,
      429,
      'another /64',
    );
    // The trust is the person's own: from home, anyone else's address (with an account or not) is at its ceiling.
    for (const email of [other.email, unknown]) {
      const res = await askForLink(email, home);
      assert.equal(res.statusCode, 429, email);
      assert.match(res.body, /Too many sign-in links were asked for this address;/);
    }
  });

  test('the trust in a network lasts 30 days from the last sign-in there', async () => {
    const day = 24 * 3600_000;
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    try {
      const person = await makeUser(t.db);
      const home = newIp();
      await signInFrom(person.email, home);
      mock.timers.tick(29 * day);
      await fillCeiling(person.email);
      assert.equal((await askForLink(person.email, home)).statusCode, 200, 'on day 29 (a link asked for, not used)');
      mock.timers.tick(day + 3600_000);
      await fillCeiling(person.email);
      const res = await askForLink(person.email, home);
      assert.equal(res.statusCode, 429, 'after 30 days');
      assert.match(res.body, /Too many sign-in links were asked for this address;/);
      const left = await t.db
        .selectFrom('signin_clients')
        .select('used_at')
        .where('user_id', '=', person.user.id)
        .execute();
      assert.equal(left.length, 1, 'not yet pruned: the next sign-in prunes');
      // Signing in there again (with a link asked for elsewhere, once the hour has passed) trusts it again.
      mock.timers.tick(3600_000 + 1000);
      assert.equal((await askForLink(person.email, newIp())).statusCode, 200);
      const link = await mailedLink(person.email);
      assert.ok(link);
      assert.equal((await follow(link, 'POST', t, home)).statusCode, 303);
      await fillCeiling(person.email);
      assert.equal((await askForLink(person.email, home)).statusCode, 200, 'trusted again');
    } finally {
      mock.timers.reset();
    }
  });

  test('IPv6 clients count per /64: other addresses of the same network share its counts', async () => {
    const network = () => `2001:db8:${(++ipSeq).toString(16)}:1`;
    const crowd = network();
    for (let i = 1; i <= 20; i++)
      assert.equal(
        (await askForLink(`v6-${i}-${process.pid}@example.com`, `${crowd}::${i.toString(16)}`)).statusCode,
        200,
      );
    assert.equal(
      (await askForLink(`v6-last-${process.pid}@example.com`, `${crowd}:ffff:ffff:ffff:ffff`)).statusCode,
      429,
      'another address of the same /64',
    );
    assert.equal(
      (await askForLink(`v6-last-${process.pid}@example.com`, `${network()}::1`)).statusCode,
      200,
      'another /64',
    );

    const person = await makeUser(t.db);
    const own = network();
    for (let i = 1; i <= 5; i++)
      assert.equal((await askForLink(person.email, `${own}::${i.toString(16)}`)).statusCode, 200);
    assert.equal((await askForLink(person.email, `${own}:ffff::1`)).statusCode, 429, 'the address from the same /64');
    assert.equal((await askForLink(person.email, `${network()}::1`)).statusCode, 200, 'the address from another /64');
    const v4 = newIp();
    for (let i = 0; i < 5; i++) assert.equal((await askForLink(person.email, v4)).statusCode, 200);
    assert.equal(
      (await askForLink(person.email, `::ffff:${v4}`)).statusCode,
      429,
      'an IPv4-mapped address is its IPv4 address',
    );
  });

  test('30 requests for one address at once from one client: the 5 allowed are mailed, the rest 429', async () => {
    const person = await makeUser(t.db);
    const ip = newIp();
    const answers = await Promise.all(Array.from({ length: 30 }, () => askForLink(person.email, ip)));
    const byStatus: Record<number, number> = {};
    for (const r of answers) byStatus[r.statusCode] = (byStatus[r.statusCode] ?? 0) + 1;
    assert.deepEqual(byStatus, { 200: 5, 429: 25 });
    const sent = await t.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'signin')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(sent.length, 5);
  });

  test('40 requests for one address at once from 40 networks: exactly the 30 of the ceiling are mailed', async () => {
    const person = await makeUser(t.db);
    const answers = await Promise.all(Array.from({ length: 40 }, () => askForLink(person.email, newIp())));
    const byStatus: Record<number, number> = {};
    for (const r of answers) byStatus[r.statusCode] = (byStatus[r.statusCode] ?? 0) + 1;
    assert.deepEqual(byStatus, { 200: 30, 429: 10 });
    const sent = await t.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'signin')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(sent.length, 30);
  });
});

describe('sessions', () => {
  test('the cookie is signed, HttpOnly, SameSite=Lax, Path=/, and not Secure over http', async () => {
    const person = await makeUser(t.db);
    await askForLink(person.email, newIp());
    const res = await follow((await mailedLink(person.email))!, 'POST');
    const set = String([res.headers['set-cookie']].flat().find((c) => String(c).startsWith('shiplog_session=')));
    assert.match(set, /; HttpOnly/);
    assert.match(set, /; SameSite=Lax/);
    assert.match(set, /; Path=\//);
    assert.doesNotMatch(set, /Secure/);
    const value = decodeURIComponent(set.split(';')[0].split('=').slice(1).join('='));
    assert.match(value, /^[A-Za-z0-9_-]{43}\.[A-Za-z0-9+/_-]+=*$/, 'the id and its signature');
    const tampered = `shiplog_session=${encodeURIComponent('B'.repeat(43) + value.slice(43))}`;
    assert.equal((await page('/app/products', tampered)).statusCode, 303, 'a cookie with a forged id');
  });

  test('with an https PUBLIC_URL the cookie is Secure', async () => {
    const https = await makeApp({ env: { PUBLIC_URL: 'https://shiplog.test' } });
    try {
      const person = await makeUser(https.db);
      await askForLink(person.email, newIp(), https);
      const link = await mailedLink(person.email, https);
      assert.ok(link);
      const res = await follow(link, 'POST', https);
      assert.match(String([res.headers['set-cookie']].flat()[0]), /; Secure/);
    } finally {
      await https.close();
    }
  });

  test('pages without a session redirect to the sign-in page', async () => {
    for (const url of ['/app/products', '/app/settings', '/app/']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 303, url);
      // Back to the page asked for afterwards (the root is no page of its own).
      assert.equal(
        res.headers.location,
        url === '/app/' ? '/app/sign-in' : `/app/sign-in?next=${encodeURIComponent(url)}`,
        url,
      );
    }
    const form = await t.app.inject({ method: 'GET', url: '/app/sign-in' });
    assert.equal(form.statusCode, 200);
    assert.match(form.body, /<input id="email" type="email" name="email"/);
  });

  test('signing out ends the session: the old cookie is refused after', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    const csrf = csrfOf(await page('/app/products', cookie));
    const out = await postForm('/app/sign-out', cookie, { csrf });
    assert.equal(out.statusCode, 200);
    assert.match(String([out.headers['set-cookie']].flat()[0]), /^shiplog_session=;/);
    const after = await page('/app/products', cookie);
    assert.equal(after.statusCode, 303);
    const left = await t.db
      .selectFrom('web_sessions')
      .select('id_hash')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(left.length, 0);
  });

  test('a session unused for longer than the idle time has ended', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    assert.equal((await page('/app/settings', cookie)).statusCode, 200);
    await t.db
      .updateTable('web_sessions')
      .set({ last_seen_at: '2020-01-01T00:00:00+00:00' })
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal((await page('/app/settings', cookie)).statusCode, 303);
  });

  test('a session ends 30 days after signing in, however active; a new key does not lengthen it', async () => {
    const day = 24 * 3600_000;
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    try {
      const person = await makeUser(t.db);
      const cookie = await signIn(person.email);
      const renewedBy = await makeUser(t.db);
      let renewed = await signIn(renewedBy.email);
      // Both are used every 5 days, well within the idle time of 7.
      for (let days = 5; days < 30; days += 5) {
        mock.timers.tick(5 * day);
        assert.equal((await page('/app/settings', cookie)).statusCode, 200, `day ${days}`);
        const settings = await page('/app/settings', renewed);
        assert.equal(settings.statusCode, 200, `day ${days}`);
        if (days === 25) {
          const key = await postForm('/app/settings/api-key', renewed, { csrf: csrfOf(settings), confirm: 'yes' });
          assert.equal(key.statusCode, 200);
          renewed = sessionCookie(key);
        }
      }
      mock.timers.tick(5 * day - 3600_000);
      const last = await page('/app/settings', cookie);
      assert.equal(last.statusCode, 200, 'an hour before the end');
      const maxAge = Number(/Max-Age=(\d+)/.exec(String([last.headers['set-cookie']].flat()[0]))?.[1]);
      assert.ok(maxAge > 0 && maxAge <= 3600, `the cookie is kept until the session ends at most, not ${maxAge} s`);
      assert.equal((await page('/app/settings', renewed)).statusCode, 200);
      mock.timers.tick(3600_000);
      assert.equal((await page('/app/settings', cookie)).statusCode, 303, '30 days after signing in');
      assert.equal(
        (await page('/app/settings', renewed)).statusCode,
        303,
        'the session renewed by a new key ends as the one it replaced',
      );
      assert.equal(
        (await page('/app/settings', await signIn(person.email))).statusCode,
        200,
        'signing in again starts afresh',
      );
    } finally {
      mock.timers.reset();
    }
  });

  test('WEB_SESSION_LIFETIME_DAYS sets the lifetime', async () => {
    const short = await makeApp({ env: { WEB_SESSION_LIFETIME_DAYS: '2' } });
    mock.timers.enable({ apis: ['Date'], now: Date.now() });
    try {
      const person = await makeUser(short.db);
      const cookie = await signIn(person.email, short);
      const used = await short.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
      assert.equal(used.statusCode, 200);
      mock.timers.tick(47 * 3600_000);
      assert.equal(
        (await short.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } })).statusCode,
        200,
      );
      mock.timers.tick(3600_000);
      assert.equal(
        (await short.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } })).statusCode,
        303,
      );
    } finally {
      mock.timers.reset();
      await short.close();
    }
  });

  test('a new API key from the settings page ends every session of the person; this browser gets another', async () => {
    const person = await makeUser(t.db);
    const other = await makeUser(t.db);
    const here = await signIn(person.email);
    const elsewhere = await signIn(person.email);
    const someoneElse = await signIn(other.email);
    const res = await postForm('/app/settings/api-key', here, {
      csrf: csrfOf(await page('/app/settings', here)),
      confirm: 'yes',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<code class="key">[A-Za-z0-9]{32}<\/code>/);
    assert.equal((await page('/app/settings', elsewhere)).statusCode, 303, 'the other browser is signed out');
    assert.equal((await page('/app/settings', here)).statusCode, 303, 'the old cookie of this browser too');
    const renewed = sessionCookie(res);
    const settings = await page('/app/settings', renewed);
    assert.equal(settings.statusCode, 200, 'this browser goes on in its new session');
    assert.equal(csrfOf(settings), csrfOf(res), 'the page shown with the key carries the new form token');
    assert.equal((await page('/app/settings', someoneElse)).statusCode, 200, 'nobody else is signed out');
    const left = await t.db
      .selectFrom('web_sessions')
      .select('id_hash')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(left.length, 1);
  });

  test('sign out everywhere ends every session of the person, this one included', async () => {
    const person = await makeUser(t.db);
    const other = await makeUser(t.db);
    const here = await signIn(person.email);
    const elsewhere = await signIn(person.email);
    const someoneElse = await signIn(other.email);
    const settings = await page('/app/settings', here);
    assert.match(
      settings.body,
      new RegExp(
        '<form method="post" action="/app/settings/sign-out-everywhere">' +
          '<input type="hidden" name="csrf" value="[^"]+"><button type="submit">Sign out everywhere</button></form>',
      ),
    );
    const csrf = csrfOf(settings);
    assert.equal(
      (await postForm('/app/settings/sign-out-everywhere', here, {})).statusCode,
      403,
      'without the form token',
    );
    assert.equal(
      (await postForm('/app/settings/sign-out-everywhere', here, { csrf }, { origin: 'https://evil.example' }))
        .statusCode,
      403,
      'from another site',
    );
    assert.equal((await page('/app/settings', elsewhere)).statusCode, 200, 'a refused form ends nothing');

    const res = await postForm('/app/settings/sign-out-everywhere', here, { csrf });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /You are signed out everywhere/);
    assert.match(String([res.headers['set-cookie']].flat()[0]), /^shiplog_session=;/);
    assert.equal((await page('/app/settings', here)).statusCode, 303);
    assert.equal((await page('/app/settings', elsewhere)).statusCode, 303);
    assert.equal((await page('/app/settings', someoneElse)).statusCode, 200, 'nobody else is signed out');
    assert.equal((await client(t.app, person).get('/api/user/whoami.json')).statusCode, 200, 'the API key still works');
    const left = await t.db
      .selectFrom('web_sessions')
      .select('id_hash')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(left.length, 0);
  });

  test('a session cookie does not authenticate the API', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    for (const url of ['/api/user/whoami.json', '/api/products.json']) {
      assertError(await t.app.inject({ method: 'GET', url, headers: { cookie } }), 403, { label: url });
    }
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/products.json',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=X',
    });
    assertError(created, 403);
    assert.equal((await client(t.app, person).get('/api/products.json')).statusCode, 200, 'the API key still works');
  });
});

/** The script elements of Shiplog's own files, which a page may carry. */
const OWN_SCRIPTS = /<script src="\/app\/(forms|board|item|live|notifications)\.js" defer><\/script>/g;

describe('pages', () => {
  test('every page and error page carries a strict Content-Security-Policy', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    const answers = [
      await page('/app/products', cookie),
      await page('/app/settings', cookie),
      await t.app.inject({ method: 'GET', url: '/app/sign-in' }),
      await t.app.inject({ method: 'GET', url: '/app/no-such-page' }),
      await postForm('/app/settings/api-key', cookie, {}),
    ];
    for (const res of answers) {
      const csp = String(res.headers['content-security-policy']);
      for (const directive of [
        "default-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "script-src 'self'",
      ])
        assert.ok(csp.includes(directive), `${directive} in ${csp}`);
      // Shiplog's own scripts are files of its own ('self'), loaded by every page: the form script.
      assert.match(res.body, /<script src="\/app\/forms\.js" defer><\/script><\/head>/);
      assert.doesNotMatch(res.body.replace(OWN_SCRIPTS, ''), /<script|style=/i, 'no inline script or style');
      assert.equal(res.headers['cache-control'], 'no-store');
    }
    const css = await t.app.inject({ method: 'GET', url: '/app/style.css' });
    assert.equal(css.statusCode, 200);
    assert.match(css.headers['content-type'] as string, /^text\/css/);
    assert.match(answers[0].body, /<link rel="stylesheet" href="\/app\/style.css">/);
    assert.match(answers[0].body, /<meta name="viewport" content="width=device-width/);
  });

  test("a URL under /app that cannot be read is a 400 page, as the API's is a 400 in JSON", async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    for (const url of ['/app/products/%FF/board', '/app/products/1/items/%ED%A0%80', '/app/sign-in/%C3']) {
      const res = await page(url, cookie);
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', url);
      assert.match(res.body, /<p class="error">The request URL could not be read\.<\/p>/, url);
      assert.ok(String(res.headers['content-security-policy']).includes("default-src 'self'"), url);
    }
    const fromScript = await t.app.inject({
      method: 'POST',
      url: '/app/products/1/items/%FF/move',
      headers: { cookie, accept: 'application/json' },
    });
    assertError(fromScript, 400, { message: /could not be read/ });
    assertError(await t.app.inject({ method: 'GET', url: '/api/products/%FF.json' }), 400, {
      message: /could not be read/,
    });
    assertError(await t.app.inject({ method: 'GET', url: '/application/%FF' }), 400, { message: /could not be read/ });
  });

  test('the products page lists mine with counts by status, names escaped', async () => {
    const person = await makeUser(t.db);
    const other = await makeUser(t.db);
    const mine = await makeProduct(t.db, person, [], '<script>alert("x")</script> & co');
    await makeProduct(t.db, other, [], 'Not mine at all');
    await makeProduct(t.db, person, [], 'Empty one');
    for (const status of ['backlog', 'backlog', 'in-progress', 'completed'])
      await makeItem(t.app, person, mine.id, { status });
    const res = await page('/app/products', await signIn(person.email));
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co'), res.body);
    assert.doesNotMatch(res.body.replace(OWN_SCRIPTS, ''), /<script/);
    assert.doesNotMatch(res.body, /Not mine at all/);
    const entry = res.body.slice(res.body.indexOf('&lt;script'), res.body.indexOf('Empty one'));
    const count = (status: string) => Number(new RegExp(`<li>${status}: <strong>(\\d+)</strong>`).exec(entry)?.[1]);
    assert.deepEqual(['someday', 'backlog', 'in-progress', 'completed', 'accepted'].map(count), [0, 2, 1, 1, 0]);
    assert.match(res.body.slice(res.body.indexOf('Empty one')), /<li>backlog: <strong>0<\/strong>/);
  });

  test('a new API key from the settings page works and the old one stops', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    const settings = await page('/app/settings', cookie);
    // The first post only asks: the key is the same until the question is answered.
    const asked = await postForm('/app/settings/api-key', cookie, { csrf: csrfOf(settings) });
    assert.equal(asked.statusCode, 200);
    assert.doesNotMatch(asked.body, /<code class="key">/);
    assert.match(asked.body, /Make a new API key\?/);
    assert.match(asked.body, /<input type="hidden" name="confirm" value="yes">/);
    assert.equal((await client(t.app, person).get('/api/user/whoami.json')).statusCode, 200, 'the key is unchanged');
    const res = await postForm('/app/settings/api-key', cookie, { csrf: csrfOf(asked), confirm: 'yes' });
    assert.equal(res.statusCode, 200);
    const key = /<code class="key">([A-Za-z0-9]{32})<\/code>/.exec(res.body)?.[1];
    assert.ok(key, res.body);
    assertError(await client(t.app, person).get('/api/user/whoami.json'), 403);
    const whoami = await client(t.app, { auth: basic(person.email, key) }).get('/api/user/whoami.json');
    assert.equal(whoami.statusCode, 200);
    assert.doesNotMatch((await page('/app/settings', cookie)).body, new RegExp(key), 'the key is shown once');
  });

  test('a POST without the form token, or from another site, is refused and changes nothing', async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    const csrf = csrfOf(await page('/app/settings', cookie));
    const attempts = [
      await postForm('/app/settings/api-key', cookie, {}),
      await postForm('/app/settings/api-key', cookie, { csrf: `${csrf.slice(0, -2)}xx` }),
      await postForm('/app/settings/api-key', cookie, { csrf }, { origin: 'https://evil.example' }),
      await postForm('/app/settings/api-key', cookie, { csrf }, { 'sec-fetch-site': 'cross-site' }),
      await postForm('/app/sign-out', cookie, {}),
      await postForm('/app/sign-out', cookie, { csrf }, { origin: 'https://evil.example' }),
    ];
    for (const res of attempts) {
      assert.equal(res.statusCode, 403, res.body);
      assert.match(res.headers['content-type'] as string, /^text\/html/);
      assert.doesNotMatch(res.body, /<code class="key">/);
    }
    assert.equal((await client(t.app, person).get('/api/user/whoami.json')).statusCode, 200, 'the key is unchanged');
    assert.equal((await page('/app/products', cookie)).statusCode, 200, 'the session is still there');
    const own = await postForm('/app/sign-out', cookie, { csrf }, { origin: 'http://shiplog.test' });
    assert.equal(own.statusCode, 200, 'the own origin is fine');
  });

  test('the form token counts only in the body, never in the query string', async () => {
    const person = await makeUser(t.db);
    const owner = await makeUser(t.db);
    const product = await makeProduct(t.db, owner, [person]);
    const item = await makeItem(t.app, owner, product.id, { title: 'To follow' });
    const cookie = await signIn(person.email);
    const csrf = csrfOf(await page('/app/settings', cookie));
    const inQuery = (url: string, params: Record<string, string> = {}) =>
      postForm(`${url}?csrf=${encodeURIComponent(csrf)}`, cookie, params);
    for (const res of [
      await inQuery('/app/settings/api-key'),
      await inQuery(`/app/products/${product.id}/items/${item.number}/follow`, { follow: '1' }),
      await inQuery('/app/settings/sign-out-everywhere'),
      await inQuery('/app/sign-out'),
    ]) {
      assert.equal(res.statusCode, 403, res.body);
      assert.match(res.body, /This form has expired or did not come from Shiplog/);
    }
    assert.equal((await client(t.app, person).get('/api/user/whoami.json')).statusCode, 200, 'the key is unchanged');
    const followers = await t.db
      .selectFrom('followers')
      .select('user_id')
      .where('user_id', '=', person.user.id)
      .execute();
    assert.equal(followers.length, 0, 'nothing was followed');
    assert.equal((await page('/app/settings', cookie)).statusCode, 200, 'still signed in');
    assert.equal(
      (await postForm(`/app/products/${product.id}/items/${item.number}/follow`, cookie, { csrf, follow: '1' }))
        .statusCode,
      303,
      'in the body it works',
    );
  });

  test("Origin is compared with PUBLIC_URL, not with the request's Host; Referer when there is no Origin", async () => {
    const person = await makeUser(t.db);
    const cookie = await signIn(person.email);
    const csrf = csrfOf(await page('/app/settings', cookie));
    const refused = [
      // A name of the attacker's that resolves to the server: its pages' Origin matches the Host.
      await postForm(
        '/app/settings/api-key',
        cookie,
        { csrf },
        { host: 'rebound.evil.example', origin: 'http://rebound.evil.example' },
      ),
      await postForm('/app/settings/api-key', cookie, { csrf }, { origin: 'https://shiplog.test' }),
      await postForm('/app/settings/api-key', cookie, { csrf }, { origin: 'http://shiplog.test:8080' }),
      await postForm('/app/settings/api-key', cookie, { csrf }, { origin: 'null' }),
      await postForm('/app/settings/api-key', cookie, { csrf }, { referer: 'https://evil.example/page' }),
      await postForm(
        '/app/settings/api-key',
        cookie,
        { csrf },
        { host: 'rebound.evil.example', referer: 'http://rebound.evil.example/app/settings' },
      ),
      await postForm('/app/settings/api-key', cookie, { csrf }, { referer: 'not a url' }),
    ];
    for (const res of refused) {
      assert.equal(res.statusCode, 403, res.body);
      assert.match(res.body, /sent from another site/);
    }
    assert.equal((await client(t.app, person).get('/api/user/whoami.json')).statusCode, 200, 'the key is unchanged');
    const fromReferer = await postForm(
      '/app/settings/api-key',
      cookie,
      { csrf, confirm: 'yes' },
      { referer: 'http://shiplog.test/app/settings' },
    );
    assert.equal(fromReferer.statusCode, 200, 'a Referer of the own origin is fine');
    const renewed = sessionCookie(fromReferer);
    const own = await postForm(
      '/app/sign-out',
      renewed,
      { csrf: csrfOf(fromReferer) },
      { host: '127.0.0.1:3000', origin: 'http://shiplog.test' },
    );
    assert.equal(own.statusCode, 200, "PUBLIC_URL's origin is fine whatever the Host");
  });

  test('asking for a link from another site is refused', async () => {
    const person = await makeUser(t.db);
    const res = await t.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      remoteAddress: newIp(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      payload: form({ email: person.email }),
    });
    assert.equal(res.statusCode, 403);
    assert.equal(await mailedLink(person.email), undefined);
  });
});

describe('shiplog user login-link', () => {
  test('prints a link that signs the user in once', async () => {
    const dataDir = fs.mkdtempSync(path.join(tempDir('shiplog-web-cli-'), 'data-'));
    const env = { PUBLIC_URL: 'https://tracker.example.com' };
    const added = await runCli(['user', 'add', 'first.admin@example.com', '--first', 'First', '--last', 'Admin'], {
      dataDir,
      env,
    });
    assert.equal(added.code, 0, added.stderr);
    const printed = await runCli(['user', 'login-link', 'First.Admin@example.com'], { dataDir, env });
    assert.equal(printed.code, 0, printed.stderr);
    const match = /^https:\/\/tracker\.example\.com(\/app\/sign-in\/[A-Za-z0-9_-]{43})\n$/.exec(printed.stdout);
    assert.ok(match, printed.stdout);
    const unknown = await runCli(['user', 'login-link', 'nobody@example.com'], { dataDir, env });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No user with email nobody@example.com/);

    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const app = await buildApp({ config: loadConfig({ ...(await storageEnv(dataDir)), ...env }), db, logger: false });
    try {
      const res = await app.inject({ method: 'POST', url: match[1] });
      assert.equal(res.statusCode, 303, res.body);
      assert.match(String([res.headers['set-cookie']].flat()[0]), /; Secure/);
      assert.equal((await app.inject({ method: 'POST', url: match[1] })).statusCode, 410);
    } finally {
      await app.close();
      await db.destroy();
    }
  });
});

describe('shiplog user key', () => {
  test('a new key signs the user out of the pages everywhere', async () => {
    const dataDir = fs.mkdtempSync(path.join(tempDir('shiplog-web-cli-'), 'data-'));
    const env = { PUBLIC_URL: 'http://shiplog.test' };
    const added = await runCli(['user', 'add', 'keyed@example.com', '--first', 'Key', '--last', 'Holder'], {
      dataDir,
      env,
    });
    assert.equal(added.code, 0, added.stderr);
    const printed = await runCli(['user', 'login-link', 'keyed@example.com'], { dataDir, env });
    const link = /(\/app\/sign-in\/[A-Za-z0-9_-]{43})\n$/.exec(printed.stdout)?.[1];
    assert.ok(link, printed.stdout + printed.stderr);
    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const app = await buildApp({ config: loadConfig({ ...(await storageEnv(dataDir)), ...env }), db, logger: false });
    try {
      const cookie = sessionCookie(await app.inject({ method: 'POST', url: link }));
      assert.equal((await app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } })).statusCode, 200);
      const keyed = await runCli(['user', 'key', 'keyed@example.com'], { dataDir, env });
      assert.equal(keyed.code, 0, keyed.stderr);
      assert.match(keyed.stdout, /^[A-Za-z0-9]{32}\n$/);
      assert.equal((await app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } })).statusCode, 303);
    } finally {
      await app.close();
      await db.destroy();
    }
  });
});

describe('coming back to the page asked for after signing in', () => {
  test('a signed-out page sends to sign-in with next=; only paths of the pages are kept', async () => {
    const away = await t.app.inject({ method: 'GET', url: '/app/products/7/items/3?x=1' });
    assert.equal(away.statusCode, 303);
    assert.equal(away.headers.location, `/app/sign-in?next=${encodeURIComponent('/app/products/7/items/3?x=1')}`);
    const kept = (next: string) =>
      t.app
        .inject({ method: 'GET', url: `/app/sign-in?next=${encodeURIComponent(next)}` })
        .then((r) => /name="next" value="([^"]*)"/.exec(r.body)?.[1]);
    assert.equal(await kept('/app/settings'), '/app/settings');
    for (const bad of [
      '//evil.example/app/',
      'https://evil.example/app/',
      '/app/\\evil.example',
      '/api/products.json',
      '/app/../api/products.json',
      '/app/sign-in/x',
      '/app/\nX',
      'javascript:alert(1)',
    ]) {
      assert.equal(await kept(bad), undefined, bad);
    }
  });

  test('the browser that asked for the link lands on the page; another next is ignored', async () => {
    const person = await makeUser(t.db);
    for (const [next, landing] of [
      ['/app/settings', '/app/settings'],
      ['//evil.example/app/x', '/app/products'],
    ]) {
      const asked = await t.app.inject({
        method: 'POST',
        url: '/app/sign-in',
        remoteAddress: newIp(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ email: person.email, next }),
      });
      assert.equal(asked.statusCode, 200);
      const kept = [asked.headers['set-cookie'] ?? []].flat().find((c) => String(c).startsWith('shiplog_next='));
      const link = await mailedLink(person.email);
      assert.ok(link);
      const res = await t.app.inject({
        method: 'POST',
        url: link,
        headers: kept ? { cookie: String(kept).split(';')[0] } : {},
      });
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, landing, next);
    }
  });
});
