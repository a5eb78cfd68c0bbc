import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/connection.js';
import { inboundOf, receiveMessage } from '../../src/inbound/index.js';
import { client, makeItem, makeProduct, makeUser, tempDir, type TestUser } from '../helpers.js';
import { runCli } from '../processes.js';
import { databaseUrlFor } from '../storage.js';

const shiplog = (env: Record<string, string>, ...args: string[]) => runCli(args, { env, timeoutMs: 60_000 });

/** An app on an explicit database, for reading the source (SQLite) and the target (PostgreSQL) alike. */
async function appOn(dataDir: string, databaseUrl?: string): Promise<{ app: FastifyInstance; db: Db }> {
  const db = await openDatabase({ dataDir, databaseUrl });
  const config = loadConfig({
    DATA_DIR: dataDir,
    PUBLIC_URL: 'http://shiplog.test',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  return { db, app: await buildApp({ config, db, logger: false }) };
}

const sourceDir = tempDir();
/** An attachment's bytes, every byte value: a BLOB that must arrive as the same bytea. */
const ATTACHED = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
let source: { app: FastifyInstance; db: Db };
let owner: TestUser;
let member: TestUser;
let productId: number;

before(async () => {
  // The source is the embedded SQLite under DATA_DIR, whatever database the suite runs on.
  source = await appOn(sourceDir);
  owner = await makeUser(source.db);
  member = await makeUser(source.db);
  productId = (await makeProduct(source.db, owner, [member], 'Moving product')).id;
  await makeItem(source.app, owner, productId, { title: 'Will be a sub-item', tags: 'a,b' }); // 1
  await makeItem(source.app, owner, productId, { type: 'story', who: 'mover', what: 'to move', why: 'we grow' }); // 2
  await client(source.app, owner).post(`/api/products/${productId}/items/1.json`, {
    parent: 2,
    assigned_to: member.user.id,
  });
  await makeItem(source.app, member, productId, { status: 'completed' }); // 3
  await client(source.app, owner).post(`/api/products/${productId}/deploys.json`, {
    environment: 'production',
    numbers: '1,2,3',
    version: '2.0',
  });
  await source.app.outbox.deliverDue();
  await client(source.app, owner).post(`/api/products/${productId}/deploys.json`, {
    environment: 'staging',
    numbers: '3',
  });
  await client(source.app, member).post(`/api/products/${productId}/notifications.json`, {
    environments: 'production,staging',
  });
  // A rollback: the deploy it undid refers to it, a later row.
  await client(source.app, owner).post(`/api/products/${productId}/deploys.json`, {
    environment: 'production',
    numbers: '1',
    version: '2.1',
  });
  await client(source.app, owner).post(`/api/products/${productId}/deploys.json`, {
    environment: 'production',
    version: '2.0',
    rollback: 'true',
  });
  const attached = await source.app.inject({
    method: 'POST',
    url: `/api/products/${productId}/items/1/attachments.json?name=dump.bin`,
    headers: { authorization: owner.auth, 'content-type': 'application/octet-stream' },
    payload: ATTACHED,
  });
  assert.equal(attached.statusCode, 200, attached.body);
  // The conversation: a comment (and its mail), a favorite, a block, an annotation, comment mail turned off.
  const talk = `/api/products/${productId}/items/1`;
  for (const [url, params] of [
    [`${talk}/comments.json`, { body: 'Moves along' }],
    [`${talk}/favorites.json`, {}],
    [`${talk}/blocking.json`, { blocked: '3' }],
    [`${talk}/annotations.json`, { label: 'CI', action: 'passed' }],
    [`/api/products/${productId}/notifications.json`, { comments: 'false' }],
  ] as const)
    assert.equal((await client(source.app, owner).post(url, params)).statusCode, 200, url);
  // A pending invitation: its message goes to an address with no user yet.
  await client(source.app, owner).post(`/api/products/${productId}/people.json`, { email: 'invited@example.com' });
  // Mail from a stranger, refused: its explanation waits in the outbox, and its sender's hour is counted.
  const to = `discussion-1@${source.app.config.mailDomain}`;
  const refused = await receiveMessage(
    inboundOf(source.db, source.app.config, source.app.unsubscribeLinks),
    Buffer.from(`From: stranger@example.com\r\nTo: ${to}\r\nSubject: Hi\r\n\r\nLet me in\r\n`),
    { recipients: [to] },
  );
  assert.deepEqual(refused.status === 'refused' && refused.explained, true);
});

after(async () => {
  await source.app.close();
  await source.db.destroy();
});

test('copy moves every row into an empty PostgreSQL database and checks the counts', async () => {
  const targetUrl = (await databaseUrlFor(tempDir()))!;
  const run = await shiplog({ DATA_DIR: sourceDir }, 'copy', '--to', targetUrl);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /every count matches/);
  for (const table of [
    'users',
    'products',
    'memberships',
    'items',
    'item_tags',
    'followers',
    'deploys',
    'deploy_items',
    'item_deployments',
    'invitations',
    'outbox',
    'notification_environments',
    'attachments',
    'comments',
    'favorites',
    'blocks',
    'annotations',
    'comment_mail_off',
    'activities',
    'inbound_senders',
    'inbound_refusals',
  ]) {
    assert.match(run.stdout, new RegExp(`^${table}\\s+(\\d+)\\s+\\1$`, 'm'), `${table} counts in ${run.stdout}`);
  }

  const target = await appOn(tempDir(), targetUrl);
  try {
    // Same answers from both databases, keys included: the users log in with the keys they had.
    for (const url of [
      `/api/products/${productId}/items.json?status=backlog,in-progress,completed,accepted&children=true`,
      `/api/products/${productId}/items/1.json`,
      `/api/products/${productId}/deploys.json`,
      `/api/products/${productId}/people.json`,
      `/api/products/${productId}/items/1/attachments.json`,
      `/api/products/${productId}/items/1/comments.json`,
      `/api/products/${productId}/items/1/favorites.json`,
      `/api/products/${productId}/items/1/blocking.json`,
      `/api/products/${productId}/items/1/annotations.json`,
      `/api/products/${productId}/items/1/activities.json`,
      `/api/products/${productId}/notifications.json`,
    ]) {
      const before = await client(source.app, owner).get(url);
      const after = await client(target.app, owner).get(url);
      assert.equal(after.statusCode, 200, `${url}: ${after.body}`);
      assert.deepEqual(after.json(), before.json(), url);
    }
    const [file] = (await client(target.app, owner).get(`/api/products/${productId}/items/1/attachments.json`)).json();
    const bytes = await client(target.app, owner).get(new URL(file.href).pathname);
    assert.deepEqual(bytes.rawPayload, ATTACHED, "the attachment's bytes move as they are");
    const choice = await client(target.app, member).get(`/api/products/${productId}/notifications.json`);
    assert.deepEqual(
      choice.json(),
      { environments: ['production', 'staging'], comments: true },
      "the member's deploy mail choice moves along",
    );
    const outboxBefore = await source.db
      .selectFrom('outbox')
      .select(['id', 'status', 'message_id', 'kind', 'invitation_id'])
      .orderBy('id')
      .execute();
    const outboxAfter = await target.db
      .selectFrom('outbox')
      .select(['id', 'status', 'message_id', 'kind', 'invitation_id'])
      .orderBy('id')
      .execute();
    assert.deepEqual(outboxAfter, outboxBefore, 'pending mail moves along');

    // Ids go on after the copied ones.
    const next = await makeItem(target.app, owner, productId, { title: 'After the move' });
    assert.equal(next.number, 4);
    const newUser = await makeUser(target.db);
    assert.ok(newUser.user.id > member.user.id);
  } finally {
    await target.app.close();
    await target.db.destroy();
  }
});

test('copy refuses a target that is not empty, and a missing or malformed --to', async () => {
  const targetUrl = (await databaseUrlFor(tempDir()))!;
  assert.equal((await shiplog({ DATA_DIR: sourceDir }, 'copy', '--to', targetUrl)).code, 0);
  const again = await shiplog({ DATA_DIR: sourceDir }, 'copy', '--to', targetUrl);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not empty/);
  const missing = await shiplog({ DATA_DIR: sourceDir }, 'copy');
  assert.equal(missing.code, 2);
  const malformed = await shiplog({ DATA_DIR: sourceDir }, 'copy', '--to', 'mysql://nope');
  assert.equal(malformed.code, 1);
  assert.match(malformed.stderr, /postgres:\/\//);
});
