import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mentionedIn } from '../src/conversation/mentions.js';
import { ReplyAddresses, UnsubscribeLinks } from '../src/mail/index.js';
import { sharedSecret } from '../src/settings.js';
import {
  assertError,
  client,
  deliveredMail,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
  type TestUser,
} from './helpers.js';

let t: TestContext;
before(async () => {
  t = await makeApp({ file: true, env: { WEBHOOKS_ALLOW_PRIVATE: '1' } });
});
after(() => t.close());

/** A product with its owner and two members (Alice Archer, Bob Baker), and an item assigned to Alice. */
async function setup() {
  const owner = await makeUser(t.db, { firstName: 'Olga', lastName: 'Owner' });
  const alice = await makeUser(t.db, { firstName: 'Alice', lastName: 'Archer' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'Baker' });
  const product = await makeProduct(t.db, owner, [alice, bob], 'Talk');
  const item = await makeItem(t.app, owner, product.id, { title: 'Fix login', assigned_to: alice.user.id });
  const base = `/api/products/${product.id}`;
  return { owner, alice, bob, product, item, base, at: `${base}/items/${item.number}` };
}

const itemOf = async (user: TestUser, at: string) => {
  const res = await client(t.app, user).get(`${at}.json`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};

/** The outbox rows of a kind, oldest first. */
const outbox = (kind: string) => t.db.selectFrom('outbox').selectAll().where('kind', '=', kind).orderBy('id').execute();

describe('comments', () => {
  test('post (form and JSON), list oldest first with the total, fetch one; the item counts them', async () => {
    const { owner, alice, at } = await setup();
    const before = await itemOf(owner, at);
    assert.deepEqual(before.counts, { blockers: 0, blocking: 0, comments: 0, favorites: 0 });
    const form = await client(t.app, alice).post(`${at}/comments.json`, { body: 'Seen it *twice*' });
    assert.equal(form.statusCode, 200, form.body);
    const first = form.json();
    assert.deepEqual(Object.keys(first).sort(), ['body', 'created_at', 'created_by', 'id', 'last_modified', 'type']);
    assert.equal(first.type, 'comment');
    assert.equal(first.body, 'Seen it *twice*');
    assert.equal(first.created_by.email, alice.email);
    assert.match(first.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    const json = await client(t.app, owner).postJson(`${at}/comments.json`, { body: 'On it' });
    assert.equal(json.statusCode, 200, json.body);

    const list = await client(t.app, owner).get(`${at}/comments.json`);
    assert.equal(list.statusCode, 200);
    assert.equal(list.headers['x-sprintly-comment-count'], '2');
    assert.deepEqual(
      list.json().map((c: { body: string }) => c.body),
      ['Seen it *twice*', 'On it'],
    );
    const one = (await client(t.app, owner).get(`${at}/comments/${first.id}.json`)).json();
    assert.deepEqual({ ...one, created_by: one.created_by.id }, { ...first, created_by: alice.user.id });

    const after = await itemOf(owner, at);
    assert.equal(after.counts.comments, 2);
    assert.notEqual(after.last_activity < before.last_activity, true);
    assert.equal(after.last_modified, before.last_modified, "a comment is not a change of the item's fields");
    const etag = (await client(t.app, owner).get(`${at}.json`)).headers.etag;
    await client(t.app, owner).post(`${at}/comments.json`, { body: 'Third' });
    assert.notEqual((await client(t.app, owner).get(`${at}.json`)).headers.etag, etag, 'a new version');
  });

  test('a comment shows in the item lists at once (kept answers follow it)', async () => {
    const { owner, base, at, item } = await setup();
    const list = async () =>
      (await client(t.app, owner).get(`${base}/items.json`))
        .json()
        .find((i: { number: number }) => i.number === item.number);
    assert.equal((await list()).counts.comments, 0);
    await client(t.app, owner).post(`${at}/comments.json`, { body: 'Counted' });
    assert.equal((await list()).counts.comments, 1);
  });

  test('bad input is a 400 naming body; nothing is stored', async () => {
    const { owner, at } = await setup();
    const api = client(t.app, owner);
    for (const [label, res] of [
      ['missing', await api.post(`${at}/comments.json`, {})],
      ['empty', await api.post(`${at}/comments.json`, { body: '  \n' })],
      ['too long', await api.post(`${at}/comments.json`, { body: 'é'.repeat(40_000) })],
      ['control character', await api.post(`${at}/comments.json`, { body: 'a\u0007b' })],
      ['an object', await api.postJson(`${at}/comments.json`, { body: { text: 'x' } })],
    ] as const)
      assertError(res, 400, { errors: ['body'], label });
    assert.equal((await api.get(`${at}/comments.json`)).headers['x-sprintly-comment-count'], '0');
    assert.equal((await api.post(`${at}/comments.json`, { body: 'x'.repeat(65535) })).statusCode, 200);
  });

  test('deleting: the author alone (403 for others); 404 for unknown ids and ids of another item', async () => {
    const { owner, alice, bob, product, at } = await setup();
    const comment = (await client(t.app, alice).post(`${at}/comments.json`, { body: 'Mine' })).json();
    assertError(await client(t.app, bob).delete(`${at}/comments/${comment.id}.json`), 403);
    assertError(await client(t.app, owner).delete(`${at}/comments/${comment.id}.json`), 403, {
      label: 'an admin neither',
    });
    const other = await makeItem(t.app, owner, product.id);
    const otherAt = `/api/products/${product.id}/items/${other.number}`;
    assertError(await client(t.app, alice).get(`${otherAt}/comments/${comment.id}.json`), 404);
    assertError(await client(t.app, alice).get(`${at}/comments/99999999.json`), 404);
    assertError(await client(t.app, alice).get(`${at}/comments/abc.json`), 404);
    const gone = await client(t.app, alice).delete(`${at}/comments/${comment.id}.json`);
    assert.equal(gone.statusCode, 200, gone.body);
    assert.equal(gone.json().body, 'Mine');
    assertError(await client(t.app, alice).get(`${at}/comments/${comment.id}.json`), 404);
    assert.equal((await itemOf(alice, at)).counts.comments, 0);
  });

  test('pages: 100 by default, X-Sprintly-Next-Offset, and a page ends early within the size bound', async () => {
    const { owner, at } = await setup();
    const api = client(t.app, owner);
    for (let n = 1; n <= 130; n++)
      assert.equal((await api.post(`${at}/comments.json`, { body: `c${n}` })).statusCode, 200);
    const first = await api.get(`${at}/comments.json`);
    assert.equal(first.json().length, 100);
    assert.equal(first.headers['x-sprintly-comment-count'], '130');
    assert.equal(first.headers['x-sprintly-next-offset'], '100');
    const rest = await api.get(`${at}/comments.json`, { offset: 100 });
    assert.deepEqual(
      rest.json().map((c: { body: string }) => c.body),
      Array.from({ length: 30 }, (_, i) => `c${i + 101}`),
    );
    assert.equal(rest.headers['x-sprintly-next-offset'], undefined);
    assertError(await api.get(`${at}/comments.json`, { limit: 0 }), 400, { errors: ['limit'] });

    // Long comments: a page stops before the answer passes its bound, and says where to go on.
    const small = await makeApp({ env: { MAX_ANSWER_BYTES: '200000' } });
    try {
      const who = await makeUser(small.db);
      const product = await makeProduct(small.db, who, [], 'Long talk');
      const long = await makeItem(small.app, who, product.id);
      const longAt = `/api/products/${product.id}/items/${long.number}`;
      for (let n = 0; n < 6; n++)
        assert.equal(
          (await client(small.app, who).post(`${longAt}/comments.json`, { body: `${n}`.repeat(60_000) })).statusCode,
          200,
        );
      const page = await client(small.app, who).get(`${longAt}/comments.json`);
      assert.equal(page.json().length, 3);
      assert.ok(page.body.length <= 200_000);
      assert.equal(page.headers['x-sprintly-next-offset'], '3');
      assert.equal(page.headers['x-sprintly-comment-count'], '6');
    } finally {
      await small.close();
    }
  });

  test('membership: a non-member gets 403 before anything about the item, 404 for no such item', async () => {
    const { product, at, base } = await setup();
    const stranger = await makeUser(t.db);
    for (const path of [
      `${at}/comments.json`,
      `${at}/favorites.json`,
      `${at}/blocking.json`,
      `${at}/blocked_by.json`,
      `${at}/annotations.json`,
      `${base}/items/999999/comments.json`,
    ])
      assertError(await client(t.app, stranger).get(path), 403, { label: path });
    assertError(await client(t.app, stranger).post(`${at}/comments.json`, { body: 'hi' }), 403);
    const { owner } = await setup();
    assertError(await client(t.app, owner).get(`/api/products/${product.id}/items/1/comments.json`), 403, {
      label: 'a member of another product',
    });
    const s = await setup();
    for (const path of ['comments', 'favorites', 'blocking', 'annotations'])
      assertError(await client(t.app, s.owner).get(`${s.base}/items/999999/${path}.json`), 404, { label: path });
    assertError(await client(t.app, s.owner).post(`${s.base}/items/999999/favorites.json`), 404);
  });
});

describe('comment mail', () => {
  test('followers but the author get it, threaded, with a signed Reply-To; one who said no does not', async () => {
    const { owner, alice, bob, product, item, at, base } = await setup();
    await client(t.app, bob).post(`${at}/follow.json`);
    await deliveredMail(t);
    const before = (await deliveredMail(t)).length;
    const first = (await client(t.app, alice).post(`${at}/comments.json`, { body: 'Deployed **yet**?' })).json();
    const mail = (await deliveredMail(t)).slice(before);
    const to = mail.map((m) => m.headers.get('to')!).sort();
    assert.equal(to.length, 2, to.join(', '));
    assert.ok(to.some((a) => a.includes(owner.email)) && to.some((a) => a.includes(bob.email)), to.join(', '));
    assert.ok(!to.some((a) => a.includes(alice.email)), 'never its author');
    const toBob = mail.find((m) => m.headers.get('to')!.includes(bob.email))!;
    assert.equal(toBob.headers.get('subject'), `[Talk] #${item.number} Fix login`);
    assert.match(toBob.text, /Alice Archer commented on #\d+ Fix login/);
    assert.match(toBob.text, /Deployed \*\*yet\*\*\?/);
    assert.match(toBob.html, /<strong>yet<\/strong>/);
    const references = toBob.headers.get('references')!;
    assert.match(references, /^<item-\d+@items\.shiplog\.test>$/);
    assert.equal(toBob.headers.get('in-reply-to'), references);
    assert.ok(toBob.headers.get('list-unsubscribe'), 'followers can stop following');

    const links = new UnsubscribeLinks('http://shiplog.test', await sharedSecret(t.db, 'unsubscribe_key'));
    const replies = new ReplyAddresses(links, 'items.shiplog.test');
    const replyTo = toBob.headers.get('reply-to')!;
    const opened = replies.open(replyTo.replace(/^.*<|>.*$/g, ''));
    assert.ok(opened, replyTo);
    assert.equal(opened.userId, bob.user.id);
    const toOwner = mail.find((m) => m.headers.get('to')!.includes(owner.email))!;
    assert.notEqual(toOwner.headers.get('reply-to'), replyTo, 'per recipient');
    const forged = replyTo.replace(/-(\d+)-([0-9a-f]{20})@/, (_, u, sig) => `-${Number(u) + 1}-${sig}@`);
    assert.equal(replies.open(forged.replace(/^.*<|>.*$/g, '')), undefined, 'another person, same signature');

    // A second comment is in the same thread; one who turned comment mail off hears nothing.
    const off = await client(t.app, bob).post(`${base}/notifications.json`, { comments: 'false' });
    assert.deepEqual(off.json(), { environments: 'all', comments: false });
    const mark = (await deliveredMail(t)).length;
    await client(t.app, owner).post(`${at}/comments.json`, { body: 'Not yet' });
    const second = (await deliveredMail(t)).slice(mark);
    assert.deepEqual(
      second.map((m) => m.headers.get('to')),
      [second.find((m) => m.headers.get('to')!.includes(alice.email))?.headers.get('to')],
      'only alice: bob said no, the owner wrote it',
    );
    assert.equal(second[0].headers.get('references'), references);
    assert.notEqual(second[0].headers.get('message-id'), toBob.headers.get('message-id'));
    assert.equal(first.type, 'comment');
    assert.equal(product.name, 'Talk');
  });

  test('a deleted comment is not mailed; mentions make followers who get it', async () => {
    const { owner, alice, bob, at, product } = await setup();
    const carol = await makeUser(t.db, {
      firstName: 'Carol',
      lastName: 'Cole',
      email: `carol.c-${process.pid}@example.com`,
    });
    await t.db
      .insertInto('memberships')
      .values({ product_id: product.id, user_id: carol.user.id, admin: 0, created_at: '2026-01-01T00:00:00+00:00' })
      .execute();
    const comment = (await client(t.app, alice).post(`${at}/comments.json`, { body: 'Oops' })).json();
    await client(t.app, alice).delete(`${at}/comments/${comment.id}.json`);
    const before = (await outbox('comment')).filter((m) => m.comment_id === comment.id);
    assert.ok(before.length > 0);
    const mark = (await deliveredMail(t)).length;
    assert.equal((await deliveredMail(t)).length, mark, 'nothing sent for a deleted comment');

    await client(t.app, owner).post(`${at}/comments.json`, { body: `@bob, and @carol.c-${process.pid}: look.` });
    const rows = await outbox('comment');
    const last = rows.filter((r) => r.comment_id === rows.at(-1)!.comment_id).map((r) => r.user_id);
    assert.ok(last.includes(bob.user.id), 'bob by first name');
    assert.ok(last.includes(carol.user.id), 'carol by her address');
    for (const who of [bob, carol]) {
      const following = await t.db
        .selectFrom('followers')
        .select('user_id')
        .where('user_id', '=', who.user.id)
        .execute();
      assert.equal(following.length, 1, 'a mention makes a follower');
    }
  });
});

describe('favorites', () => {
  test('once per person; counted; listed; removed by its owner alone; favorites order', async () => {
    const { owner, alice, bob, base, at, product } = await setup();
    const first = await client(t.app, alice).post(`${at}/favorites.json`);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(Object.keys(first.json()).sort(), ['created_at', 'id', 'user']);
    const again = await client(t.app, alice).post(`${at}/favorites.json`);
    assert.deepEqual(again.json(), first.json(), 'a second POST answers the same favorite');
    await client(t.app, bob).post(`${at}/favorites.json`);
    assert.equal((await itemOf(owner, at)).counts.favorites, 2);
    const list = await client(t.app, owner).get(`${at}/favorites.json`);
    assert.equal(list.headers['x-sprintly-favorite-count'], '2');
    assert.deepEqual(
      list.json().map((f: { user: { email: string } }) => f.user.email),
      [alice.email, bob.email],
    );
    const id = first.json().id;
    assert.equal((await client(t.app, owner).get(`${at}/favorites/${id}.json`)).json().id, id);
    assertError(await client(t.app, bob).delete(`${at}/favorites/${id}.json`), 403);
    assert.equal((await client(t.app, alice).delete(`${at}/favorites/${id}.json`)).statusCode, 200);
    assertError(await client(t.app, alice).get(`${at}/favorites/${id}.json`), 404);

    // Most favorites first, then by priority.
    const second = await makeItem(t.app, owner, product.id, { title: 'Second' });
    const third = await makeItem(t.app, owner, product.id, { title: 'Third' });
    const order = async () =>
      (await client(t.app, owner).get(`${base}/items.json`, { order_by: 'favorites' }))
        .json()
        .map((i: { number: number }) => i.number);
    const firstNumber = (await itemOf(owner, at)).number;
    assert.deepEqual(await order(), [firstNumber, second.number, third.number]);
    for (const who of [owner, alice, bob])
      await client(t.app, who).post(`${base}/items/${third.number}/favorites.json`);
    assert.deepEqual(await order(), [third.number, firstNumber, second.number]);
    const thirdAt = `${base}/items/${third.number}`;
    const favorites = (await client(t.app, owner).get(`${thirdAt}/favorites.json`)).json();
    await client(t.app, owner).delete(`${thirdAt}/favorites/${favorites[0].id}.json`);
    await client(t.app, alice).delete(`${thirdAt}/favorites/${favorites[1].id}.json`);
    assert.deepEqual(await order(), [firstNumber, third.number, second.number], 'ties fall back to priority');
  });
});

describe('blocking', () => {
  test('blocks, counts on both items, lists both ways, and mails the assignee of the blocked item', async () => {
    const { owner, alice, base, at, product, item } = await setup();
    const blocker = await makeItem(t.app, owner, product.id, { title: 'Upgrade the database' });
    const blockerAt = `${base}/items/${blocker.number}`;
    const res = await client(t.app, owner).post(`${blockerAt}/blocking.json`, { blocked: item.number });
    assert.equal(res.statusCode, 200, res.body);
    const block = res.json();
    assert.deepEqual(Object.keys(block).sort(), ['blocked', 'created_at', 'id', 'item', 'unblocked', 'user']);
    assert.equal(block.unblocked, false);
    assert.equal(block.item.number, blocker.number);
    assert.equal(block.blocked.number, item.number);
    assert.equal(block.blocked.assigned_to.email, alice.email);
    assert.equal(block.blocked.product.id, product.id);
    assert.equal((await itemOf(owner, blockerAt)).counts.blocking, 1);
    assert.equal((await itemOf(owner, at)).counts.blockers, 1);
    assert.deepEqual(
      (await client(t.app, owner).get(`${blockerAt}/blocking.json`)).json().map((b: { id: number }) => b.id),
      [block.id],
    );
    const by = await client(t.app, owner).get(`${at}/blocked_by.json`);
    assert.equal(by.headers['x-sprintly-block-count'], '1');
    assert.equal(by.json()[0].id, block.id);
    assert.equal((await client(t.app, owner).get(`${blockerAt}/blocking/${block.id}.json`)).json().id, block.id);
    assertError(await client(t.app, owner).get(`${at}/blocking/${block.id}.json`), 404, {
      label: 'a block is read under the item that blocks',
    });
    const again = await client(t.app, owner).post(`${blockerAt}/blocking.json`, { blocked: item.number });
    assert.equal(again.json().id, block.id, 'the same block again');

    const mail = (await outbox('block')).filter((m) => m.block_id === block.id);
    assert.deepEqual(
      mail.map((m) => m.user_id),
      [alice.user.id],
    );
    const sent = (await deliveredMail(t)).filter((m) => m.headers.get('subject')!.includes('is blocked by'));
    assert.ok(sent.some((m) => m.headers.get('to')!.includes(alice.email)));
  });

  test('400 for a missing, invalid or own number and for a loop; 404 for no such item', async () => {
    const { owner, base, product } = await setup();
    const [a, b, c] = [
      await makeItem(t.app, owner, product.id),
      await makeItem(t.app, owner, product.id),
      await makeItem(t.app, owner, product.id),
    ];
    const api = client(t.app, owner);
    const post = (from: { number: number }, blocked: unknown) =>
      api.post(`${base}/items/${from.number}/blocking.json`, blocked === undefined ? {} : { blocked: String(blocked) });
    for (const [label, value] of [
      ['missing', undefined],
      ['not a number', 'two'],
      ['zero', 0],
      ['itself', a.number],
    ] as const)
      assertError(await post(a, value), 400, { errors: ['blocked'], label });
    assertError(await post(a, 999999), 404, { label: 'no such item' });
    assert.equal((await post(a, b.number)).statusCode, 200);
    assert.equal((await post(b, c.number)).statusCode, 200);
    assertError(await post(c, a.number), 400, { errors: ['blocked'], message: /already blocks/ });
    assertError(await post(b, a.number), 400, { errors: ['blocked'], label: 'a loop of two' });
  });

  test('DELETE: the creator removes it, the blocked assignee marks it unblocked, others 403', async () => {
    const { owner, alice, bob, base, at, product, item } = await setup();
    const blocker = await makeItem(t.app, owner, product.id);
    const blockerAt = `${base}/items/${blocker.number}`;
    const block = (await client(t.app, bob).post(`${blockerAt}/blocking.json`, { blocked: item.number })).json();
    assertError(await client(t.app, owner).delete(`${blockerAt}/blocking/${block.id}.json`), 403);
    const unblocked = await client(t.app, alice).delete(`${blockerAt}/blocking/${block.id}.json`);
    assert.equal(unblocked.statusCode, 200, unblocked.body);
    assert.equal(unblocked.json().unblocked, true);
    assert.equal((await itemOf(owner, at)).counts.blockers, 0);
    assert.equal((await itemOf(owner, blockerAt)).counts.blocking, 0);
    assert.equal(
      (await client(t.app, owner).get(`${blockerAt}/blocking/${block.id}.json`)).json().unblocked,
      true,
      'still listed, marked',
    );
    // Blocking again puts it back in force.
    const back = (await client(t.app, owner).post(`${blockerAt}/blocking.json`, { blocked: item.number })).json();
    assert.equal(back.id, block.id);
    assert.equal(back.unblocked, false);
    assert.equal((await itemOf(owner, at)).counts.blockers, 1);
    const removed = await client(t.app, owner).delete(`${blockerAt}/blocking/${block.id}.json`);
    assert.equal(removed.statusCode, 200);
    assertError(await client(t.app, owner).get(`${blockerAt}/blocking/${block.id}.json`), 404);
    assert.equal((await itemOf(owner, at)).counts.blockers, 0);
  });
});

describe('annotations', () => {
  test('posted with label, action and body; listed with the label as verb', async () => {
    const { owner, at } = await setup();
    const api = client(t.app, owner);
    const res = await api.post(`${at}/annotations.json`, { label: 'CI', action: 'passed', body: 'Build 12 is green' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      { ...(res.json() as Record<string, unknown>), id: undefined, user: undefined },
      { id: undefined, verb: 'CI', action: 'passed', body: 'Build 12 is green', user: undefined },
    );
    const list = await api.get(`${at}/annotations.json`);
    assert.equal(list.headers['x-sprintly-annotation-count'], '1');
    assert.equal(list.json()[0].verb, 'CI');
    assertError(await api.post(`${at}/annotations.json`, { action: 'passed' }), 400, { errors: ['label'] });
    assertError(await api.post(`${at}/annotations.json`, {}), 400, { errors: ['label', 'action'] });
    assertError(await api.post(`${at}/annotations.json`, { label: 'x'.repeat(256), action: 'a' }), 400, {
      errors: ['label'],
    });
  });
});

describe('webhooks of the conversation', () => {
  test('comment.created, comment.deleted, favorite.created, block.created and block.changed are events', async () => {
    const { owner, alice, base, at, product, item } = await setup();
    const hook = await client(t.app, owner).post(`${base}/webhooks.json`, {
      url: 'http://127.0.0.1:9/in',
      events: 'comment.created,comment.deleted,favorite.created,block.created,block.changed',
    });
    assert.equal(hook.statusCode, 200, hook.body);
    const comment = (await client(t.app, alice).post(`${at}/comments.json`, { body: 'Event me' })).json();
    await client(t.app, alice).delete(`${at}/comments/${comment.id}.json`);
    await client(t.app, alice).post(`${at}/favorites.json`);
    const other = await makeItem(t.app, owner, product.id);
    const block = (
      await client(t.app, owner).post(`${base}/items/${other.number}/blocking.json`, { blocked: item.number })
    ).json();
    await client(t.app, owner).delete(`${base}/items/${other.number}/blocking/${block.id}.json`);
    const events = await t.db
      .selectFrom('webhook_events')
      .select(['type', 'body', 'slack_body'])
      .where('product_id', '=', product.id)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['comment.created', 'comment.deleted', 'favorite.created', 'block.created', 'block.changed'],
    );
    const created = JSON.parse(events[0].body);
    assert.equal(created.comment.body, 'Event me');
    assert.equal(created.item.number, item.number);
    assert.equal(created.actor.email, alice.email);
    assert.match(JSON.parse(events[0].slack_body).text, /commented on .*Event me/);
    const changed = JSON.parse(events[4].body);
    assert.equal(changed.block.removed, true);
    assert.equal(changed.block.blocked.number, item.number);
  });
});

describe('the activity log of the conversation', () => {
  test('comments, favorites and blocks are activities of the item, newest first, with what they were', async () => {
    const { owner, alice, base, at, product, item } = await setup();
    const comment = (await client(t.app, alice).post(`${at}/comments.json`, { body: 'Logged' })).json();
    const favorite = (await client(t.app, alice).post(`${at}/favorites.json`)).json();
    await client(t.app, alice).delete(`${at}/favorites/${favorite.id}.json`);
    await client(t.app, alice).delete(`${at}/comments/${comment.id}.json`);
    const other = await makeItem(t.app, owner, product.id);
    const otherAt = `${base}/items/${other.number}`;
    const block = (await client(t.app, owner).post(`${otherAt}/blocking.json`, { blocked: item.number })).json();
    await client(t.app, alice).delete(`${otherAt}/blocking/${block.id}.json`);
    await client(t.app, owner).post(`${otherAt}/blocking.json`, { blocked: item.number });
    await client(t.app, owner).delete(`${otherAt}/blocking/${block.id}.json`);

    const mine = (await client(t.app, owner).get(`${at}/activities.json`)).json();
    assert.deepEqual(
      mine.activities.map((a: { action: string }) => a.action),
      ['comment_deleted', 'unfavorited', 'favorited', 'commented', 'created'],
    );
    const commented = mine.activities[3];
    assert.equal(commented.user.email, alice.email);
    assert.deepEqual(commented.meta, { comment_id: comment.id, body: 'Logged' });
    const blocks = (await client(t.app, owner).get(`${otherAt}/activities.json`)).json();
    assert.deepEqual(
      blocks.activities.map((a: { action: string; meta: { blocked?: number } }) => [a.action, a.meta.blocked]),
      [
        ['block_removed', item.number],
        ['blocked', item.number],
        ['unblocked', item.number],
        ['blocked', item.number],
        ['created', undefined],
      ],
    );
  });
});

describe('deploys know about blockers', () => {
  test('receipt, dry run, repeat and mail name deployed items blocked by items not in the environment', async () => {
    const { owner, alice, base, product, item } = await setup();
    const make = (title: string) => makeItem(t.app, owner, product.id, { title });
    const [elsewhere, running, runningBlocked, together, togetherBlocked] = [
      await make('Schema change'),
      await make('Already live'),
      await make('Waits for live'),
      await make('Ships together'),
      await make('Waits for together'),
    ];
    const block = async (blocker: { number: number }, blocked: { number: number }) =>
      assert.equal(
        (await client(t.app, owner).post(`${base}/items/${blocker.number}/blocking.json`, { blocked: blocked.number }))
          .statusCode,
        200,
      );
    await block(elsewhere, item);
    await block(running, runningBlocked);
    await block(together, togetherBlocked);
    const deploy = (numbers: number[], extra: Record<string, string> = {}, key?: string) =>
      client(t.app, owner).post(
        `${base}/deploys.json`,
        { environment: 'production', version: '2.0', numbers: numbers.join(','), ...extra },
        key ? { 'idempotency-key': key } : {},
      );
    assert.equal((await deploy([running.number])).statusCode, 200);
    // Deployed to staging only: production does not run it.
    await client(t.app, owner).post(`${base}/deploys.json`, {
      environment: 'staging',
      numbers: String(elsewhere.number),
    });

    const numbers = [item.number, runningBlocked.number, together.number, togetherBlocked.number];
    const expected = [{ number: item.number, blocked_by: [elsewhere.number] }];
    const dry = await deploy(numbers, { dry_run: 'true' });
    assert.deepEqual(dry.json().blocked, expected);
    const real = await deploy(numbers, {}, 'blockers-1');
    assert.equal(real.statusCode, 200, real.body);
    assert.deepEqual(real.json().blocked, expected);
    const again = await deploy(numbers, {}, 'blockers-1');
    assert.deepEqual(again.json().blocked, expected, 'a repeat answers the first receipt');
    const rollback = await client(t.app, owner).post(`${base}/deploys.json`, {
      environment: 'production',
      version: '2.0',
      rollback: 'true',
    });
    assert.deepEqual(rollback.json().blocked, []);

    const mail = (await deliveredMail(t)).filter(
      (m) => m.headers.get('to')!.includes(alice.email) && m.headers.get('subject')!.includes('Deployed to production'),
    );
    assert.equal(mail.length, 1);
    assert.match(mail[0].text, new RegExp(`Blocked by #${elsewhere.number}, which is not in production\\.`));
    assert.match(mail[0].html, new RegExp(`Blocked by #${elsewhere.number}, which is not in production\\.`));
  });
});

describe('mentions', () => {
  const member = (id: number, email: string, first: string) =>
    ({ id, email, first_name: first, last_name: 'X' }) as Parameters<typeof mentionedIn>[1][number];
  const members = [
    member(1, 'ana.lima@example.com', 'Ana'),
    member(2, 'bo@example.com', 'Sam'),
    member(3, 'sam.k@example.org', 'Sam'),
    member(4, 'zoe@example.com', 'Zoë'),
  ];
  test('the part of an address before @, or a first name no other member has; in any case', () => {
    assert.deepEqual(mentionedIn('Thanks @ana.lima.', members), [1]);
    assert.deepEqual(mentionedIn('@ANA, @Zoë: see this', members), [1, 4]);
    assert.deepEqual(mentionedIn('@sam (two Sams: nobody)', members), []);
    assert.deepEqual(mentionedIn('@sam.k and @bo!', members), [3, 2]);
  });
  test('an address in the text, a name nobody has, or @ alone mention nobody', () => {
    assert.deepEqual(mentionedIn('mail ana.lima@example.com or me@bo', members), []);
    assert.deepEqual(mentionedIn('@nobody @ @@ana.lima', members), []);
  });
});
