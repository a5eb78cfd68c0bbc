import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type Db } from '../src/db/connection.js';
import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { markItemsChanged, productRevisions } from '../src/products/index.js';
import { LIVE_PER_PERSON, LiveChanges } from '../src/web/live.js';
import { mailedLink } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { startServer, stopAll, stopProcess, type Server } from './processes.js';
import pg from 'pg';
import { LISTENER_NAME } from '../src/db/listen.js';
import { ManualClock, until } from './manual-clock.js';
import { databaseOptionsFor, pgBase } from './storage.js';

/*
 * The pages' event stream over real sockets: two instances of the built server on one database
 * (the SQLite file, or one PostgreSQL schema in the PostgreSQL run), a page's stream on one and a
 * change through the API on the other.
 */
const dataDir = tempDir('shiplog-live-');
let servers: Server[] = [];
let db: Db;
let owner: TestUser;
let productId: number;
let cookie: string;
const seenMail = new Set<string>();

const url = (i: number, path: string) => `http://127.0.0.1:${servers[i].port}${path}`;

before(async () => {
  db = await openDatabase(await databaseOptionsFor(dataDir));
  owner = await makeUser(db);
  productId = (await makeProduct(db, owner, [], 'Live')).id;
  servers = await Promise.all(
    [0, 1].map(() =>
      startServer({ dataDir, envForPort: (port) => ({ PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn' }) }),
    ),
  );
  cookie = await signIn(owner.email);
});

after(async () => {
  await stopAll();
  await db?.destroy();
});

/** A session of the pages on instance 0, through the mailed link. */
async function signIn(email: string): Promise<string> {
  const asked = await fetch(url(0, '/app/sign-in'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email }).toString(),
  });
  assert.equal(asked.status, 200);
  const link = await mailedLink(dataDir, email, /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/, seenMail);
  const res = await fetch(url(0, link), { method: 'POST', redirect: 'manual' });
  assert.equal(res.status, 303);
  const set = res.headers.getSetCookie().find((c) => c.startsWith('shiplog_session='));
  assert.ok(set, 'no session cookie');
  return set.split(';')[0];
}

interface Stream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Resolves with the next event of this name (its data, parsed), or rejects after `ms`. */
  next(name: string, ms?: number): Promise<any>;
  ended: Promise<void>;
  close(): void;
}

/** Opens the product's event stream on an instance, as a page's EventSource does. */
function openStream(i: number, path = `/app/products/${productId}/events`, accept = 'text/event-stream') {
  return new Promise<Stream>((resolve, reject) => {
    const req = http.get(url(i, path), { headers: { cookie, accept } }, (res) => {
      res.setEncoding('utf8');
      let buffer = '';
      const events: { name: string; data: string }[] = [];
      const waiting: (() => void)[] = [];
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: /m.test(block);
          const name = /^event: (.*)$/m.exec(block)?.[1] ?? (data ? 'message' : 'comment');
          events.push({ name, data: /^data: (.*)$/m.exec(block)?.[1] ?? block });
          for (const w of waiting.splice(0)) w();
        }
      });
      const ended = new Promise<void>((done) => res.on('close', () => done()));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        ended,
        close: () => req.destroy(),
        next(name, ms = 2000) {
          return new Promise((found, fail) => {
            const timer = setTimeout(() => fail(new Error(`no ${name} event within ${ms} ms`)), ms);
            const look = () => {
              const at = events.findIndex((e) => e.name === name);
              if (at < 0) return void waiting.push(look);
              clearTimeout(timer);
              const [e] = events.splice(at, 1);
              found(name === 'comment' ? e.data : JSON.parse(e.data));
            };
            look();
          });
        },
      });
    });
    req.on('error', reject);
  });
}

/** The listening connections of the PostgreSQL run's servers (this file's schema or another's). */
async function listeners<T>(query: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: pgBase });
  await client.connect();
  try {
    return (await client.query(query, [LISTENER_NAME])).rows;
  } finally {
    await client.end();
  }
}

/** Waits until at least `n` listening connections are in place (they open with a server's first stream). */
async function waitForListener(n: number): Promise<void> {
  for (let tries = 0; ; tries++) {
    const [{ count }] = await listeners<{ count: number }>(
      `select count(*)::int as count from pg_stat_activity where application_name = $1 and query ilike 'listen %'`,
    );
    if (count >= n) return;
    if (tries > 250) throw new Error('no listening connection');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Ends every listening connection from the server's side, as a restart of the database would. */
async function terminateListeners(): Promise<void> {
  await listeners(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1`);
}

async function apiPost(i: number, path: string, form: Record<string, string>) {
  const res = await fetch(url(i, `/api/products/${productId}${path}`), {
    method: 'POST',
    headers: { authorization: owner.auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

describe('the pages follow changes made elsewhere', { timeout: 60_000 }, () => {
  test('a change through the API on one instance is an event on the other within 2 s, naming the item', async () => {
    const stream = await openStream(0);
    try {
      assert.equal(stream.status, 200);
      assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
      assert.equal(stream.headers['cache-control'], 'no-store');
      assert.match(await stream.next('comment'), /open/);
      const made = await apiPost(1, '/items.json', { type: 'task', title: 'Made elsewhere' });
      // A new item changes every list's totals: the event names no item, the page reloads its board.
      const created = await stream.next('change');
      assert.deepEqual(created.items, []);
      assert.ok(created.revision > 0);
      await apiPost(1, `/items/${made.number}.json`, { title: 'Renamed elsewhere' });
      const renamed = await stream.next('change');
      assert.deepEqual(renamed.items, [made.number]);
      assert.ok(renamed.revision > created.revision);
    } finally {
      stream.close();
    }
  });

  test('a stream from an older revision gets the change it missed at once', async () => {
    const before = await apiPost(1, '/items.json', { type: 'task', title: 'Before the page' });
    const stream = await openStream(0, `/app/products/${productId}/events?since=0`);
    try {
      const missed = await stream.next('change');
      assert.ok(missed.revision >= 1);
      assert.ok(Array.isArray(missed.items));
      assert.ok(before.number > 0);
    } finally {
      stream.close();
    }
  });

  test('a stream from an older revision of a product already followed here gets what it missed', async () => {
    const first = await openStream(0, `/app/products/${productId}/events`);
    try {
      await apiPost(1, '/items.json', { type: 'task', title: 'Seen by the first page' });
      const seen = await first.next('change');
      // A page loaded before that change (a reconnect after a drain asks with its old revision):
      // told of the revision it missed (with the items that changed, or none: read everything).
      const late = await openStream(0, `/app/products/${productId}/events?since=${seen.revision - 1}`);
      try {
        const missed = await late.next('change');
        assert.equal(missed.revision, seen.revision, JSON.stringify(missed));
      } finally {
        late.close();
      }
    } finally {
      first.close();
    }
  });

  test('not an event source: a 400 page; a person holds a bounded number of streams', async () => {
    const refused = await fetch(url(0, `/app/products/${productId}/events`), { headers: { cookie } });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /Accept: text\/event-stream/);
    const outsider = await fetch(url(0, `/app/products/${productId}/events`), {
      headers: { accept: 'text/event-stream' },
      redirect: 'manual',
    });
    assert.equal(outsider.status, 303, 'no session: sent to sign in');

    const open: Stream[] = [];
    try {
      for (let n = 0; n < LIVE_PER_PERSON; n++) open.push(await openStream(0));
      for (const s of open) assert.equal(s.status, 200);
      const over = await openStream(0);
      assert.equal(over.status, 429);
      assert.ok(over.headers['retry-after']);
      over.close();
      // On the other instance the person's bound is that instance's own.
      const elsewhere = await openStream(1);
      assert.equal(elsewhere.status, 200);
      elsewhere.close();
      // A page closed frees its place.
      open.shift()!.close();
      let again: Stream | undefined;
      for (let tries = 0; tries < 50; tries++) {
        again = await openStream(0);
        if (again.status === 200) break;
        again.close();
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(again?.status, 200);
      open.push(again!);
    } finally {
      for (const s of open) s.close();
    }
  });

  test('PostgreSQL: a change on one instance reaches the other through NOTIFY, not by reading revisions', {
    skip: !pgBase && 'the notifications are PostgreSQL’s; SQLite instances read the shared file',
  }, async () => {
    // This instance reads revisions only once in ten minutes: whatever reaches its stream within
    // the test came through its LISTEN connection (or its read when that connection was made).
    const quiet = await startServer({ dataDir, env: { LIVE_POLL_MS: '600000', LOG_LEVEL: 'warn' } });
    const at = servers.push(quiet) - 1;
    const made = await apiPost(1, '/items.json', { type: 'task', title: 'Told by notification' });
    const stream = await openStream(at);
    try {
      assert.equal(stream.status, 200);
      await stream.next('comment');
      await waitForListener(1);
      await apiPost(1, `/items/${made.number}.json`, { title: 'Renamed, and told' });
      assert.deepEqual((await stream.next('change')).items, [made.number]);
      await apiPost(1, `/items/${made.number}.json`, { title: 'Renamed again' });
      assert.deepEqual((await stream.next('change')).items, [made.number]);

      // The listening connection dropped: it connects again and reads what moved meanwhile.
      await terminateListeners();
      await apiPost(1, `/items/${made.number}.json`, { title: 'Renamed while nobody listened' });
      assert.deepEqual((await stream.next('change', 5000)).items, [made.number]);
      await waitForListener(1);
      await apiPost(1, `/items/${made.number}.json`, { title: 'Renamed after the listener came back' });
      assert.deepEqual((await stream.next('change')).items, [made.number]);
    } finally {
      stream.close();
      await stopProcess(quiet.child);
    }
  });

  test('a server that stops ends its streams and exits without waiting for them', async () => {
    const stream = await openStream(1);
    assert.equal(stream.status, 200);
    assert.match(await stream.next('comment'), /open/);
    const started = Date.now();
    await stopProcess(servers[1].child);
    // Told to reconnect within half a second (through a balancer: to another instance), then ended.
    const last = await stream.next('comment');
    assert.match(last, /^retry: 500$/m);
    assert.match(last, /reconnect/);
    await stream.ended;
    assert.ok(Date.now() - started < 8000, 'stopped promptly');
  });
});

describe('one process reading revisions', () => {
  test('pages that keep opening do not put off the reading of the others', async () => {
    const local = await openDatabase(await databaseOptionsFor(tempDir('shiplog-live-one-'), true));
    const person = await makeUser(local);
    const [busy, quiet] = [await makeProduct(local, person, [], 'Busy'), await makeProduct(local, person, [], 'Quiet')];
    // No listener: this is the reading that SQLite has, and PostgreSQL when its listener is down.
    const clock = new ManualClock();
    const live = new LiveChanges(local, { pollMs: 100, clock });
    const outs: PassThrough[] = [];
    const open = async (productId: number) => {
      const out = new PassThrough();
      outs.push(out);
      const shown = (await productRevisions(local, [productId])).get(productId)!;
      await live.open({ productId, userId: person.user.id, out: out as unknown as ServerResponse }, shown);
      return out;
    };
    try {
      const watched = await open(quiet.id);
      let told = '';
      watched.on('data', (chunk: Buffer) => {
        told += chunk.toString();
      });
      await local.transaction().execute((trx) => markItemsChanged(trx, quiet.id, { totals: false }));
      // A page of the busy product opens (and closes) every 20 ms for two readings' time (100 ms
      // each): the quiet one's change is still read, not put off by each opening.
      for (let n = 0; n < 10; n++) {
        const other = await open(busy.id);
        await clock.tick(20);
        other.destroy();
        other.emit('close');
      }
      await until('the quiet page is told of its change', () => told.includes('event: change'));
      assert.match(told, /event: change\ndata: \{"revision":\d+,"items":\[\]\}/);
    } finally {
      await live.close();
      clock.reset();
      await local.destroy();
    }
  });
});
