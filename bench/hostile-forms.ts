/**
 * Hostile bodies against the built server on 127.0.0.1: ten 1 MB bodies of 110,000 keys from one
 * address, sent at once, to each of the routes below; prints how long each took to be answered
 * (and with what status), and the latency of `GET /health` polled every 10 ms alongside by another
 * client; one more is sent first, unmeasured, to warm the server up. Run after `npm run build`:
 *   node --import tsx bench/hostile-forms.ts
 * Bounded: each request has a 60 s deadline, and the whole run stops after 5 minutes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { runCli, startServer, stopProcess } from '../test/processes.js';

const KEYS = 110_000;
const AT_ONCE = 10;

const form = Array.from({ length: KEYS }, (_, i) => `a${i}=1`).join('&');
// Keys in base 36, so that the JSON too stays under the API's 1 MiB.
const json = `{${Array.from({ length: KEYS }, (_, i) => `"${i.toString(36)}":1`).join(',')}}`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-hostile-'));
const env = { DATA_DIR: dataDir, DATABASE_URL: '' };
const watchdog = setTimeout(() => {
  process.stderr.write('gave up after 5 minutes\n');
  process.exit(1);
}, 300_000);

const cli = async (...args: string[]): Promise<string> => {
  const run = await runCli(args, { env, cwd: dataDir, timeoutMs: 60_000 });
  if (run.code !== 0) throw new Error(`shiplog ${args.join(' ')}: ${run.stderr}`);
  return run.stdout.trim();
};
const key = await cli('user', 'add', 'owner@example.com', '--first', 'O', '--last', 'Wner');
const product = await cli('product', 'add', 'Bench', '--owner', 'owner@example.com');
const auth = `Basic ${Buffer.from(`owner@example.com:${key}`).toString('base64')}`;

const server = await startServer({
  env: { ...env, LOG_LEVEL: 'error', PUBLIC_URL: 'http://shiplog.test', MAIL_DOMAIN: 'items.shiplog.test' },
  dataDir,
  cwd: dataDir,
  stdio: ['ignore', 'ignore', 'pipe'],
});
const base = `http://127.0.0.1:${server.port}`;

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (n: number): string => `${n.toFixed(1)} ms`;

interface Attack {
  name: string;
  url: string;
  type: string;
  body: Buffer;
  headers?: Record<string, string>;
}

const attacks: Attack[] = [
  {
    name: 'form to /app/sign-in, no credentials',
    url: '/app/sign-in',
    type: 'application/x-www-form-urlencoded',
    body: Buffer.from(form),
  },
  {
    name: 'form to /invitations/<token>, no credentials',
    url: `/invitations/${'x'.repeat(40)}`,
    type: 'application/x-www-form-urlencoded',
    body: Buffer.from(form),
  },
  {
    name: 'form to items.json, signed in',
    url: `/api/products/${product}/items.json`,
    type: 'application/x-www-form-urlencoded',
    body: Buffer.from(form),
    headers: { authorization: auth },
  },
  {
    name: 'JSON to items.json, signed in',
    url: `/api/products/${product}/items.json`,
    type: 'application/json',
    body: Buffer.from(json),
    headers: { authorization: auth },
  },
];

const send = async (attack: Attack) => {
  const started = performance.now();
  const res = await fetch(`${base}${attack.url}`, {
    method: 'POST',
    headers: { 'content-type': attack.type, accept: 'application/json', ...attack.headers },
    body: new Uint8Array(attack.body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { ms: performance.now() - started, status: res.status, message: text.slice(0, 100) };
};

/** CPU time the server process has used, in ms (Linux: utime + stime of /proc/PID/stat, in clock ticks of 10 ms). */
function serverCpuMs(): number {
  const stat = fs.readFileSync(`/proc/${server.child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function run(attack: Attack): Promise<void> {
  // One unmeasured first, so that what is measured is a warm server's answer.
  await send(attack);
  // /health from another client, every 10 ms, while the ten requests are in flight.
  const health: number[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const started = performance.now();
      await fetch(`${base}/health`, { signal: AbortSignal.timeout(60_000) }).then((r) => r.arrayBuffer());
      health.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const cpuBefore = serverCpuMs();
  const results = await Promise.all(Array.from({ length: AT_ONCE }, () => send(attack)));
  const cpu = serverCpuMs() - cpuBefore;
  await new Promise((resolve) => setTimeout(resolve, 100));
  polling = false;
  await poller;
  const times = results.map((r) => r.ms).sort((a, b) => a - b);
  const statuses = [...new Set(results.map((r) => `${r.status} ${r.message}`))];
  const h = [...health].sort((a, b) => a - b);
  process.stdout.write(
    [
      `${attack.name} (${(attack.body.length / 1e6).toFixed(2)} MB, ${KEYS} keys, ${AT_ONCE} at once)`,
      `  answers:  ${statuses.join(' | ')}`,
      `  each:     min ${ms(times[0])}, median ${ms(quantile(times, 0.5))}, max ${ms(times[times.length - 1])}`,
      `  server:   ${cpu} ms of CPU for the ten (and the /health polls meanwhile), to 10 ms`,
      `  /health:  ${h.length} polls, median ${ms(quantile(h, 0.5))}, ` +
        `p99 ${ms(quantile(h, 0.99))}, max ${ms(h[h.length - 1])}`,
      '',
    ].join('\n'),
  );
}

try {
  process.stdout.write(
    `Node ${process.version}, ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n\n`,
  );
  for (const attack of attacks) await run(attack);
} finally {
  await stopProcess(server.child);
  fs.rmSync(dataDir, { recursive: true, force: true });
  clearTimeout(watchdog);
}
