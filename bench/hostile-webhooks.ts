/**
 * A deploy of 500 items with the largest descriptions the rules allow, to a product with three
 * webhooks, against the built server on 127.0.0.1 and a local receiver: how long the deploy's
 * answer took, the largest event row and body, what each receiver got, the longest wait of a
 * small concurrent request (/health polled every 10 ms) and the server's peak memory.
 *
 *   npm run build && node --import tsx bench/hostile-webhooks.ts
 *
 * SHIPLOG_ROOT names another checkout to measure (its dist/ and bin/, built), e.g. an older one
 * for a before-and-after; its own CLI seeds the data, so the database is that version's.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { ROOT } from './config.js';
import { freePort, peakRssMb, request, rssMb, spawnServer, stopChild, waitForOk, type Child } from './processes.js';

const ITEMS = 500;
const DESCRIPTION_POINTS = 65_535;
const WEBHOOKS = 3;
/** Every wait of this run is bounded. */
const DEADLINE_MS = 600_000;

const root = path.resolve(process.env.SHIPLOG_ROOT ?? ROOT);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-hostile-webhooks-'));
const email = 'bench@example.com';
const apiKey = crypto.randomBytes(24).toString('hex').slice(0, 32);
const auth = `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;

function cli(...args: string[]): string {
  return execFileSync(process.execPath, [path.join(root, 'bin', 'shiplog.js'), ...args], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir },
    encoding: 'utf8',
  }).trim();
}

/** What one receiver path got. */
interface Got {
  deliveries: number;
  bytes: number;
  listedItems?: number;
  itemCount?: number;
  firstAt?: number;
}

/** A receiver that counts what each path gets and answers 200 once the body is in. */
async function startReceiver(): Promise<{ port: number; got: Map<string, Got>; stop: () => Promise<void> }> {
  const got = new Map<string, Got>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const entry = got.get(req.url!) ?? { deliveries: 0, bytes: 0 };
      entry.deliveries += 1;
      entry.bytes = Math.max(entry.bytes, body.length);
      entry.firstAt ??= performance.now();
      try {
        const json = JSON.parse(body.toString('utf8'));
        if (json.deploy) {
          entry.listedItems = json.deploy.items.length;
          entry.itemCount = json.deploy.item_count ?? json.deploy.items.length;
        }
      } catch {
        // Counted by size only.
      }
      got.set(req.url!, entry);
      res.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    got,
    stop: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const post = (port: number, p: string, fields: Record<string, string>) =>
  request(port, p, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: form(fields),
    timeoutMs: DEADLINE_MS,
  });

/** The largest description the server takes: U+0001 (six bytes in JSON), else `"` (two), else plain letters. */
async function createItems(port: number, api: string): Promise<string> {
  const candidates: [string, string][] = [
    ['U+0001', '\u0001'.repeat(DESCRIPTION_POINTS)],
    ['"', '"'.repeat(DESCRIPTION_POINTS)],
    ['a', 'a'.repeat(DESCRIPTION_POINTS)],
  ];
  let chosen: [string, string] | undefined;
  for (const candidate of candidates) {
    const res = await post(port, `${api}/items.json`, { type: 'task', title: 'Item 1', description: candidate[1] });
    if (res.status === 200) {
      chosen = candidate;
      break;
    }
  }
  if (!chosen) throw new Error('no description of 65,535 characters was taken');
  let next = 2;
  const worker = async () => {
    while (next <= ITEMS) {
      const n = next++;
      const res = await post(port, `${api}/items.json`, { type: 'task', title: `Item ${n}`, description: chosen[1] });
      if (res.status !== 200) throw new Error(`item ${n}: ${res.status} ${res.body.slice(0, 200)}`);
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  return `${DESCRIPTION_POINTS.toLocaleString('en')} x ${chosen[0]}`;
}

/** Polls /health every 10 ms until stopped; the longest answer is what another user waited. */
function pollHealth(port: number): { stop: () => Promise<{ polls: number; maxMs: number }> } {
  let running = true;
  let polls = 0;
  let maxMs = 0;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await request(port, '/health', { timeoutMs: DEADLINE_MS }).catch(() => undefined);
      maxMs = Math.max(maxMs, performance.now() - started);
      polls += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { polls, maxMs };
    },
  };
}

/** The largest event row, in bytes, whichever version wrote it. */
function largestEventRow(): number {
  const db = new SQLite(path.join(dataDir, 'shiplog.db'), { readonly: true, fileMustExist: true });
  try {
    const columns = (
      db.prepare("select name from pragma_table_info('webhook_events')").all() as { name: string }[]
    ).map((c) => c.name);
    const stored = columns.filter((c) => ['payload', 'body', 'slack_body'].includes(c));
    const sum = stored.map((c) => `length(cast(${c} as blob))`).join(' + ');
    return Number((db.prepare(`select max(${sum}) as n from webhook_events`).get() as { n: number }).n);
  } finally {
    db.close();
  }
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e6 ? 3 : 1)} MB`;

async function main(): Promise<void> {
  const started = performance.now();
  cli('user', 'add', email, '--first', 'Bench', '--last', 'Admin', '--api-key', apiKey);
  const productId = cli('product', 'add', 'Hostile', '--owner', email);
  const api = `/api/products/${productId}`;
  const receiver = await startReceiver();
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    PUBLIC_URL: 'http://shiplog.test',
    LOG_LEVEL: 'warn',
    WEBHOOKS_ALLOW_PRIVATE: '1',
    RATE_LIMIT_PER_KEY: '1000000',
    RATE_LIMIT_PER_ADDRESS: '1000000',
  };
  let server: Child | undefined;
  try {
    server = spawnServer(path.join(root, 'dist', 'bundle', 'server.js'), env, path.join(dataDir, 'server.log'));
    await waitForOk(server, port, '/health');
    const description = await createItems(port, api);
    // The same deploy without webhooks first: what the deploy costs by itself (its receipt).
    const numbers = Array.from({ length: ITEMS }, (_, i) => i + 1).join(',');
    const bare = pollHealth(port);
    const bareStarted = performance.now();
    const alone = await post(port, `${api}/deploys.json`, { environment: 'staging', version: '1.0.0', numbers });
    const bareMs = performance.now() - bareStarted;
    const bareHeld = await bare.stop();
    if (alone.status !== 200) throw new Error(`deploy: ${alone.status} ${alone.body.slice(0, 200)}`);
    for (let i = 1; i <= WEBHOOKS; i++) {
      const res = await post(port, `${api}/webhooks.json`, {
        url: `http://127.0.0.1:${receiver.port}/hook-${i}`,
        events: 'deploy.created',
        format: i === WEBHOOKS ? 'slack' : 'shiplog',
      });
      if (res.status !== 200) throw new Error(`webhook ${i}: ${res.status} ${res.body}`);
    }
    const rssBefore = rssMb(server.pid);
    const health = pollHealth(port);
    const deployStarted = performance.now();
    const deploy = await post(port, `${api}/deploys.json`, { environment: 'production', version: '1.0.0', numbers });
    const deployMs = performance.now() - deployStarted;
    if (deploy.status !== 200) throw new Error(`deploy: ${deploy.status} ${deploy.body.slice(0, 200)}`);
    const deadline = Date.now() + DEADLINE_MS;
    while ([...receiver.got.values()].length < WEBHOOKS && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const deliveredMs = performance.now() - deployStarted;
    const held = await health.stop();
    const peak = peakRssMb(server.pid);
    const figures = {
      root,
      description,
      without_webhooks: { deploy_answer_ms: Math.round(bareMs), health_longest_ms: Math.round(bareHeld.maxMs) },
      deploy_answer_ms: Math.round(deployMs),
      deploy_answer_bytes: Buffer.byteLength(deploy.body),
      all_delivered_ms: Math.round(deliveredMs),
      largest_event_row_bytes: largestEventRow(),
      receivers: Object.fromEntries(
        [...receiver.got].map(([p, g]) => [
          p,
          { deliveries: g.deliveries, bytes: g.bytes, listed_items: g.listedItems, item_count: g.itemCount },
        ]),
      ),
      health_polls: held.polls,
      health_longest_ms: Math.round(held.maxMs),
      rss_before_deploy_mb: Math.round(rssBefore),
      peak_rss_mb: Math.round(peak),
      run_seconds: Math.round((performance.now() - started) / 1000),
    };
    console.log(JSON.stringify(figures, null, 2));
    console.log(
      `without webhooks: deploy answered in ${figures.without_webhooks.deploy_answer_ms} ms, ` +
        `/health waited at most ${figures.without_webhooks.health_longest_ms} ms`,
    );
    console.log(
      `with ${WEBHOOKS} webhooks: deploy answered in ${figures.deploy_answer_ms} ms ` +
        `(${mb(figures.deploy_answer_bytes)}); ` +
        `all ${WEBHOOKS} receivers had it after ${figures.all_delivered_ms} ms; ` +
        `largest event row ${mb(figures.largest_event_row_bytes)}; ` +
        `/health waited at most ${figures.health_longest_ms} ms over ${held.polls} polls; ` +
        `RSS ${figures.rss_before_deploy_mb} MB before, peak ${figures.peak_rss_mb} MB`,
    );
    for (const [p, g] of receiver.got)
      console.log(
        `  ${p}: ${g.deliveries} delivery(ies), ${mb(g.bytes)}` +
          `${g.itemCount !== undefined ? `, ${g.listedItems} of ${g.itemCount} items listed` : ''}`,
      );
  } finally {
    await stopChild(server);
    await receiver.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
