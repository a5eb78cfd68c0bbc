import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { OutboxRow } from '../src/db/schema.js';
import { mailStatus, retryMail } from '../src/mail/service.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';
import { runCli, type CliRun } from './processes.js';
import { SmtpSink } from './smtp-sink.js';

const BUILT_CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const MAIL_FROM = 'Rocket Deploys <deploys@shiplog.test>';
// A stuck delivery round fails its test instead of stalling the file.
const BOUNDED = { timeout: 30_000 };

let sink: SmtpSink;
let t: TestContext;
before(async () => {
  sink = await SmtpSink.create();
  // A database file, so that the command line can read the same outbox.
  t = await makeApp({ file: true, env: { SMTP_URL: sink.url, MAIL_FROM } });
});
after(async () => {
  await t?.close();
  await sink?.stop();
});

async function setup(followers: string[] = ['Alice', 'Bob']) {
  const deployer = await makeUser(t.db, { firstName: 'Dee', lastName: 'Ployer' });
  const people: TestUser[] = [];
  for (const name of followers) people.push(await makeUser(t.db, { firstName: name, lastName: name[0] }));
  const product = await makeProduct(t.db, deployer, people, 'Rocket');
  const base = `/api/products/${product.id}`;
  return { deployer, people, product, base, api: client(t.app, deployer) };
}

async function deploy(api: ReturnType<typeof client>, base: string, params: Record<string, string>): Promise<number> {
  const res = await api.post(`${base}/deploys.json`, { environment: 'production', ...params });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().id;
}

const rowsOf = (deployId: number): Promise<OutboxRow[]> =>
  t.db.selectFrom('outbox').selectAll().where('deploy_id', '=', deployId).orderBy('id').execute();

const addressOf = (row: OutboxRow): string => /<([^>]+)>$/.exec(row.to_address)![1];

async function rowFor(deployId: number, user: TestUser): Promise<OutboxRow> {
  const row = (await rowsOf(deployId)).find((r) => r.user_id === user.user.id);
  assert.ok(row, `no message for ${user.email} in deploy ${deployId}`);
  return row;
}

/** Makes the given messages due now, as if their backoff had passed. */
async function makeDue(rows: OutboxRow[]): Promise<void> {
  await t.db
    .updateTable('outbox')
    .set({ next_attempt_at: '2000-01-01T00:00:00+00:00' })
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .execute();
}

/** The next attempt is 15 to 45 s after a first failure (30 s with ±50% jitter). */
function assertFirstBackoff(row: OutboxRow, failedAt: number): void {
  const delay = Date.parse(row.next_attempt_at) - failedAt;
  assert.ok(delay >= 14_000 && delay <= 46_000, `first retry ${delay} ms after the failure`);
}

async function health(): Promise<{ status: string; database: string; mail: Record<string, number | string | null> }> {
  const res = await t.app.inject({ method: 'GET', url: '/health' });
  assert.equal(res.statusCode, 200);
  return res.json();
}

async function shiplog(...args: string[]): Promise<CliRun> {
  assert.ok(fs.existsSync(BUILT_CLI), 'the command line is not built: run "npm run build" first');
  return runCli(args, { dataDir: t.dataDir });
}

describe('deploy email over SMTP: failures', () => {
  for (const stage of ['rcpt', 'data'] as const) {
    test(
      `a temporary 451 (at ${stage === 'rcpt' ? 'RCPT TO' : 'end of data'}) ` +
        'is retried after backoff and delivered once',
      BOUNDED,
      async () => {
        const { api, base, deployer, people, product } = await setup(['Alice']);
        const [alice] = people;
        await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
        sink.failNext(1, { code: 451, text: 'Greylisted, try again later', stage, recipient: alice.email });
        const refusedBefore = sink.refusals.length;

        const id = await deploy(api, base, { numbers: '1' });
        const failedAt = Date.now();
        await t.app.outbox.deliverDue();
        const row = await rowFor(id, alice);
        assert.equal(row.status, 'pending');
        assert.equal(row.attempts, 1);
        assert.match(row.last_error ?? '', /451 Greylisted/);
        assertFirstBackoff(row, failedAt);
        assert.deepEqual(sink.refusals.slice(refusedBefore), [{ stage, code: 451, recipient: alice.email }]);
        assert.equal(sink.byMessageId(row.message_id).length, 0);

        await makeDue([row]);
        await t.app.outbox.deliverDue();
        await t.app.outbox.deliverDue();
        const retried = await rowFor(id, alice);
        assert.equal(retried.status, 'sent');
        assert.equal(retried.attempts, 2);
        assert.equal(retried.last_error, null);
        assert.equal(sink.byMessageId(row.message_id).length, 1);
      },
    );
  }

  test(
    "a permanent 5xx is recorded as failed with the server's answer, not retried, and shows in mail status and /health",
    BOUNDED,
    async () => {
      const { api, base, deployer, people, product } = await setup(['Alice', 'Bob']);
      const [alice, bob] = people;
      await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id });
      await client(t.app, bob).post(`${base}/items/1/follow.json`);
      sink.refuse({ stage: 'data', code: 554, text: 'Message refused by content policy', recipient: alice.email });
      const baseline = await health();

      const id = await deploy(api, base, { numbers: '1' });
      await t.app.outbox.deliverDue();
      const failed = await rowFor(id, alice);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.attempts, 1);
      assert.match(failed.last_error ?? '', /554 Message refused by content policy/);
      assert.equal((await rowFor(id, bob)).status, 'sent');

      // Neither time passing nor an operator's plain retry sends a given-up message again.
      await makeDue([failed]);
      assert.equal(await retryMail(t.db, false), 0);
      await t.app.outbox.deliverDue();
      const still = await rowFor(id, alice);
      assert.equal(still.status, 'failed');
      assert.equal(still.attempts, 1);
      assert.equal(sink.refusals.filter((r) => r.recipient === alice.email).length, 1);
      assert.equal(sink.byMessageId(failed.message_id).length, 0);

      const later = await health();
      assert.equal(Number(later.mail.failed) - Number(baseline.mail.failed), 1);
      const status = await mailStatus(t.db, t.config.mailStallSeconds);
      assert.equal(status.counts.failed, Number(later.mail.failed));
      const listed = status.recentErrors.find((e) => e.id === failed.id);
      assert.ok(listed, 'the failure is among the recent errors');
      assert.equal(listed.status, 'failed');
      assert.equal(listed.to, failed.to_address);
      assert.equal(listed.attempts, 1);
      assert.match(listed.error, /554 Message refused by content policy/);

      const json = await shiplog('mail', 'status', '--json');
      assert.equal(json.code, 0, json.stderr);
      const cli = JSON.parse(json.stdout);
      assert.equal(cli.counts.failed, status.counts.failed);
      assert.ok(cli.recentErrors.some((e: { id: number; error: string }) => e.id === failed.id && /554/.test(e.error)));
      const text = await shiplog('mail', 'status');
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`^failed +${status.counts.failed}$`, 'm'));
      assert.match(
        text.stdout,
        new RegExp(`#${failed.id} to .*${alice.email.replace(/[.]/g, '\\.')}.* given up: .*554 Message refused`),
      );
    },
  );

  test(
    'an address the server rejects (550) fails alone; the other followers of the deploy get theirs',
    BOUNDED,
    async () => {
      const { api, base, deployer, people, product } = await setup(['Alice', 'Bob', 'Carol']);
      const [alice, bob, carol] = people;
      for (const p of people) await makeItem(t.app, deployer, product.id, { assigned_to: p.user.id });
      sink.rejectRecipient(bob.email, 'No such user here');

      const id = await deploy(api, base, { numbers: '1,2,3' });
      await t.app.outbox.deliverDue();
      const bad = await rowFor(id, bob);
      assert.equal(bad.status, 'failed');
      assert.match(bad.last_error ?? '', /550 No such user here/);
      for (const good of [alice, carol]) {
        const row = await rowFor(id, good);
        assert.equal(row.status, 'sent');
        assert.equal(row.attempts, 1);
        assert.equal(sink.byMessageId(row.message_id).length, 1);
        assert.deepEqual(sink.byMessageId(row.message_id)[0].envelopeTo, [good.email]);
      }
      assert.equal(sink.to(bob.email).length, 0);
    },
  );
});

describe('deploy email over SMTP', () => {
  test(
    'each follower gets exactly one message, with the headers, parts and content of the deploy',
    BOUNDED,
    async () => {
      const { api, base, deployer, people, product } = await setup(['Alice', 'Bob', 'Carol']);
      const [alice, bob, carol] = people;
      const login = await makeItem(t.app, deployer, product.id, {
        title: 'Login page – Überarbeitung ✓',
        assigned_to: alice.user.id,
      });
      const hostile = '<img src=x onerror=alert(1)> & <script>alert(1)</script>';
      const signup = await makeItem(t.app, alice, product.id, { type: 'defect', title: `Sign-up ${hostile}` });
      await makeItem(t.app, deployer, product.id, { title: 'Nobody else follows this' });
      await client(t.app, bob).post(`${base}/items/2/follow.json`);
      assert.equal((await api.post(`${base}/items/1.json`, { status: 'in-progress' })).statusCode, 200);
      assert.equal((await api.post(`${base}/items/2.json`, { status: 'completed' })).statusCode, 200);
      const notes = [
        'Ships **bold** changes.',
        '',
        '<script>alert(1)</script>',
        '',
        '<img src=x onerror=alert(2)>',
        '',
        '[click me](javascript:alert(3))',
      ].join('\n');

      const id = await deploy(api, base, { numbers: '1,2,3', version: 'v2.0.1', notes });
      const rows = await rowsOf(id);
      assert.deepEqual(rows.map((r) => r.user_id).sort(), [alice.user.id, bob.user.id].sort());
      await t.app.outbox.deliverDue();
      await t.app.outbox.deliverDue();

      for (const row of rows) {
        const copies = sink.byMessageId(row.message_id);
        assert.equal(copies.length, 1, `${row.message_id} arrived exactly once`);
        const [{ envelopeFrom, envelopeTo, mail }] = copies;
        assert.equal(envelopeFrom, 'deploys@shiplog.test');
        assert.deepEqual(envelopeTo, [addressOf(row)]);
        const h = mail.headers;
        assert.equal(h.get('from'), MAIL_FROM);
        assert.equal(h.get('message-id'), row.message_id);
        assert.match(row.message_id, /^<deploy-\d+-\d+\.[0-9a-f]+@items\.shiplog\.test>$/);
        assert.equal(Date.parse(h.get('date')!), Date.parse(row.created_at), 'Date is when the deploy was recorded');
        assert.match(h.get('content-type')!, /^multipart\/alternative;/);
        assert.match(mail.raw, /\r\nContent-Type: text\/plain; charset=utf-8\r\n/i);
        assert.match(mail.raw, /\r\nContent-Type: text\/html; charset=utf-8\r\n/i);
        assert.match(
          h.get('list-unsubscribe')!,
          /^<http:\/\/shiplog\.test\/unsubscribe\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+>$/,
        );
        assert.equal(h.get('list-unsubscribe-post'), 'List-Unsubscribe=One-Click');

        assert.match(mail.text, /Dee Ployer deployed version v2\.0\.1 to production on /);
        assert.ok(mail.text.includes(notes), 'the text part carries the notes as written');
        assert.match(
          mail.html,
          /<strong>Dee Ployer<\/strong> deployed version <strong>v2\.0\.1<\/strong> to <strong>production<\/strong>/,
        );
        assert.match(mail.html, /<strong>bold<\/strong>/);
        assert.ok(mail.html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'HTML in notes is shown as text');
        assert.ok(mail.html.includes('&lt;img src=x onerror=alert(2)&gt;'), 'HTML in notes is shown as text');
        assert.doesNotMatch(mail.html, /<script/i);
        assert.doesNotMatch(mail.html, /<img/i);
        assert.doesNotMatch(mail.html, /href="javascript:/i);
      }

      const a = sink.byMessageId((await rowFor(id, alice)).message_id)[0].mail;
      assert.equal(a.headers.get('to'), `Alice A <${alice.email}>`);
      assert.equal(
        a.headers.get('subject'),
        '[Rocket] Deployed to production: #1 Login page – Überarbeitung ✓ and 1 more',
      );
      assert.ok(
        a.text.includes(`#1 [task] Login page – Überarbeitung ✓ (in-progress)\n      ${login.short_url}`),
        a.text,
      );
      assert.ok(a.text.includes(`#2 [defect] Sign-up ${hostile} (completed)\n      ${signup.short_url}`), a.text);
      assert.doesNotMatch(a.text, /Nobody else/);
      assert.ok(a.html.includes(`<a href="${login.short_url}">#1</a>`));
      assert.ok(a.html.includes(`<a href="${signup.short_url}">#2</a>`));
      assert.match(a.html, /<td[^>]*>in-progress<\/td>/);
      assert.match(a.html, /<td[^>]*>completed<\/td>/);
      assert.match(a.html, /<td[^>]*>defect<\/td>/);
      assert.ok(
        a.html.includes('Sign-up &lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;'),
        'titles are escaped',
      );

      const b = sink.byMessageId((await rowFor(id, bob)).message_id)[0].mail;
      assert.equal(b.headers.get('to'), `Bob B <${bob.email}>`);
      assert.equal(b.headers.get('subject'), `[Rocket] Deployed to production: #2 Sign-up ${hostile}`);
      assert.ok(b.text.includes(`#2 [defect] Sign-up ${hostile} (completed)`));
      assert.doesNotMatch(b.text, /Login page/);
      assert.doesNotMatch(b.html, /Login page/);

      assert.equal(sink.to(deployer.email).length, 0, 'the deployer is not mailed about their own deploy');
      assert.equal(sink.to(carol.email).length, 0, 'a member who follows nothing deployed gets nothing');
    },
  );

  test('a delivery round shares a small pool of connections rather than opening one per message', BOUNDED, async () => {
    const { api, base, deployer, people, product } = await setup(Array.from({ length: 20 }, (_, i) => `Pooled${i}`));
    await makeItem(t.app, deployer, product.id);
    for (const p of people) await client(t.app, p).post(`${base}/items/1/follow.json`);
    const id = await deploy(api, base, { numbers: '1' });
    sink.resetConnectionCounts();
    await t.app.outbox.deliverDue();

    const rows = await rowsOf(id);
    assert.equal(rows.length, 20);
    for (const row of rows) assert.equal(sink.byMessageId(row.message_id).length, 1);
    // The transport is a pool of at most 5 connections (src/mail/transport.ts).
    assert.ok(
      sink.peakConnections <= 5,
      `${sink.peakConnections} connections open at once for ${rows.length} messages`,
    );
    assert.ok(sink.connectionsOpened <= 5, `${sink.connectionsOpened} connections opened for ${rows.length} messages`);
  });

  describe('one-click unsubscribe', () => {
    async function deliveredPair() {
      const { api, base, deployer, people, product } = await setup(['Alice', 'Bob']);
      const [alice, bob] = people;
      await makeItem(t.app, deployer, product.id, { assigned_to: alice.user.id }); // 1: deployer, alice
      await makeItem(t.app, alice, product.id); // 2: alice
      await client(t.app, bob).post(`${base}/items/1/follow.json`); // 1: + bob
      const id = await deploy(api, base, { numbers: '1,2' });
      await t.app.outbox.deliverDue();
      const aliceRow = await rowFor(id, alice);
      const bobRow = await rowFor(id, bob);
      const link = (row: OutboxRow) => {
        const [received] = sink.byMessageId(row.message_id);
        assert.ok(received, `${row.message_id} was delivered`);
        const header = received.mail.headers.get('list-unsubscribe')!;
        return new URL(/^<(.+)>$/.exec(header)![1]).pathname;
      };
      return {
        api,
        base,
        product,
        deployer,
        alice,
        bob,
        aliceLink: link(aliceRow),
        bobLink: link(bobRow),
        bobRow,
        aliceRow,
      };
    }

    const oneClick = (url: string) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });

    const followed = async (userId: number, productId: number): Promise<number[]> =>
      (
        await t.db
          .selectFrom('followers')
          .innerJoin('items', 'items.id', 'followers.item_id')
          .select('items.number')
          .where('followers.user_id', '=', userId)
          .where('items.product_id', '=', productId)
          .orderBy('items.number')
          .execute()
      ).map((r) => r.number);

    test('a forged, altered or foreign token is 404 and changes nothing', BOUNDED, async () => {
      const { alice, bob, product, aliceLink, bobRow } = await deliveredPair();
      const token = aliceLink.slice('/unsubscribe/'.length);
      const [encoded, signature] = token.split('.');
      const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
      const bobId = Buffer.from(bobRow.message_id, 'utf8').toString('base64url');
      const foreignKey = crypto
        .createHmac('sha256', 'not the key')
        .update(`unsubscribe\0${bobRow.message_id}`)
        .digest('base64url');
      const forged = [
        `${encoded}.${flip(signature, 10)}`, // one character of the signature changed
        `${flip(encoded, 5)}.${signature}`, // the message named changed
        `${bobId}.${signature}`, // another user's message with this signature
        `${bobId}.${foreignKey}`, // signed with another key
        t.app.unsubscribeLinks.token('<deploy-0-0.000000@items.shiplog.test>'), // validly signed, no such message
        `${token}.extra`,
        'garbage',
      ];
      for (const bad of forged) {
        for (const method of ['GET', 'POST'] as const) {
          const res =
            method === 'GET'
              ? await t.app.inject({ method, url: `/unsubscribe/${bad}` })
              : await oneClick(`/unsubscribe/${bad}`);
          assert.equal(res.statusCode, 404, `${method} ${bad}`);
          assert.equal(res.json().code, 404);
        }
      }
      assert.deepEqual(await followed(alice.user.id, product.id), [1, 2]);
      assert.deepEqual(await followed(bob.user.id, product.id), [1]);
    });

    test(
      'the link of a received message stops its recipient, and only them, following its items; it works once',
      BOUNDED,
      async () => {
        const { api, base, product, alice, bob, aliceLink, bobLink } = await deliveredPair();

        const described = await t.app.inject({ method: 'GET', url: aliceLink });
        assert.equal(described.statusCode, 200);
        assert.deepEqual(described.json(), { email: alice.email, items: [1, 2], used: false });
        const page = await t.app.inject({ method: 'GET', url: aliceLink, headers: { accept: 'text/html' } });
        assert.equal(page.statusCode, 200);
        assert.match(page.body, /<form method="post">/);
        assert.deepEqual(await followed(alice.user.id, product.id), [1, 2], 'looking at the link changes nothing');

        const done = await oneClick(aliceLink);
        assert.equal(done.statusCode, 200, done.body);
        assert.deepEqual(done.json(), { email: alice.email, unfollowed: [1, 2] });
        assert.deepEqual(await followed(alice.user.id, product.id), []);
        assert.deepEqual(await followed(bob.user.id, product.id), [1], "another follower's subscription is untouched");

        const again = await oneClick(aliceLink);
        assert.equal(again.statusCode, 410);
        assert.equal(again.json().code, 410);
        assert.equal((await t.app.inject({ method: 'GET', url: aliceLink })).json().used, true);

        const next = await deploy(api, base, { numbers: '1,2', version: 'next' });
        const rows = await rowsOf(next);
        assert.deepEqual(
          rows.map((r) => r.user_id),
          [bob.user.id],
          'only Bob is mailed about the next deploy',
        );
        const aliceBefore = sink.to(alice.email).length;
        await t.app.outbox.deliverDue();
        assert.equal(sink.to(alice.email).length, aliceBefore);
        assert.equal(sink.byMessageId(rows[0].message_id).length, 1);

        const bobDone = await oneClick(bobLink);
        assert.equal(bobDone.statusCode, 200);
        assert.deepEqual(bobDone.json(), { email: bob.email, unfollowed: [1] });
        assert.deepEqual(await followed(bob.user.id, product.id), []);
      },
    );
  });
});
