import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { headersOf, percentile, type LoadOptions, type LoadResult, type Scenario } from './load.js';

/** Paths an h2load run cycles through, drawn from the scenario up front. */
const DRAWN = 4000;

function h2load(args: string[], seconds: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('h2load', args, { timeout: (seconds + 30) * 1000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        return reject(new Error('h2load is not installed: apt-get install -y nghttp2-client (or BENCH_LOAD=wrk)'));
      }
      if (err) return reject(new Error(`h2load failed: ${err.message} ${stderr.slice(0, 500)} ${stdout.slice(-500)}`));
      resolve(stdout);
    });
  });
}

/**
 * Drives a GET `scenario` with h2load (nghttp2's load generator, C, as light as wrk here) over
 * HTTP/1.1 at `connections` keep-alive connections, warming up and measuring on the same
 * connections in one run: its warm-up time opens them and is left out. (A wrk run has to open new
 * connections for the measured window, and the first request of each of 50 new connections can
 * wait hundreds of milliseconds, on a bare Fastify server too: that alone was the top 1%.)
 * Latency and status come from h2load's per-request log, for the requests started in the
 * measured window.
 */
export async function runH2load(scenario: Scenario, options: LoadOptions): Promise<LoadResult> {
  if (scenario.method !== 'GET')
    throw new Error(`${scenario.name}: h2load drives GET scenarios only (writes need a unique body per request)`);
  const headers = headersOf(scenario, options);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-h2load-'));
  const uris = path.join(dir, 'uris');
  const logFile = path.join(dir, 'requests.log');
  const origin = `http://127.0.0.1:${options.port}`;
  fs.writeFileSync(uris, `${Array.from({ length: DRAWN }, () => `${origin}${scenario.next().path}`).join('\n')}\n`);
  const args = [
    '--h1',
    '-c',
    String(options.connections),
    '-D',
    String(options.seconds),
    ...(options.warmupSeconds > 0 ? [`--warm-up-time=${options.warmupSeconds}`] : []),
    // A connection that hears nothing for 10 s is given up (a timeout), as wrk's --timeout.
    '-N',
    '10',
    '-i',
    uris,
    `--log-file=${logFile}`,
    ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
  ];
  try {
    const stdout = await h2load(args, options.warmupSeconds + options.seconds);
    const rows = fs
      .readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t').map(Number));
    // The log holds the warm-up's requests too (when it does): only those started once the
    // measured window had begun count.
    const firstStart = rows.reduce((m, r) => Math.min(m, r[0]), Infinity);
    const lastStart = rows.reduce((m, r) => Math.max(m, r[0]), -Infinity);
    const measuredFrom = Math.max(lastStart - options.seconds * 1e6, firstStart);
    const measured = rows.filter((r) => r[0] >= measuredFrom);
    const ok = measured.filter((r) => r[1] >= 200 && r[1] < 300);
    const latencies = Float64Array.from(ok.map((r) => r[2] / 1000)).sort();
    const statuses: Record<string, number> = {};
    for (const r of rows) statuses[r[1]] = (statuses[r[1]] ?? 0) + 1;
    const failed = /requests: .*?(\d+) failed, (\d+) errored, (\d+) timeout/.exec(stdout);
    return {
      name: scenario.name,
      kind: scenario.kind,
      rps: ok.length / options.seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.length ? latencies[latencies.length - 1] : NaN,
      ok: ok.length,
      non2xx: rows.filter((r) => !(r[1] >= 200 && r[1] < 300)).length,
      errors: failed ? Number(failed[2]) + Number(failed[3]) : 0,
      statuses,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
