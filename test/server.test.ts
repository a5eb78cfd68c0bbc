import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import { createUser } from '../src/users/service.js';
import { basic, tempDir } from './helpers.js';
import { databaseOptionsFor, pgBase } from './storage.js';
import { canConnect, spawnServer, startServer, stopAll, stopProcess, waitFor } from './processes.js';

// One removal hook for the whole file; each server gets a fresh data directory inside it.
const root = tempDir('shiplog-server-test-');
const newDataDir = (): string => fs.mkdtempSync(path.join(root, 'data-'));

/** `promise`, or `fallback` if it has not settled after `ms`. */
function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => (timer = setTimeout(resolve, ms, fallback)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

after(stopAll);

/** Log lines are JSON; the first-run text shares stdout, so anything else is skipped. */
function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('server start-up', () => {
  test('on an empty database it prints the first-run instructions on stdout', async () => {
    const server = await startServer({ env: { LOG_LEVEL: 'warn' }, dataDir: newDataDir(), cwd: root });
    try {
      await waitFor('the first-run instructions', () => server.stdout().includes('npx shiplog product add'));
      assert.ok(server.stdout().includes('npx shiplog user add'), server.stdout());
      assert.ok(server.stdout().includes('npx shiplog product add'), server.stdout());
    } finally {
      await stopProcess(server.child);
    }
  });

  test('creates its database on first start (shiplog.db in a new DATA_DIR, or the schema on PostgreSQL)', async () => {
    const dataDir = path.join(newDataDir(), 'not', 'there', 'yet');
    assert.equal(fs.existsSync(dataDir), false);
    const server = await startServer({ env: { LOG_LEVEL: 'warn' }, dataDir, cwd: root });
    try {
      if (pgBase) {
        const db = await openDatabase(await databaseOptionsFor(dataDir));
        const tables = await db.introspection.getTables();
        await db.destroy();
        assert.ok(tables.some((t) => t.name === 'items'));
      } else {
        assert.ok(fs.statSync(path.join(dataDir, 'shiplog.db')).isFile());
      }
    } finally {
      await stopProcess(server.child);
    }
  });

  for (const [name, value] of [
    ['PORT', 'abc'],
    ['PUBLIC_URL', 'notaurl'],
    ['LOG_LEVEL', 'loud'],
  ] as const) {
    test(`${name}=${value} stops it at once with a message naming ${name}`, async () => {
      const started = Date.now();
      const server = await spawnServer({ env: { [name]: value }, dataDir: newDataDir(), cwd: root });
      try {
        const code = await within(server.exited, 5_000, 'still running');
        assert.notEqual(code, 'still running', `still running 5 s after start with ${name}=${value}`);
        assert.notEqual(code, 0);
        assert.ok(Date.now() - started < 5_000);
        assert.match(server.stderr(), new RegExp(name));
      } finally {
        await stopProcess(server.child);
      }
    });
  }
});

describe('request log', () => {
  test('at the default level each request is one JSON line with method, path and status; no query string', async () => {
    const server = await startServer({ dataDir: newDataDir(), cwd: root });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const requests = [
        { path: '/api/products.json', status: 403 },
        { path: '/api/no-such-endpoint.json', status: 404 },
        { path: '/api/user/whoami.json', status: 403, auth: basic('nobody@example.com', 'x'.repeat(32)) },
      ];
      for (const r of requests) {
        const res = await fetch(`${base}${r.path}?probe=left-out`, {
          headers: r.auth ? { authorization: r.auth } : {},
        });
        await res.arrayBuffer();
        assert.equal(res.status, r.status);
      }

      const logged = () => jsonLines(server.stdout()).filter((line) => line.msg === 'request');
      await waitFor('a log line per request', () => logged().length >= requests.length);
      for (const r of requests) {
        const lines = logged().filter((line) => line.url === r.path);
        assert.equal(lines.length, 1, `log lines for ${r.path}: ${JSON.stringify(logged())}`);
        assert.equal(lines[0].method, 'GET');
        assert.equal(lines[0].status, r.status);
      }
      assert.doesNotMatch(server.stdout(), /probe|left-out/);
    } finally {
      await stopProcess(server.child);
    }
  });
});

interface Reply {
  status: number;
  body: string;
}

/**
 * A POST whose body is held back until the caller releases it. `Expect: 100-continue` makes the
 * server answer "100 Continue" once it has taken the request, so `accepted` tells for certain
 * that the request is in flight inside the server.
 */
function heldPost(port: number, path: string, auth: string, body: string) {
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    agent: false,
    headers: {
      authorization: auth,
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue',
    },
  });
  const accepted = once(req, 'continue');
  const reply = new Promise<Reply>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', reject);
      res.on('end', () =>
        res.complete ? resolve({ status: res.statusCode!, body: text }) : reject(new Error('response cut short')),
      );
    });
  });
  // Settled by the test; keeps an early failure from surfacing as an unhandled rejection.
  reply.catch(() => {});
  req.flushHeaders();
  return { accepted, reply, release: () => req.end(body) };
}

describe('graceful shutdown', () => {
  test('SIGTERM lets requests in flight complete, then exits 0', async () => {
    const dataDir = newDataDir();
    const email = 'ada@example.com';
    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const { apiKey } = await db
      .transaction()
      .execute((trx) => createUser(trx, { email, firstName: 'Ada', lastName: 'Lovelace' }));
    await db.destroy();

    const server = await startServer({ dataDir, cwd: root });
    try {
      const names = ['Alpha', 'Beta', 'Gamma'];
      const posts = names.map((name) =>
        heldPost(server.port, '/api/products.json', basic(email, apiKey), `name=${name}`),
      );
      assert.notEqual(
        await within(Promise.all(posts.map((p) => p.accepted)), 10_000, 'timeout'),
        'timeout',
        'no 100 Continue',
      );

      process.kill(server.child.pid!, 'SIGTERM');
      // The bodies go out only once shutdown has begun, so the requests straddle it.
      await waitFor('the shutdown log line', () =>
        jsonLines(server.stdout()).some((line) => line.msg === 'shutting down'),
      );
      for (const p of posts) p.release();

      const replies = await within(Promise.all(posts.map((p) => p.reply)), 10_000, 'timeout');
      assert.notEqual(replies, 'timeout', 'requests in flight got no answer');
      assert.ok(Array.isArray(replies));
      replies.forEach((reply, i) => {
        assert.equal(reply.status, 200, reply.body);
        const product = JSON.parse(reply.body) as { id: number; name: string };
        assert.equal(product.name, names[i]);
        assert.ok(Number.isInteger(product.id));
      });

      const code = await within(server.exited, 10_000, 'still running');
      assert.equal(code, 0, `exit: ${code}; stderr: ${server.stderr()}`);
    } finally {
      await stopProcess(server.child);
    }
  });
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One kept-alive connection written by hand, so that a test decides what goes out when: answers
 * are read one after another (heads with Content-Length, as every JSON answer has; waiting for
 * one on a connection the server closed is an error), and `ended` resolves when the server closes it.
 */
function rawConnection(port: number) {
  const socket = net.connect({ port, host: '127.0.0.1' });
  let buffer = '';
  let waiting: (() => void) | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    waiting?.();
  });
  let closed = false;
  const ended = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      waiting?.();
      resolve();
    }),
  );
  socket.on('error', () => {});
  const parse = (): RawAnswer | undefined => {
    const head = buffer.indexOf('\r\n\r\n');
    if (head < 0) return undefined;
    const [statusLine, ...lines] = buffer.slice(0, head).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = Number(statusLine.split(' ')[1]);
    // 100 Continue: an interim answer with no body.
    const length = status === 100 ? 0 : Number(headers['content-length'] ?? 0);
    if (buffer.length < head + 4 + length) return undefined;
    const body = buffer.slice(head + 4, head + 4 + length);
    buffer = buffer.slice(head + 4 + length);
    return { status, headers, body };
  };
  return {
    ended,
    write: (text: string) => socket.write(text),
    async next(): Promise<RawAnswer> {
      for (;;) {
        const answer = parse();
        if (answer) return answer;
        // A connection the server closed before answering (a draining server closes the idle ones).
        if (closed) throw new Error(`the connection closed before an answer: ${JSON.stringify(buffer)}`);
        await new Promise<void>((resolve) => (waiting = resolve));
      }
    },
    destroy: () => socket.destroy(),
  };
}

/** A fresh connection's answer to GET /health/ready, or undefined when nothing accepts connections. */
async function readiness(port: number): Promise<RawAnswer | undefined> {
  if (!(await canConnect(port))) return undefined;
  const connection = rawConnection(port);
  try {
    connection.write('GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    return await connection.next();
  } catch {
    return undefined;
  } finally {
    connection.destroy();
  }
}

describe('drain on SIGTERM', () => {
  test('DRAIN_DELAY_MS (2 s) and DRAIN_TIMEOUT_MS (10 s): defaults, and bad values refused by name', () => {
    const config = loadConfig({});
    assert.equal(config.drainDelayMs, 2_000);
    assert.equal(config.drainTimeoutMs, 10_000);
    assert.equal(loadConfig({ DRAIN_DELAY_MS: '0' }).drainDelayMs, 0);
    for (const [name, value] of [
      ['DRAIN_DELAY_MS', '-1'],
      ['DRAIN_DELAY_MS', '2s'],
      ['DRAIN_TIMEOUT_MS', '0'],
    ]) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.startsWith(`${name} must be a whole number`),
      );
    }
  });

  test('readiness fails first, the listener closes, the request in flight ends with Connection: close', async () => {
    const dataDir = newDataDir();
    const email = 'grace@example.com';
    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const { apiKey } = await db
      .transaction()
      .execute((trx) => createUser(trx, { email, firstName: 'Grace', lastName: 'Hopper' }));
    await db.destroy();
    // Readiness fails for three seconds before the listener closes: long enough to be seen, even
    // on a busy machine.
    const server = await startServer({
      env: { DRAIN_DELAY_MS: '3000', DRAIN_TIMEOUT_MS: '20000' },
      dataDir,
      cwd: root,
    });
    const kept = rawConnection(server.port);
    try {
      await waitFor('readiness', async () => (await readiness(server.port))?.status === 200);
      kept.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const live = await kept.next();
      assert.equal(live.status, 200);
      assert.notEqual(live.headers.connection, 'close', 'kept alive before the drain');

      // A second request on the same connection, held in flight: its body waits for the drain.
      const body = 'name=Drained';
      kept.write(
        'POST /api/products.json HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `Authorization: ${basic(email, apiKey)}\r\n` +
          'Content-Type: application/x-www-form-urlencoded\r\n' +
          `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
      );
      assert.equal((await kept.next()).status, 100, 'the request is in flight');

      process.kill(server.child.pid!, 'SIGTERM');
      const seen: Array<number | undefined> = [];
      await waitFor(
        'readiness to fail, then the listener to close',
        async () => {
          const answer = await readiness(server.port);
          seen.push(answer?.status);
          if (answer) assert.ok(answer.status !== 503 || /draining/.test(answer.body), answer.body);
          return answer === undefined;
        },
        30_000,
      );
      assert.ok(seen.includes(503), `readiness answers while draining: ${seen.join(', ')}`);
      assert.ok(
        seen.indexOf(503) < seen.indexOf(undefined),
        `readiness failed before the listener closed: ${seen.join(', ')}`,
      );

      kept.write(body);
      const created = await kept.next();
      assert.equal(created.status, 200, created.body);
      assert.equal(JSON.parse(created.body).name, 'Drained');
      assert.equal(created.headers.connection, 'close');
      await kept.ended;

      const code = await within(server.exited, 20_000, 'still running');
      assert.equal(code, 0, `exit: ${code}; stderr: ${server.stderr()}`);
      const drained = jsonLines(server.stdout()).find((line) => line.msg === 'drained');
      assert.ok(drained, `${server.stdout()}${server.stderr()}`);
      assert.equal(drained.forced, false);
    } finally {
      kept.destroy();
      await stopProcess(server.child);
    }
  });

  test('a request that does not finish within DRAIN_TIMEOUT_MS is cut, and the process exits', async () => {
    const dataDir = newDataDir();
    const email = 'katherine@example.com';
    const db = await openDatabase(await databaseOptionsFor(dataDir));
    const { apiKey } = await db
      .transaction()
      .execute((trx) => createUser(trx, { email, firstName: 'Katherine', lastName: 'Johnson' }));
    await db.destroy();
    const server = await startServer({ env: { DRAIN_TIMEOUT_MS: '300' }, dataDir, cwd: root });
    const stuck = rawConnection(server.port);
    try {
      // Authenticated, so that it waits for its body (a stranger's is refused without it).
      stuck.write(
        'POST /api/products.json HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `Authorization: ${basic(email, apiKey)}\r\n` +
          'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n',
      );
      assert.equal((await stuck.next()).status, 100, 'the request is in flight');
      process.kill(server.child.pid!, 'SIGTERM');
      // Its body never comes: the connection is cut at the bound.
      await stuck.ended;
      const code = await within(server.exited, 20_000, 'still running');
      assert.equal(code, 0, `exit: ${code}; stderr: ${server.stderr()}`);
      const drained = jsonLines(server.stdout()).find((line) => line.msg?.toString().startsWith('drained'));
      assert.equal(drained?.forced, true, `${server.stdout()}${server.stderr()}`);
    } finally {
      stuck.destroy();
      await stopProcess(server.child);
    }
  });
});
