/**
 * Pages that show Markdown, under notes and descriptions written to be slow to render: 120 deploys,
 * each with 8 KB of `![*` repeated as its notes (each one different, so no cache of renders helps),
 * and 120 items with such descriptions. Times the writes, the deploys pages (every page, twice),
 * the item pages and single deploy pages, and how long /health, polled alongside every 10 ms,
 * waited at the longest, during the writes and during the pages.
 *
 *   npm run build && node --import tsx bench/hostile-markdown.ts
 *
 * Runs the built server (dist/bundle/server.js) on 127.0.0.1 with SQLite in a temporary directory;
 * bounded: every request has a deadline and the whole run stops after two minutes.
 */
import { performance } from 'node:perf_hooks';
import { openDatabase } from '../src/db/connection.js';
import { mailedLink } from '../test/browser.js';
import { makeProduct, makeUser, tempDir } from '../test/helpers.js';
import { startServer, stopProcess } from '../test/processes.js';
import { databaseOptionsFor } from '../test/storage.js';

const COUNT = 120;
const NOTES_BYTES = 8192;
const REQUEST_MS = 30_000;
/** Each text its own, so that no cache of renders keyed by the text helps. */
const hostile = (label: string): string => `${label} ${'![*'.repeat(NOTES_BYTES)}`.slice(0, NOTES_BYTES);

const whole = setTimeout(() => {
  console.error('hostile-markdown: gave up after two minutes');
  process.exit(2);
}, 120_000);

const dataDir = tempDir('shiplog-hostile-md-');
const server = await startServer({
  dataDir,
  env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' },
  envForPort: (port) => ({ PUBLIC_URL: `http://127.0.0.1:${port}` }),
});
const base = `http://127.0.0.1:${server.port}`;
const db = await openDatabase(await databaseOptionsFor(dataDir));

async function request(
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: string; headers: Headers; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, { ...init, redirect: 'manual', signal: AbortSignal.timeout(REQUEST_MS) });
  const body = await res.text();
  return { status: res.status, body, headers: res.headers, ms: performance.now() - started };
}

try {
  const owner = await makeUser(db);
  const product = await makeProduct(db, owner, [], 'Hostile notes');
  const api = (path: string, form: Record<string, string>) =>
    request(`/api/products/${product.id}${path}`, {
      method: 'POST',
      headers: { authorization: owner.auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });

  // /health every 10 ms alongside: the longest answer is how long anybody waited.
  let healthMax = 0;
  let polling = true;
  const poll = async () => {
    while (polling) {
      healthMax = Math.max(healthMax, (await request('/health')).ms);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  let poller = poll();
  const stopPolling = async (): Promise<number> => {
    polling = false;
    await poller;
    const longest = healthMax;
    healthMax = 0;
    polling = true;
    return longest;
  };

  const writes: number[] = [];
  for (let n = 1; n <= COUNT; n++) {
    const item = await api('/items.json', { type: 'task', title: `Item ${n}`, description: hostile(`Item ${n}`) });
    if (item.status !== 200) throw new Error(`item ${n}: ${item.status} ${item.body.slice(0, 200)}`);
    const deploy = await api('/deploys.json', {
      environment: 'production',
      numbers: String(n),
      version: `1.0.${n}`,
      notes: hostile(`Deploy ${n}`),
    });
    if (deploy.status !== 200) throw new Error(`deploy ${n}: ${deploy.status} ${deploy.body.slice(0, 200)}`);
    writes.push(item.ms, deploy.ms);
  }
  const healthDuringWrites = await stopPolling();

  // Signed in as a person would be: a link asked for, read from the .eml file, followed.
  const asked = await request('/app/sign-in', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `email=${encodeURIComponent(owner.email)}`,
  });
  if (asked.status !== 200) throw new Error(`sign-in: ${asked.status}`);
  const link = await mailedLink(dataDir, owner.email, /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/);
  const signedIn = await request(link, { method: 'POST' });
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0];
  if (!cookie.startsWith('shiplog_session=')) throw new Error(`no session: ${signedIn.status}`);
  const page = async (path: string) => {
    const res = await request(path, { headers: { cookie } });
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    return res.ms;
  };

  poller = poll();
  const deployPages: number[] = [];
  for (let pass = 0; pass < 2; pass++) {
    for (let offset = 0; offset < COUNT; offset += 20)
      deployPages.push(await page(`/app/products/${product.id}/deploys?offset=${offset}`));
  }
  const itemPages: number[] = [];
  for (let n = 1; n <= 20; n++) itemPages.push(await page(`/app/products/${product.id}/items/${n * 6}`));
  const deployOne: number[] = [];
  for (let id = 1; id <= 20; id++) deployOne.push(await page(`/app/products/${product.id}/deploys/${id * 6}`));
  const healthDuringPages = await stopPolling();

  const stats = (ms: number[]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
    return `n=${ms.length} min ${sorted[0].toFixed(1)} median ${at(0.5)} max ${sorted.at(-1)!.toFixed(1)} ms`;
  };
  console.log(`writes (item create, deploy) with ${NOTES_BYTES}-byte hostile Markdown: ${stats(writes)}`);
  console.log(`deploys pages (20 deploys each, all ${COUNT / 20} pages, twice): ${stats(deployPages)}`);
  console.log(`item pages: ${stats(itemPages)}`);
  console.log(`single deploy pages: ${stats(deployOne)}`);
  console.log(
    `/health polled alongside: longest answer ${healthDuringWrites.toFixed(1)} ms during the writes, ` +
      `${healthDuringPages.toFixed(1)} ms during the pages`,
  );
} finally {
  clearTimeout(whole);
  await db.destroy();
  await stopProcess(server.child);
}
