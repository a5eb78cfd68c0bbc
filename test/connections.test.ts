import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import { assertError, makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { databaseOptionsFor } from './storage.js';
import { startServer, stopAll, waitFor, type Server } from './processes.js';

// Socket-level behaviour, so a real server on loopback. Limits are set low so each attack
// plays out in about a second.
const REQUEST_TIMEOUT_MS = 1_500;
const KEEP_ALIVE_TIMEOUT_MS = 500;

const root = tempDir('shiplog-connections-test-');
const newDataDir = (): string => fs.mkdtempSync(path.join(root, 'data-'));

after(stopAll);

/** A user and a product in a fresh data directory, made before the server starts. */
async function seed(dataDir: string): Promise<{ owner: TestUser; productId: number }> {
  const db = await openDatabase(await databaseOptionsFor(dataDir));
  try {
    const owner = await makeUser(db);
    const productId = (await makeProduct(db, owner)).id;
    return { owner, productId };
  } finally {
    await db.destroy();
  }
}

interface Exchange {
  /** Everything the server sent before closing (or before the test gave up). */
  data: string;
  /** Milliseconds from connecting until the server closed the connection; undefined if it did not. */
  closedAfterMs?: number;
  /** A connection error (a reset), if any. */
  error?: string;
}

/**
 * Opens a raw connection, writes `head`, then (with `trickle`) one more byte every `trickle.everyMs`
 * for as long as the server keeps the connection open (calling `trickle.sent` after each), and
 * collects what comes back until the server closes or `waitMs` passes.
 */
function exchange(
  port: number,
  head: string,
  options: { trickle?: { everyMs: number; sent?: () => void }; waitMs?: number } = {},
): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect({ port, host: '127.0.0.1' });
    const result: Exchange = { data: '' };
    let ticker: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => socket.destroy(), options.waitMs ?? 5_000);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (result.data += chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => (result.error = err.code ?? err.message));
    socket.on('end', () => (result.closedAfterMs ??= Date.now() - started));
    socket.on('close', () => {
      clearInterval(ticker);
      clearTimeout(giveUp);
      if (result.error) result.closedAfterMs ??= Date.now() - started;
      resolve(result);
    });
    socket.on('connect', () => {
      socket.write(head);
      if (options.trickle) {
        ticker = setInterval(() => {
          if (socket.writable) socket.write('x');
          options.trickle?.sent?.();
        }, options.trickle.everyMs);
      }
    });
  });
}

/** Sends `request` on an open connection and resolves with the whole answer, leaving the connection open. */
function ask(socket: net.Socket, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end))?.[1] ?? 0);
      if (data.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve(data);
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error(`closed before a whole answer: ${JSON.stringify(data)}`)));
    socket.write(request);
  });
}

/** The first response in raw bytes: status, headers (lower-cased names) and body. */
function firstResponse(data: string): { status: number; headers: Map<string, string>; body: string } {
  const end = data.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response head in ${JSON.stringify(data.slice(0, 200))}`);
  const [statusLine, ...lines] = data.slice(0, end).split('\r\n');
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  const length = Number(headers.get('content-length'));
  return { status: Number(statusLine.split(' ')[1]), headers, body: data.slice(end + 4, end + 4 + length) };
}

/** The interface's error shape, as raw bytes from the server. */
function assertErrorShape(data: string, status: number): void {
  const res = firstResponse(data);
  assertError({ statusCode: res.status, headers: Object.fromEntries(res.headers), body: res.body }, status, {
    errors: [],
    label: data.slice(0, 300),
  });
}

const get = (path: string, auth: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n${extra}\r\n`;

describe('timeouts', () => {
  let server: Server;
  let owner: TestUser;
  let productId: number;

  before(async () => {
    const dataDir = newDataDir();
    ({ owner, productId } = await seed(dataDir));
    server = await startServer({
      dataDir,
      cwd: root,
      env: {
        LOG_LEVEL: 'warn',
        REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
      },
    });
  });

  test(
    'a client trickling its body is cut off with 408 at the request timeout; ' +
      'others are answered promptly meanwhile',
    async (t) => {
      const list = `/api/products/${productId}/items.json`;
      // Another request each time a slow client sends a byte, for as long as they are connected.
      let trickled = () => {};
      const sent = () => trickled();
      const slow = exchange(
        server.port,
        `POST ${list} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${owner.auth}\r\n` +
          'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ntitle=',
        { trickle: { everyMs: 250, sent }, waitMs: REQUEST_TIMEOUT_MS + 5_000 },
      );
      // A client trickling its request head is no better off.
      const slowHead = exchange(server.port, `GET ${list} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `, {
        trickle: { everyMs: 250, sent },
        waitMs: REQUEST_TIMEOUT_MS + 5_000,
      });

      let cutOff = false;
      const bothCutOff = Promise.all([slow, slowHead]).then(() => (cutOff = true));
      const latencies: number[] = [];
      while (!cutOff && latencies.length < 100) {
        const startedAt = Date.now();
        const res = await fetch(`http://127.0.0.1:${server.port}${list}`, { headers: { authorization: owner.auth } });
        await res.arrayBuffer();
        assert.equal(res.status, 200);
        latencies.push(Date.now() - startedAt);
        await Promise.race([new Promise<void>((resolve) => (trickled = resolve)), bothCutOff]);
      }

      for (const [label, result] of [
        ['body', await slow],
        ['head', await slowHead],
      ] as const) {
        assert.equal(result.error, undefined, `${label}: ${result.error}`);
        assertErrorShape(result.data, 408);
        assert.ok(result.closedAfterMs !== undefined, `${label}: the slow client was never cut off`);
        assert.ok(
          result.closedAfterMs >= REQUEST_TIMEOUT_MS - 50,
          `${label}: cut off early, after ${result.closedAfterMs} ms`,
        );
        assert.ok(
          result.closedAfterMs <= REQUEST_TIMEOUT_MS + 1_500,
          `${label}: still open ${result.closedAfterMs} ms after it started`,
        );
        t.diagnostic(
          `slow ${label}: answered 408 and closed after ${result.closedAfterMs} ms (limit ${REQUEST_TIMEOUT_MS} ms)`,
        );
      }
      assert.ok(latencies.length >= 3, `only ${latencies.length} requests while the slow clients were connected`);
      const sorted = [...latencies].sort((a, b) => a - b);
      t.diagnostic(
        `other requests meanwhile: ${latencies.length}, ` +
          `median ${sorted[sorted.length >> 1]} ms, max ${sorted[sorted.length - 1]} ms`,
      );
      assert.ok(
        sorted[sorted.length - 1] < 1_000,
        `a request waited ${sorted[sorted.length - 1]} ms behind the slow clients`,
      );
    },
  );

  test('an idle keep-alive connection is closed by the server', async (t) => {
    const result = await exchange(server.port, get('/health', owner.auth), { waitMs: KEEP_ALIVE_TIMEOUT_MS + 5_000 });
    assert.equal(firstResponse(result.data).status, 200);
    assert.equal(firstResponse(result.data).headers.get('connection'), 'keep-alive');
    assert.ok(result.closedAfterMs !== undefined, 'the idle connection stayed open');
    // Node adds up to a second of grace to the advertised timeout.
    assert.ok(
      result.closedAfterMs >= KEEP_ALIVE_TIMEOUT_MS - 50 && result.closedAfterMs <= KEEP_ALIVE_TIMEOUT_MS + 2_000,
      `closed after ${result.closedAfterMs} ms`,
    );
    t.diagnostic(
      `idle keep-alive connection closed after ${result.closedAfterMs} ms (limit ${KEEP_ALIVE_TIMEOUT_MS} ms)`,
    );
  });

  test('what the HTTP parser refuses is answered in the error shape', async () => {
    const cases: Array<[string, string, number]> = [
      ['a malformed request line', 'FOO BAR\r\n\r\n', 400],
      ['bytes that are not HTTP', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 400],
      ['headers larger than 16 KiB', get('/health', owner.auth, `X-Big: ${'a'.repeat(20_000)}\r\n`), 431],
      [
        'both Content-Length and Transfer-Encoding',
        'POST /api/products.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n' +
          '0\r\n\r\n',
        400,
      ],
      ['a raw non-ASCII byte in the URL', 'GET /api/products.json?tags=\xff HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      [
        'an Expect the server cannot meet',
        'POST /api/products.json HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 0\r\n\r\n',
        417,
      ],
    ];
    for (const [label, request, status] of cases) {
      const result = await exchange(server.port, request);
      assert.equal(result.error, undefined, `${label}: ${result.error}`);
      assert.doesNotThrow(
        () => assertErrorShape(result.data, status),
        `${label}: ${JSON.stringify(result.data.slice(0, 300))}`,
      );
      assert.ok(result.closedAfterMs !== undefined, `${label}: connection left open`);
    }
  });
});

describe('connection cap', () => {
  test(
    'connections beyond MAX_CONNECTIONS are refused at once; those open are still served, ' +
      'and a freed place is taken again',
    async (t) => {
      const dataDir = newDataDir();
      const { owner } = await seed(dataDir);
      const server = await startServer({ dataDir, cwd: root, env: { LOG_LEVEL: 'warn', MAX_CONNECTIONS: '3' } });
      const held: net.Socket[] = [];
      try {
        for (let i = 0; i < 3; i++) {
          const socket = net.connect({ port: server.port, host: '127.0.0.1' });
          socket.on('error', () => {});
          await new Promise((resolve) => socket.once('connect', resolve));
          held.push(socket);
        }
        // An answer on each shows the server has taken it from the kernel: all three places are held.
        for (const socket of held)
          assert.equal(firstResponse(await ask(socket, get('/health', owner.auth))).status, 200);

        const refused = await exchange(server.port, get('/health', owner.auth, 'Connection: close\r\n'), {
          waitMs: 3_000,
        });
        assert.equal(refused.data, '', 'a connection over the cap was served');
        assert.ok(
          refused.closedAfterMs !== undefined && refused.closedAfterMs < 1_000,
          `over the cap: closed after ${refused.closedAfterMs} ms`,
        );
        t.diagnostic(
          `4th connection with MAX_CONNECTIONS=3: closed after ${refused.closedAfterMs} ms (${refused.error ?? 'FIN'})`,
        );

        // One of the held connections is served as usual.
        assert.equal(firstResponse(await ask(held[0], get('/health', owner.auth))).status, 200);

        // The server frees the place once it has seen the close; until then a newcomer is refused.
        held.pop()!.destroy();
        let admitted: Exchange | undefined;
        await waitFor('a connection to take the freed place', async () => {
          admitted = await exchange(server.port, get('/health', owner.auth, 'Connection: close\r\n'));
          return admitted.data !== '';
        });
        assert.equal(firstResponse(admitted!.data).status, 200);
      } finally {
        for (const socket of held) socket.destroy();
        await stopAll();
      }
    },
  );
});

describe('configuration', () => {
  test('timeouts and the connection cap are validated, naming the variable', () => {
    for (const name of ['REQUEST_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'MAX_CONNECTIONS']) {
      for (const value of ['0', 'abc', '-5', '1.5']) {
        assert.throws(
          () => loadConfig({ [name]: value }),
          (err: unknown) => err instanceof ConfigError && err.message.includes(name),
          `${name}=${value}`,
        );
      }
    }
    // Node's timers cannot wait longer: a larger value would fire at once.
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_MS: '2147483648' }), ConfigError);
    const config = loadConfig({ REQUEST_TIMEOUT_MS: '1000', KEEP_ALIVE_TIMEOUT_MS: '2000', MAX_CONNECTIONS: '7' });
    assert.deepEqual([config.requestTimeoutMs, config.keepAliveTimeoutMs, config.maxConnections], [1000, 2000, 7]);
    const defaults = loadConfig({});
    assert.deepEqual(
      [defaults.requestTimeoutMs, defaults.keepAliveTimeoutMs, defaults.maxConnections],
      [30_000, 5_000, 1_000],
    );
  });
});
