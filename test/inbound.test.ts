import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { openDatabase } from '../src/db/connection.js';
import { inboundOf, receiveMessage, type Outcome } from '../src/inbound/index.js';
import { ReplyAddresses } from '../src/mail/index.js';
import {
  advanceClock,
  client,
  deliveredMail,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  tempDir,
  type TestContext,
  type TestUser,
} from './helpers.js';
import { canConnect, freePort, runCli, startServer, stopAll, stopProcess } from './processes.js';
import { databaseOptionsFor } from './storage.js';

const DOMAIN = 'items.shiplog.test';

let t: TestContext;
before(async () => {
  const port = await freePort();
  // A file database (or a schema of its own on PostgreSQL) that `shiplog mail receive` opens too.
  t = await makeApp({
    file: true,
    env: { MAIL_INBOUND_PORT: String(port), MAIL_INBOUND_MAX_MB: '2', ATTACHMENT_MAX_MB: '1' },
    listenForMail: true,
  });
});
after(async () => {
  await stopAll();
  await t.close();
});

const replies = () => new ReplyAddresses(t.app.unsubscribeLinks, DOMAIN);

/** An item's JSON with its id (the addresses in `email` name it; Sprint.ly's JSON has no id). */
const withId = (item: { number: number; email: { discussion: string } }) => ({
  ...item,
  id: Number(/^discussion-(\d+)@/.exec(item.email.discussion)![1]),
});

/** A product with its owner, a member (Bob) and an item. */
async function setup() {
  const owner = await makeUser(t.db, { firstName: 'Olga', lastName: 'Owner' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'Baker' });
  const product = await makeProduct(t.db, owner, [bob], 'Mailroom');
  const item = withId(await makeItem(t.app, owner, product.id, { title: 'Answer by mail' }));
  const at = `/api/products/${product.id}/items/${item.number}`;
  return { owner, bob, product, item, at, reply: (user: TestUser) => replies().address(item.id, user.user.id) };
}

/** An RFC 5322 message, as a mail client would write it. */
const compose = (mail: Mail.Options): Promise<Buffer> => new MailComposer(mail).compile().build();

/** A reply as mail clients write one: new text, a signature, then the quoted message. */
const REPLY_TEXT =
  'Sounds good, shipping it tomorrow.\n\nThanks,\n-- \nBob Baker\nBaker & Sons\n\n' +
  'On Thu, Nov 26, 2026 at 10:00 AM Shiplog <shiplog@items.shiplog.test> wrote:\n' +
  '> Olga Owner commented on #1 Answer by mail:\n> Can we ship it?\n';
const REPLY_BODY = 'Sounds good, shipping it tomorrow.\n\nThanks,';

const receive = (raw: Buffer, recipients: string[], sender?: string): Promise<Outcome> =>
  receiveMessage(inboundOf(t.db, t.config, t.app.unsubscribeLinks), raw, { recipients, sender });

/** Sends a message to the app's SMTP listener; resolves with its answer, or rejects with the refusal. */
async function sendSmtp(raw: Buffer, envelope: { from: string; to: string[] }) {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: t.app.inboundMailPort!, secure: false });
  try {
    return await transport.sendMail({ envelope, raw });
  } finally {
    transport.close();
  }
}

const commentsOf = async (user: TestUser, at: string) => {
  const res = await client(t.app, user).get(`${at}/comments.json`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { body: string; created_by: { id: number } }[];
};
const attachmentsOf = async (user: TestUser, at: string) =>
  (await client(t.app, user).get(`${at}/attachments.json`)).json() as { id: number; name: string }[];
const explanations = () =>
  t.db.selectFrom('outbox').selectAll().where('kind', '=', 'inbound-refusal').orderBy('id').execute();

describe('replies by mail', () => {
  test('through SMTP: the signed Reply-To of comment mail makes that person a comment, unquoted', async () => {
    const { owner, bob, at } = await setup();
    await client(t.app, bob).post(`${at}/follow.json`);
    await client(t.app, owner).post(`${at}/comments.json`, { body: 'Can we ship it?' });
    const toBob = (await deliveredMail(t)).filter((m) => m.headers.get('to')!.includes(bob.email)).at(-1)!;
    const replyTo = toBob.headers.get('reply-to')!.replace(/^.*<|>.*$/g, '');
    assert.match(replyTo, /^discussion-\d+-\d+-[0-9a-f]{20}@items\.shiplog\.test$/);

    const raw = await compose({ from: bob.email, to: replyTo, subject: 'Re: it', text: REPLY_TEXT });
    const sent = await sendSmtp(raw, { from: bob.email, to: [replyTo] });
    assert.match(sent.response, /^250 /);
    const comments = await commentsOf(owner, at);
    assert.deepEqual(
      comments.map((c) => [c.body, c.created_by.id]),
      [
        ['Can we ship it?', owner.user.id],
        [REPLY_BODY, bob.user.id],
      ],
    );
    const row = await t.db.selectFrom('comments').select('via').orderBy('id', 'desc').executeTakeFirstOrThrow();
    assert.equal(row.via, 'mail');
    // The comment is mailed to the other followers, as any comment is.
    const mail = (await deliveredMail(t)).filter((m) => m.text?.includes('Sounds good'));
    assert.deepEqual(
      mail.map((m) => m.headers.get('to')!.includes(owner.email)),
      [true],
    );
  });

  test('a second copy of a message (a relay that lost the answer) adds nothing', async () => {
    const { owner, bob, at, reply } = await setup();
    const raw = await compose({
      from: bob.email,
      to: reply(bob),
      subject: 'Re: it',
      text: REPLY_TEXT,
      messageId: '<copy-1@mail.example.com>',
      attachments: [{ filename: 'log.txt', content: 'all green' }],
    });
    assert.equal((await receive(raw, [reply(bob)])).status, 'accepted');
    const again = await receive(raw, [reply(bob)]);
    assert.equal(again.status, 'ignored');
    const sent = await sendSmtp(raw, { from: bob.email, to: [reply(bob)] });
    assert.match(sent.response, /^250 .*a copy of a message the item took already/);
    assert.equal((await commentsOf(owner, at)).length, 1);
    assert.equal((await attachmentsOf(owner, at)).length, 1);
    // Another message, with its own Message-ID, is taken.
    const other = await compose({ from: bob.email, to: reply(bob), subject: 'Re: it', text: 'One more thing.' });
    assert.equal((await receive(other, [reply(bob)])).status, 'accepted');
    assert.equal((await commentsOf(owner, at)).length, 2);
  });

  test('the listener refuses at RCPT TO what is no item address, and takes one item address per message', async () => {
    const { bob, reply } = await setup();
    const raw = await compose({ from: bob.email, to: 'someone@elsewhere.test', subject: 'x', text: 'x' });
    for (const to of ['someone@elsewhere.test', `postmaster@${DOMAIN}`, `discussion-1-x@${DOMAIN}`])
      await assert.rejects(sendSmtp(raw, { from: bob.email, to: [to] }), (err: { responseCode?: number }) => {
        assert.equal(err.responseCode, 550, to);
        return true;
      });
    const two = await sendSmtp(raw, { from: bob.email, to: [reply(bob), `files-1@${DOMAIN}`] });
    assert.deepEqual(two.rejected, [`files-1@${DOMAIN}`]);
  });

  test('the HTML part is used only when there is no plain one, and its quoted part is removed', async () => {
    const { owner, bob, at, reply } = await setup();
    const quote =
      '<div class="gmail_quote">On Thu, Nov 26, 2026 at 10:00 AM Shiplog wrote:<blockquote>old</blockquote></div>';
    const html = `<p>Looks <b>right</b> to me.</p>${quote}`;
    assert.equal((await receive(await compose({ from: bob.email, html }), [reply(bob)])).status, 'accepted');
    const both = await compose({ from: bob.email, text: 'The plain one.', html: '<p>The HTML one.</p>' });
    assert.equal((await receive(both, [reply(bob)])).status, 'accepted');
    assert.deepEqual(
      (await commentsOf(owner, at)).map((c) => c.body),
      ['Looks right to me.', 'The plain one.'],
    );
  });

  test("a reply's attachments become the item's, by its author; inline images of the HTML do not", async () => {
    const { owner, bob, at, reply } = await setup();
    const raw = await compose({
      from: bob.email,
      text: 'Logs attached.',
      html: '<p>Logs attached.</p><img src="cid:logo@x">',
      attachments: [
        { filename: 'server.log', content: 'line 1\nline 2\n', contentType: 'text/plain' },
        { filename: 'logo.png', content: Buffer.from([137, 80, 78, 71]), cid: 'logo@x' },
      ],
    });
    const outcome = await receive(raw, [reply(bob)]);
    assert.equal(outcome.status, 'accepted');
    const files = await attachmentsOf(owner, at);
    assert.deepEqual(
      files.map((f) => f.name),
      ['server.log'],
    );
    const file = await client(t.app, owner).get(`${at}/attachments/${files[0].id}/file`);
    assert.equal(file.body, 'line 1\nline 2\n');
    assert.deepEqual(
      (await commentsOf(owner, at)).map((c) => c.body),
      ['Logs attached.'],
    );
  });

  test('files-<id>@ makes attachments only; discussion-<id>@ a comment of the member it is from', async () => {
    const { owner, bob, item, at } = await setup();
    const files = `files-${item.id}@${DOMAIN}`;
    const raw = await compose({
      from: `"Bob" <${bob.email.toUpperCase()}>`,
      to: files,
      subject: 'Screenshot',
      text: 'Here it is',
      attachments: [{ filename: 'screen.txt', content: 'pixels' }],
    });
    assert.deepEqual(await receive(raw, [files]), {
      status: 'accepted',
      recipient: files,
      itemId: item.id,
      commentId: undefined,
      files: 1,
    });
    assert.deepEqual(
      (await attachmentsOf(owner, at)).map((f) => f.name),
      ['screen.txt'],
    );
    const discussion = `discussion-${item.id}@${DOMAIN}`;
    const comment = await compose({ from: bob.email, to: discussion, text: 'Written to the item itself.' });
    assert.equal((await receive(comment, [discussion])).status, 'accepted');
    assert.deepEqual(
      (await commentsOf(owner, at)).map((c) => [c.body, c.created_by.id]),
      [['Written to the item itself.', bob.user.id]],
    );
  });
});

describe('refused mail', () => {
  /** Nothing was created on the item: no comment, no file. */
  async function assertNothing(s: { owner: TestUser; at: string }) {
    assert.deepEqual(await commentsOf(s.owner, s.at), []);
    assert.deepEqual(await attachmentsOf(s.owner, s.at), []);
  }

  test('forged, moved, unknown and non-member mail creates nothing and is explained once an hour', async () => {
    const s = await setup();
    const signed = s.reply(s.bob);
    const stranger = await makeUser(t.db);
    const other = withId(await makeItem(t.app, s.owner, s.product.id, { title: 'Another' }));
    const cases = [
      { sender: 'forger@example.com', to: signed.replace(/-([0-9a-f]{20})@/, (_, sig) => `-${sig.slice(1)}0@`) },
      { sender: 'mover@example.com', to: signed.replace(`discussion-${s.item.id}-`, `discussion-${other.id}-`) },
      { sender: 'lost@example.com', to: `discussion-999999@${DOMAIN}` },
      { sender: stranger.email, to: `discussion-${s.item.id}@${DOMAIN}` },
      { sender: 'anyone@example.com', to: `files-${s.item.id}@${DOMAIN}` },
    ];
    const reasons = ['unknown_address', 'unknown_address', 'unknown_address', 'not_member', 'not_member'];
    for (const [i, c] of cases.entries()) {
      const raw = await compose({
        from: c.sender,
        to: c.to,
        subject: `Try ${i}`,
        messageId: `<try-${i}@example.com>`,
        text: 'Let me in',
        attachments: [{ filename: 'a.txt', content: 'a' }],
      });
      const before = (await explanations()).length;
      const outcome = await receive(raw, [c.to]);
      assert.deepEqual(outcome.status === 'refused' && [outcome.reason, outcome.explained], [reasons[i], true], c.to);
      assert.equal((await explanations()).length, before + 1, c.to);
      // A second within the hour is refused as well, and not explained again.
      const again = await receive(raw, [c.to]);
      assert.deepEqual(again.status === 'refused' && again.explained, false, c.to);
      assert.equal((await explanations()).length, before + 1, c.to);
    }
    await assertNothing(s);
    assert.deepEqual(await attachmentsOf(s.owner, `/api/products/${s.product.id}/items/${other.number}`), []);

    const mail = (await deliveredMail(t)).filter((m) => m.headers.get('subject')?.startsWith('Not added to Shiplog'));
    const toForger = mail.find((m) => m.headers.get('to') === 'forger@example.com')!;
    assert.equal(toForger.headers.get('subject'), 'Not added to Shiplog: Try 0');
    assert.equal(toForger.headers.get('auto-submitted'), 'auto-replied');
    assert.equal(toForger.headers.get('in-reply-to'), '<try-0@example.com>');
    assert.match(toForger.text!, /does not know the address you wrote to/);
    const toStranger = mail.find((m) => m.headers.get('to') === stranger.email)!;
    assert.match(toStranger.text!, /only from members/);
    assert.ok(!toStranger.text!.includes('Mailroom'), 'nothing of the product is told to a non-member');

    // An hour later the same sender is told again.
    advanceClock(3600_000 + 1000);
    const later = await receive(await compose({ from: 'forger@example.com', text: 'Again' }), [cases[0].to]);
    assert.deepEqual(later.status === 'refused' && later.explained, true);
  });

  test('bounces and auto-replies create nothing and are never answered', async () => {
    const s = await setup();
    const signed = s.reply(s.bob);
    const from = s.bob.email;
    const automated: [Mail.Options, string?][] = [
      [{ from, headers: { 'Auto-Submitted': 'auto-replied' }, text: 'I am away' }],
      [{ from, headers: { Precedence: 'bulk' }, text: 'Newsletter' }],
      [{ from, headers: { Precedence: 'junk' }, text: 'Junk' }],
      [{ from, headers: { 'X-Autoreply': 'yes' }, text: 'Away' }],
      [{ from, text: 'Undeliverable' }, ''],
      [{ from, headers: { 'Return-Path': '<>' }, text: 'Undeliverable' }],
      [{ from: `MAILER-DAEMON@example.com`, text: 'Delivery failed' }],
      [{ from: `shiplog@${DOMAIN}`, text: 'Our own mail back' }],
    ];
    const before = (await explanations()).length;
    for (const [options, sender] of automated) {
      const outcome = await receive(await compose(options), [signed], sender);
      assert.equal(outcome.status, 'ignored', JSON.stringify(options));
    }
    // Automated mail to a forged address is not answered either.
    const forged = `discussion-${s.item.id}-${s.bob.user.id}-${'0'.repeat(20)}@${DOMAIN}`;
    const bounce = await compose({
      from: 'stranger@example.com',
      text: 'x',
      headers: { 'Auto-Submitted': 'auto-generated' },
    });
    assert.equal((await receive(bounce, [forged])).status, 'ignored');
    // Through SMTP, with the null sender.
    const sent = await sendSmtp(await compose({ from, text: 'Bounce' }), { from: '', to: [signed] });
    assert.match(sent.response, /^250 /);
    // Mail that asks for no automatic answer, or comes from an address nobody reads, is refused unanswered.
    const discussion = `discussion-${s.item.id}@${DOMAIN}`;
    for (const options of [
      { from: 'suppress@example.com', headers: { 'X-Auto-Response-Suppress': 'All' }, text: 'Hi' },
      { from: 'no-reply@example.com', text: 'Hi' },
    ]) {
      const outcome = await receive(await compose(options), [discussion]);
      assert.deepEqual(outcome.status === 'refused' && [outcome.reason, outcome.explained], ['not_member', false]);
    }
    // Auto-Submitted: no is a person's mail.
    const person = await compose({ from, headers: { 'Auto-Submitted': 'no' }, text: 'Written by hand' });
    assert.equal((await receive(person, [signed])).status, 'accepted');
    assert.deepEqual(
      (await commentsOf(s.owner, s.at)).map((c) => c.body),
      ['Written by hand'],
    );
    assert.equal((await explanations()).length, before);
  });

  test('over MAIL_INBOUND_MAX_MB is refused before it is read, through both ways in', async () => {
    const s = await setup();
    const signed = s.reply(s.bob);
    const big = await compose({
      from: s.bob.email,
      text: 'Big',
      attachments: [{ filename: 'big.bin', content: Buffer.alloc(2 * 1024 * 1024, 1) }],
    });
    const outcome = await receive(big, [signed]);
    assert.deepEqual(outcome.status === 'refused' && [outcome.reason, outcome.explained], ['too_large', false]);
    await assert.rejects(sendSmtp(big, { from: s.bob.email, to: [signed] }), (err: { responseCode?: number }) => {
      assert.equal(err.responseCode, 552);
      return true;
    });
    await assertNothing(s);
  });

  test('a file over ATTACHMENT_MAX_MB refuses the whole reply, comment included, and is explained', async () => {
    const s = await setup();
    const raw = await compose({
      from: s.bob.email,
      text: 'With a large file',
      attachments: [{ filename: 'big.bin', content: Buffer.alloc(1024 * 1024 + 1, 1) }],
    });
    const outcome = await receive(raw, [s.reply(s.bob)]);
    assert.deepEqual(outcome.status === 'refused' && [outcome.reason, outcome.explained], ['file_refused', true]);
    await assertNothing(s);
  });

  test('the listener answers 451 when the message cannot be stored, so that the relay tries again', async () => {
    const port = await freePort();
    const down = await makeApp({ env: { MAIL_INBOUND_PORT: String(port) }, listenForMail: true });
    const s = { bob: await makeUser(down.db) };
    await down.db.destroy();
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false });
    const raw = await compose({ from: s.bob.email, text: 'Hello' });
    try {
      await assert.rejects(
        transport.sendMail({ envelope: { from: s.bob.email, to: [`discussion-1@${DOMAIN}`] }, raw }),
        (err: { responseCode?: number }) => {
          assert.equal(err.responseCode, 451);
          return true;
        },
      );
    } finally {
      transport.close();
      await down.app.close();
    }
  });
});

describe('shiplog mail receive', () => {
  const pipe = (input: Buffer, ...args: string[]) =>
    runCli(['mail', 'receive', ...args], {
      dataDir: t.dataDir,
      input,
      env: { MAIL_DOMAIN: DOMAIN, PUBLIC_URL: 'http://shiplog.test', MAIL_INBOUND_MAX_MB: '2' },
    });

  test('a reply on standard input becomes the comment of the person of its address (0)', async () => {
    const s = await setup();
    const to = s.reply(s.bob);
    const run = await pipe(await compose({ from: s.bob.email, to, subject: 'Re: it', text: REPLY_TEXT }), to);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    // Without an address, the headers a pipe transport adds (Delivered-To) or the sender's say where it went.
    const headers = await compose({ from: s.bob.email, headers: { 'Delivered-To': to }, text: 'Second' });
    assert.equal((await pipe(headers)).code, 0);
    assert.deepEqual(
      (await commentsOf(s.owner, s.at)).map((c) => [c.body, c.created_by.id]),
      [
        [REPLY_BODY, s.bob.user.id],
        ['Second', s.bob.user.id],
      ],
    );
  });

  test('exit statuses for a pipe: 67 no such address, 65 too large or unreadable, 75 no database', async () => {
    const s = await setup();
    const to = s.reply(s.bob);
    const raw = await compose({ from: s.bob.email, to, text: 'Hi' });
    const unknown = await pipe(raw, 'someone@elsewhere.test');
    assert.equal(unknown.code, 67, unknown.stdout);
    assert.match(unknown.stdout, /^5\.1\.1 /);
    const big = await compose({
      from: s.bob.email,
      text: 'x',
      attachments: [{ content: Buffer.alloc(2 * 1024 * 1024) }],
    });
    assert.equal((await pipe(big, to)).code, 65);
    assert.equal((await pipe(Buffer.from('no headers at all'), to)).code, 65);
    const noDatabase = await runCli(['mail', 'receive', to], {
      dataDir: t.dataDir,
      input: raw,
      env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '2000' },
    });
    assert.equal(noDatabase.code, 75, noDatabase.stdout + noDatabase.stderr);
    // A refusal Shiplog explains itself exits 0: a bounce from the mail system would tell the sender twice.
    const stranger = await compose({ from: 'piped-stranger@example.com', text: 'Me too' });
    const refused = await pipe(stranger, `discussion-${s.item.id}@${DOMAIN}`);
    assert.equal(refused.code, 0);
    assert.match(refused.stdout, /not_member/);
    assert.ok((await explanations()).some((m) => m.to_address === 'piped-stranger@example.com'));
    assert.deepEqual(await commentsOf(s.owner, s.at), []);
  });
});

describe('the server', () => {
  test('listens for mail on MAIL_INBOUND_PORT while it runs, and stops with it', async () => {
    const dataDir = tempDir();
    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const member = await makeUser(db);
    const product = await makeProduct(db, member);
    await db.destroy();
    const mailPort = await freePort();
    const server = await startServer({ dataDir, env: { MAIL_DOMAIN: DOMAIN, MAIL_INBOUND_PORT: String(mailPort) } });
    const api = `http://127.0.0.1:${server.port}/api/products/${product.id}`;
    const headers = { authorization: member.auth, 'content-type': 'application/json' };
    const created = await fetch(`${api}/items.json`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'task', title: 'By mail' }),
    });
    const item = withId(await created.json());
    const to = item.email.discussion;
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: mailPort, secure: false });
    try {
      const raw = await compose({ from: member.email, to, text: REPLY_TEXT });
      await transport.sendMail({ envelope: { from: member.email, to: [to] }, raw });
    } finally {
      transport.close();
    }
    const comments = await (await fetch(`${api}/items/${item.number}/comments.json`, { headers })).json();
    assert.deepEqual(
      comments.map((c: { body: string }) => c.body),
      [REPLY_BODY],
    );
    await stopProcess(server.child);
    assert.equal(await canConnect(mailPort), false);
  });
});
