import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppOptions } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, type DatabaseOptions, type Db } from '../src/db/connection.js';
import { databaseOptionsFor, storageEnv } from './storage.js';
import type { ProductRow, UserRow } from '../src/db/schema.js';
import { createProduct } from '../src/products/service.js';
import { insertMembership } from '../src/products/repository.js';
import { createUser } from '../src/users/service.js';
import { setClock } from '../src/time.js';

export interface TestContext {
  app: FastifyInstance;
  db: Db;
  config: Config;
  dataDir: string;
  /** How to open the same database again (a second instance, a check from outside). */
  dbOptions: DatabaseOptions;
  close(): Promise<void>;
}

/** A temporary directory removed when the process exits. */
export function tempDir(prefix = 'shiplog-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Renames a product as a change of it does: the name, and its revision moved. */
export async function renameProduct(db: Db, productId: number, name: string): Promise<void> {
  await db
    .updateTable('products')
    .set((eb) => ({ name, revision: eb('revision', '+', 1) }))
    .where('id', '=', productId)
    .execute();
}

/**
 * A second instance on `t`'s database that keeps no answers (ANSWER_CACHE_MB 0): what a fresh
 * render gives, for tests that compare an instance's kept answers with it. Closing it closes its
 * connection too.
 */
export async function instanceKeepingNothing(t: TestContext): Promise<FastifyInstance> {
  const db = await openDatabase(t.dbOptions);
  const app = await buildApp({ config: { ...t.config, answerCacheMb: 0 }, db, logger: false });
  app.addHook('onClose', () => db.destroy());
  await app.ready();
  return app;
}

/** An app on a database file, the instance of it keeping nothing (the reference), and three people. */
export interface KeptAndFresh {
  t: TestContext;
  fresh: FastifyInstance;
  ada: TestUser;
  bob: TestUser;
  cy: TestUser;
  close(): Promise<void>;
}

/** What the tests comparing kept answers with fresh ones start from (see instanceKeepingNothing). */
export async function keptAndFresh(): Promise<KeptAndFresh> {
  const t = await makeApp({ file: true });
  const fresh = await instanceKeepingNothing(t);
  return {
    t,
    fresh,
    ada: await makeUser(t.db, { firstName: 'Ada' }),
    bob: await makeUser(t.db, { firstName: 'Bob' }),
    cy: await makeUser(t.db, { firstName: 'Cy' }),
    close: async () => {
      await fresh.close();
      await t.close();
    },
  };
}

/**
 * The app as the server builds it, on a fresh database of its own (SQLite in memory unless
 * `file`; a fresh PostgreSQL schema in the suite's PostgreSQL run), with
 * mail written under a temporary data directory and delivered only when a test asks.
 */
export async function makeApp(
  options: { file?: boolean; env?: NodeJS.ProcessEnv } & Partial<AppOptions> = {},
): Promise<TestContext> {
  const dataDir = tempDir();
  const dbOptions = await databaseOptionsFor(dataDir, !options.file);
  const config = loadConfig({
    ...(await storageEnv(dataDir)),
    PUBLIC_URL: 'http://shiplog.test',
    MAIL_DOMAIN: 'items.shiplog.test',
    // Off unless a test sets them (test/rate-limits.test.ts): a file's many requests from one
    // address and key would otherwise meet them.
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_ADDRESS: '0',
    ...options.env,
  });
  const db = await openDatabase(dbOptions);
  const app = await buildApp({ config, db, logger: false, ...options });
  await app.ready();
  return {
    app,
    db,
    config,
    dataDir,
    dbOptions,
    async close() {
      await app.close();
      await db.destroy();
    },
  };
}

let clockAhead = 0;

/**
 * Moves the service's clock `ms` further ahead of the wall clock, for the rest of this test file
 * (each file runs in a process of its own): a test that needs time to pass says so instead of
 * sleeping. It never moves back, so timestamps keep their order.
 */
export function advanceClock(ms: number): void {
  clockAhead += ms;
  setClock(() => Date.now() + clockAhead);
}

export interface TestUser {
  user: UserRow;
  apiKey: string;
  email: string;
  /** The Authorization header for HTTP Basic. */
  auth: string;
}

let userSeq = 0;

/** A user with a fresh API key; override any field. */
export async function makeUser(
  db: Db,
  overrides: Partial<{ email: string; firstName: string; lastName: string }> = {},
): Promise<TestUser> {
  userSeq += 1;
  const email = overrides.email ?? `user${userSeq}-${process.pid}@example.com`;
  const { user, apiKey } = await db.transaction().execute((trx) =>
    createUser(trx, {
      email,
      firstName: overrides.firstName ?? `First${userSeq}`,
      lastName: overrides.lastName ?? `Last${userSeq}`,
    }),
  );
  return { user, apiKey, email: user.email, auth: basic(user.email, apiKey) };
}

export function basic(email: string, key: string): string {
  return `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;
}

/** A product owned (as admin) by `owner`, with the given extra members. */
export async function makeProduct(
  db: Db,
  owner: TestUser,
  members: TestUser[] = [],
  name = 'Test product',
): Promise<ProductRow> {
  const product = await db.transaction().execute((trx) => createProduct(trx, owner.user, name));
  for (const m of members)
    await db
      .transaction()
      .execute((trx) => insertMembership(trx, product.id, m.user.id, false, '2026-01-01T00:00:00+00:00'));
  return product;
}

type Params = Record<string, string | number | boolean | string[] | null | undefined>;

function formBody(params: Params): string {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) form.append(k, x);
    else form.append(k, v === null ? '' : String(v));
  }
  return form.toString();
}

/** A deployer and two members, Alice and Bob, in a product of the deployer's; `api` is the deployer's client. */
export async function deployTeam(t: TestContext) {
  const deployer = await makeUser(t.db, { firstName: 'Dee', lastName: 'Ployer' });
  const alice = await makeUser(t.db, { firstName: 'Alice', lastName: 'A' });
  const bob = await makeUser(t.db, { firstName: 'Bob', lastName: 'B' });
  const product = await makeProduct(t.db, deployer, [alice, bob], 'Rocket');
  const base = `/api/products/${product.id}`;
  return { deployer, alice, bob, product, base, api: client(t.app, deployer) };
}

/** A small client for one user: form-encoded POSTs, as existing Sprint.ly clients send them. */
export function client(app: FastifyInstance, user: TestUser | { auth: string }) {
  const headers = { authorization: user.auth };
  return {
    get(url: string, query: Params = {}): Promise<LightMyRequestResponse> {
      const qs = formBody(query);
      return app.inject({ method: 'GET', url: qs ? `${url}?${qs}` : url, headers });
    },
    post(url: string, params: Params = {}, extraHeaders: Record<string, string> = {}): Promise<LightMyRequestResponse> {
      return app.inject({
        method: 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', ...extraHeaders },
        payload: formBody(params),
      });
    },
    postJson(url: string, body: unknown, extraHeaders: Record<string, string> = {}): Promise<LightMyRequestResponse> {
      return app.inject({
        method: 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/json', ...extraHeaders },
        payload: JSON.stringify(body),
      });
    },
    delete(url: string): Promise<LightMyRequestResponse> {
      return app.inject({ method: 'DELETE', url, headers });
    },
  };
}

/** What assertError reads of an answer: an injected response, or one parsed off a socket. */
export interface AnswerLike {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/**
 * Asserts the interface's error answer (docs/INTERFACE.md §3): the status, a JSON body of `code`
 * (the status again), a non-empty `message` and, only on validation errors, `errors`; never an HTML
 * page or a stack trace. `message` must match when given; `errors` lists exactly the parameters
 * the answer must name (an empty list: no `errors` at all). Returns the body.
 */
export function assertError(
  res: AnswerLike,
  status: number,
  expected: { message?: RegExp; errors?: string[]; label?: string } = {},
): { code: number; message: string; errors?: Record<string, string> } {
  const label = expected.label ?? '';
  assert.equal(res.statusCode, status, `${label}: expected ${status}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', label);
  assert.doesNotMatch(res.body, /<html|<!doctype|<body/i, label);
  assert.doesNotMatch(res.body, /\bat .+:\d+:\d+|node_modules|\.ts:\d+/, `${label}: stack trace in body`);
  const body = JSON.parse(res.body);
  assert.equal(body.code, status, label);
  assert.equal(typeof body.message, 'string', label);
  assert.ok(body.message.length > 0, label);
  for (const key of Object.keys(body))
    assert.ok(['code', 'message', 'errors'].includes(key), `${label}: unexpected key ${key} in ${res.body}`);
  if (expected.message) assert.match(body.message, expected.message, label);
  if ('errors' in body) {
    assert.equal(typeof body.errors, 'object', label);
    assert.notEqual(body.errors, null, label);
    for (const reason of Object.values(body.errors))
      assert.ok(typeof reason === 'string' && reason.length > 0, `${label}: ${res.body}`);
  }
  if (expected.errors) {
    assert.deepEqual(
      Object.keys(body.errors ?? {}).sort(),
      [...expected.errors].sort(),
      `${label}: errors named in ${res.body}`,
    );
  }
  return body;
}

/** Creates an item through the API and returns its JSON; fails the test on any other answer. */
export async function makeItem(
  app: FastifyInstance,
  user: TestUser,
  productId: number,
  params: Params = {},
): Promise<any> {
  const res = await client(app, user).post(`/api/products/${productId}/items.json`, {
    type: 'task',
    title: 'A task',
    ...params,
  });
  if (res.statusCode !== 200) throw new Error(`item create failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

/** Delivers what is due and returns every message the app has written as a file, oldest first. */
export async function deliveredMail(t: TestContext): Promise<ParsedMail[]> {
  await t.app.outbox.deliverDue();
  const dir = path.join(t.dataDir, 'mail');
  if (!fs.existsSync(dir)) return [];
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.eml'))
    .sort();
  return Promise.all(files.map((f) => readEml(fs.readFileSync(path.join(dir, f)))));
}

/** The path of the invitation link in the latest message to `email` (after delivering what is due). */
export async function invitationPath(t: TestContext, email: string): Promise<string> {
  const mine = (await deliveredMail(t)).filter((m) =>
    (m.headers.get('to') ?? '').toLowerCase().includes(email.toLowerCase()),
  );
  const text = mine.at(-1)?.text ?? '';
  const match = /https?:\/\/[^/\s]+(\/invitations\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/.exec(text);
  if (!match) throw new Error(`no invitation link to ${email} in: ${text}`);
  return match[1];
}

/** Accepts an invitation link as the invitee's browser would post it; returns the JSON answer. */
export async function acceptInvitation(app: FastifyInstance, link: string, params: Params = {}): Promise<any> {
  const res = await app.inject({
    method: 'POST',
    url: link,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: formBody(params),
  });
  if (res.statusCode !== 200) throw new Error(`accepting failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

/**
 * A message as a reader sees it: raw header values (unfolded; the subject decoded), the plain-text
 * and HTML parts, and the raw source.
 */
export async function readEml(raw: string | Buffer): Promise<ParsedMail> {
  // Loaded here: most test files read no mail, and the parser is a fair part of a file's start.
  const { simpleParser } = await import('mailparser');
  const parsed = await simpleParser(raw);
  const headers = new Map<string, string>();
  for (const { key, line } of parsed.headerLines) {
    headers.set(
      key,
      line
        .slice(line.indexOf(':') + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim(),
    );
  }
  if (parsed.subject !== undefined) headers.set('subject', parsed.subject);
  return {
    headers,
    text: parsed.text ?? '',
    html: typeof parsed.html === 'string' ? parsed.html : '',
    raw: raw.toString(),
  };
}

export interface ParsedMail {
  headers: Map<string, string>;
  text: string;
  html: string;
  raw: string;
}

let signInSeq = 0;

/**
 * Signs `email` in to the pages as a person would: asks for a link (from a client address of its
 * own, so rate limits of other tests do not touch it), follows the link in the delivered message,
 * presses the button. Returns the session cookie header.
 */
export async function signInByMail(t: TestContext, email: string): Promise<string> {
  signInSeq += 1;
  const ip = `10.200.${Math.floor(signInSeq / 250)}.${(signInSeq % 250) + 1}`;
  const asked = await t.app.inject({
    method: 'POST',
    url: '/app/sign-in',
    remoteAddress: ip,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ email }).toString(),
  });
  assert.equal(asked.statusCode, 200, asked.body);
  const mine = (await deliveredMail(t)).filter((m) =>
    (m.headers.get('to') ?? '').toLowerCase().includes(email.toLowerCase()),
  );
  const link = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/.exec(mine.at(-1)?.text ?? '')?.[1];
  assert.ok(link, `no sign-in link mailed to ${email}`);
  const res = await t.app.inject({ method: 'POST', url: link });
  assert.equal(res.statusCode, 303, res.body);
  const set = [res.headers['set-cookie'] ?? []].flat().find((c) => String(c).startsWith('shiplog_session='));
  assert.ok(set, 'no session cookie');
  return String(set).split(';')[0];
}
