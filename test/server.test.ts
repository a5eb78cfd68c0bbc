import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { openDatabase } from '../src/db/connection.js';
import { createUser } from '../src/users/service.js';
import { basic, tempDir } from './helpers.js';
import { databaseOptionsFor, pgBase } from './storage.js';
import { spawnServer, startServer, stopAll, stopProcess, waitFor } from './processes.js';

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
