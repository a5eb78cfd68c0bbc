/**
 * How big and how slow the answers of one hostile account can be made, and what they cost everyone
 * else: one account, a product of 500 items whose text is the largest the input rules allow (the
 * description that JSON makes biggest, the longest title, 100 tags of 64 characters), one deploy of
 * all of them. Against the built server (dist/bundle/server.js, or BENCH_SERVER) on 127.0.0.1,
 * SQLite, started as `npm start` starts it. Prints the size and time of `items.json?limit=500`, the
 * default `deploys.json` page and the deploy's receipt (and its dry run), the server's peak RSS
 * growth, and how long another user's requests (`/health`, a small list of their own) waited while
 * four of the big requests ran at once.
 *
 *   npm run build && node --import tsx bench/hostile-answers.ts
 *
 * The filler: U+0001 (six bytes in JSON) while the rules accept it, else `"` (two bytes), in the
 * longest description the rules accept (tried from the longest down). Bounded in time: every
 * request has a deadline, the whole run stops after BENCH_DEADLINE_SECONDS (600 by default).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/db/connection.js';
import { createUser } from '../src/users/service.js';
import { SERVER_SCRIPT } from './config.js';
import {
  freePort,
  peakRssMb,
  rssMb,
  spawnServer,
  stopAllChildren,
  stopChild,
  stopChildrenOnExit,
  waitForOk,
} from './processes.js';

const ITEMS = 500;
const TAGS = 100;
const TAG_LENGTH = 64;
const TITLE_LENGTH = 255;
const AT_ONCE = 4;
const server = process.env.BENCH_SERVER ?? SERVER_SCRIPT;
const deadline = setTimeout(
  () => {
    process.stderr.write('hostile-answers: deadline passed, stopping\n');
    void stopAllChildren().finally(() => process.exit(2));
  },
  Number(process.env.BENCH_DEADLINE_SECONDS ?? 600) * 1000,
);
deadline.unref();

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: number;
  ms: number;
  /** The body, when small (at most 64 KiB); else undefined. */
  text?: string;
}

let port = 0;

/** One request on a fresh connection; counts the body's bytes without holding a big one. */
function send(
  method: string,
  url: string,
  auth: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: url,
        method,
        agent: false,
        timeout: 120_000,
        headers: {
          ...(auth ? { authorization: auth } : {}),
          ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
      },
      (res) => {
        let bytes = 0;
        const kept: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes <= 65_536) kept.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            bytes,
            ms: performance.now() - started,
            text: bytes <= 65_536 ? Buffer.concat(kept).toString('utf8') : undefined,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout on ${method} ${url}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;
const ms = (t: number) => `${t.toFixed(0)} ms`;
const basic = (email: string, key: string) => `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;

function expectOk(what: string, answer: Answer): Answer {
  if (answer.status !== 200) throw new Error(`${what}: ${answer.status} ${answer.text ?? ''}`);
  return answer;
}

/** Resets the process's peak RSS (VmHWM) to its current RSS, so later peaks are the requests'. */
function resetPeak(pid: number): void {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

async function main(): Promise<void> {
  stopChildrenOnExit();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-hostile-'));
  const db = await openDatabase({ dataDir });
  const made = async (email: string) => {
    const { user, apiKey } = await db
      .transaction()
      .execute((trx) => createUser(trx, { email, firstName: 'Bench', lastName: email.split('@')[0] }));
    return basic(user.email, apiKey);
  };
  const hostile = await made('hostile@example.com');
  const bystander = await made('bystander@example.com');
  await db.destroy();

  port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_ADDRESS: '0',
  };
  const child = spawnServer(server, env, path.join(dataDir, 'server.log'));
  try {
    await waitForOk(child, port, '/health', 30_000, 20);

    const product = JSON.parse(
      expectOk('product', await send('POST', '/api/products.json', hostile, { name: 'Hostile' })).text!,
    ).id as number;
    const own = JSON.parse(
      expectOk('product', await send('POST', '/api/products.json', bystander, { name: 'Quiet' })).text!,
    ).id as number;
    for (let i = 0; i < 5; i++)
      expectOk(
        'small item',
        await send('POST', `/api/products/${own}/items.json`, bystander, { type: 'task', title: `Small ${i}` }),
      );

    // The worst text the rules accept: the filler that JSON makes biggest, as long as allowed.
    const base = `/api/products/${product}`;
    let filler = '';
    let description = '';
    for (const [char, lengths] of [
      ['\u0001', [65_535]],
      ['"', [65_536, 65_535, 32_768, 16_384]],
    ] as const) {
      for (const length of lengths) {
        const answer = await send(
          'POST',
          `${base}/items.json`,
          hostile,
          { type: 'task', title: 'probe', description: char.repeat(length) },
          { 'cache-control': 'no-cache' },
        );
        if (answer.status === 200) {
          [filler, description] = [char, char.repeat(length)];
          break;
        }
      }
      if (filler) break;
    }
    if (!filler) throw new Error('no description of the fillers was accepted');
    const tags = Array.from({ length: TAGS }, (_, i) => `${i}`.padEnd(TAG_LENGTH, filler));
    const title = filler.repeat(TITLE_LENGTH);
    const setupStarted = performance.now();
    // The probe is item 1; it takes the same text as the others.
    expectOk('item 1', await send('POST', `${base}/items/1.json`, hostile, { title, description, tags }));
    for (let n = 2; n <= ITEMS; n++)
      expectOk(
        `item ${n}`,
        await send('POST', `${base}/items.json`, hostile, { type: 'task', title, description, tags }),
      );
    const numbers = Array.from({ length: ITEMS }, (_, i) => i + 1);
    console.log(`server: ${server}`);
    console.log(
      `filler: U+${filler.codePointAt(0)!.toString(16).padStart(4, '0').toUpperCase()}, ` +
        `description ${description.length} characters (${Buffer.byteLength(description)} bytes of UTF-8), ` +
        `${TAGS} tags of ${TAG_LENGTH}, title ${TITLE_LENGTH}; ` +
        `${ITEMS} items made in ${ms(performance.now() - setupStarted)}`,
    );

    const rssBefore = rssMb(child.pid);
    resetPeak(child.pid);
    const fresh = { 'cache-control': 'no-cache' };
    const report = (what: string, a: Answer) =>
      console.log(
        `${what.padEnd(40)} ${String(a.status).padEnd(4)} ${mb(a.bytes).padStart(10)} ${ms(a.ms).padStart(9)}  ${[
          'x-sprintly-item-count',
          'x-sprintly-deploy-count',
          'x-sprintly-next-offset',
        ]
          .filter((h) => a.headers[h] !== undefined)
          .map((h) => `${h}: ${a.headers[h]}`)
          .join(', ')}`,
      );

    report(
      'POST deploys.json dry_run (receipt)',
      await send('POST', `${base}/deploys.json`, hostile, { environment: 'production', numbers, dry_run: true }),
    );
    report(
      'POST deploys.json (receipt)',
      await send('POST', `${base}/deploys.json`, hostile, { environment: 'production', numbers, version: '1.0' }),
    );
    report('GET items.json?limit=500', await send('GET', `${base}/items.json?limit=500`, hostile, undefined, fresh));
    report('GET items.json?limit=500 (kept)', await send('GET', `${base}/items.json?limit=500`, hostile));
    report('GET deploys.json', await send('GET', `${base}/deploys.json`, hostile, undefined, fresh));
    report('GET items/1.json', await send('GET', `${base}/items/1.json`, hostile));
    const rssAfterOne = rssMb(child.pid);
    console.log(
      `RSS before ${rssBefore.toFixed(0)} MiB; ` +
        `peak during the single requests ${peakRssMb(child.pid).toFixed(0)} MiB ` +
        `(growth ${(peakRssMb(child.pid) - rssBefore).toFixed(0)} MiB); after ${rssAfterOne.toFixed(0)} MiB`,
    );

    // Four big requests at once (rendered afresh each), while the other user asks small things.
    for (const [what, url] of [
      ['items.json?limit=500', `${base}/items.json?limit=500`],
      ['deploys.json', `${base}/deploys.json`],
    ] as const) {
      const rssStart = rssMb(child.pid);
      resetPeak(child.pid);
      let done = false;
      const waits: Record<string, number[]> = { '/health': [], 'their items.json': [] };
      // Each probe asks, waits 10 ms, asks again, for as long as the big requests run.
      const probe = (what: string, ask: () => Promise<Answer>) =>
        (async () => {
          while (!done) {
            waits[what].push((await ask()).ms);
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })();
      const probes = [
        probe('/health', () => send('GET', '/health', undefined)),
        probe('their items.json', () =>
          send('GET', `/api/products/${own}/items.json`, bystander, undefined, { 'cache-control': 'no-cache' }),
        ),
      ];
      const started = performance.now();
      const big = await Promise.all(Array.from({ length: AT_ONCE }, () => send('GET', url, hostile, undefined, fresh)));
      const wall = performance.now() - started;
      done = true;
      await Promise.all(probes);
      console.log(
        `${AT_ONCE} x ${what} at once: ${mb(big.reduce((s, a) => s + a.bytes, 0) / AT_ONCE)} each, ` +
          `slowest ${ms(Math.max(...big.map((a) => a.ms)))} (all in ${ms(wall)}); ` +
          `peak RSS growth ${(peakRssMb(child.pid) - rssStart).toFixed(0)} MiB`,
      );
      for (const [name, times] of Object.entries(waits)) {
        times.sort((a, b) => a - b);
        const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? NaN;
        console.log(
          `  other user's ${name.padEnd(17)} ${String(times.length).padStart(3)} requests: ` +
            `median ${ms(pct(0.5))}, max ${ms(times[times.length - 1] ?? NaN)}`,
        );
      }
    }
    console.log(
      `(machine: ${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
    );
  } finally {
    await stopChild(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    console.error(error);
    await stopAllChildren();
    process.exit(1);
  },
);
