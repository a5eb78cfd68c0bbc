import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { headersOf, type LoadOptions, type LoadResult, type RateResult, type Scenario } from './load.js';

/**
 * Requests a wrk run cycles through, drawn from the scenario up front (wrk's Lua cannot call
 * back into the harness). `{n}` in a path or body becomes a number unique to each request, so a
 * write scenario never repeats itself.
 */
const DRAWN = 4000;

// A JSON string literal is a valid Lua string here (no \u escapes in our ASCII requests).
const lua = (s: string): string => JSON.stringify(s);

/**
 * A constant offered rate for the thread: each request is given the next slot of a schedule
 * `1000 / rate` ms apart (the clock through LuaJIT's FFI, which wrk's Lua lacks otherwise), and
 * waits until it. A request whose slot has passed (every connection was busy) goes at once and
 * counts as late; how late the latest one was is reported, since wrk times a request from when it
 * is sent, not from when it was due.
 */
const paced = (rate: number): string => `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } shiplog_timespec;
int clock_gettime(int clk_id, shiplog_timespec *tp);
]]
local clock = ffi.new("shiplog_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, clock)
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end
local interval = 1000 / ${rate}
local due = nil
-- Globals, so that done() can read each thread's with thread:get.
late = 0
latest = 0
delay = function()
  local t = now_ms()
  if due == nil then due = t end
  due = due + interval
  local wait = due - t
  if wait >= 0 then return wait end
  late = late + 1
  if -wait > latest then latest = -wait end
  return 0
end
`;

function script(scenario: Scenario, headers: Record<string, string>, rate?: number): string {
  const drawn = Array.from({ length: DRAWN }, () => scenario.next());
  for (const r of drawn) {
    if (/[^\x20-\x7e]/.test(r.path + (r.body ?? '')))
      throw new Error(`${scenario.name}: wrk requests must be printable ASCII`);
  }
  const headerLines = Object.entries(headers)
    .map(([k, v]) => `  [${lua(k)}] = ${lua(v)},`)
    .join('\n');
  return `-- Written by bench/wrk.ts for one scenario: ${scenario.name.replace(/\n/g, ' ')}
local method = ${lua(scenario.method)}
local headers = {
${headerLines}
}
local paths = {
${drawn.map((r) => `  ${lua(r.path)},`).join('\n')}
}
local bodies = {
${drawn.map((r) => `  ${r.body === undefined ? 'nil' : lua(r.body)},`).join('\n')}
}
${rate === undefined ? 'late, latest = 0, 0' : paced(rate)}
local i = 0
local n = 0
local thread_id = 0
local counter = 0
local threads = {}

setup = function(thread)
  counter = counter + 1
  thread:set("thread_id", counter)
  table.insert(threads, thread)
end

request = function()
  i = i % #paths + 1
  n = n + 1
  local unique = tostring(thread_id * 100000000 + n)
  local p = string.gsub(paths[i], "{n}", unique)
  local b = bodies[i]
  if b ~= nil then b = string.gsub(b, "{n}", unique) end
  return wrk.format(method, p, headers, b)
end

done = function(summary, latency, requests)
  local e = summary.errors
  local all_late, all_latest = 0, 0
  for _, thread in ipairs(threads) do
    all_late = all_late + (thread:get("late") or 0)
    all_latest = math.max(all_latest, thread:get("latest") or 0)
  end
  io.stderr:write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p99_us":%d,"max_us":%d,"late":%d,"latest_ms":%f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, all_late, all_latest))
end
`;
}

interface WrkSummary {
  requests: number;
  duration_us: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50_us: number;
  p99_us: number;
  max_us: number;
  /** Paced runs: requests sent after their slot, and how late the latest was. */
  late: number;
  latest_ms: number;
}

function wrk(args: string[], seconds: number): Promise<WrkSummary> {
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { timeout: (seconds + 30) * 1000, maxBuffer: 16 << 20 }, (err, _stdout, stderr) => {
      const line = /WRK_RESULT (\{.*\})/.exec(stderr)?.[1];
      if (line) return resolve(JSON.parse(line) as WrkSummary);
      if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        return reject(new Error('wrk is not installed: apt-get install -y wrk (or BENCH_LOAD=autocannon)'));
      reject(new Error(`wrk failed: ${err?.message ?? ''} ${stderr.slice(0, 500)}`));
    });
  });
}

/**
 * Drives `scenario` with wrk (C, one thread per core it is given, far lighter than autocannon) at
 * `connections` keep-alive connections: a warm-up run, then the measured run on new connections.
 * The measured run's latencies include each new connection's first request (wrk cannot leave out
 * a warm-up window), which shows in p99 and max. wrk counts as errors the responses of status 400
 * and above; the harness's scenarios all expect 2xx, so requests minus those are the successful
 * ones. Latencies are of every response.
 */
export async function runWrk(scenario: Scenario, options: LoadOptions): Promise<LoadResult> {
  const headers = headersOf(scenario, options);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-wrk-'));
  const file = path.join(dir, 'scenario.lua');
  fs.writeFileSync(file, script(scenario, headers));
  const base = ['-t', '1', '-c', String(options.connections), '--timeout', '10s', '-s', file];
  const url = `http://127.0.0.1:${options.port}`;
  try {
    const warm =
      options.warmupSeconds > 0
        ? await wrk([...base, '-d', `${options.warmupSeconds}s`, url], options.warmupSeconds)
        : undefined;
    const run = await wrk([...base, '-d', `${options.seconds}s`, url], options.seconds);
    const ok = run.requests - run.status;
    const errors = (s?: WrkSummary) => (s ? s.connect + s.read + s.write + s.timeout : 0);
    return {
      name: scenario.name,
      kind: scenario.kind,
      rps: ok / (run.duration_us / 1e6),
      p50: run.p50_us / 1000,
      p99: run.p99_us / 1000,
      max: run.max_us / 1000,
      ok,
      non2xx: run.status + (warm?.status ?? 0),
      errors: errors(run) + errors(warm),
      statuses: {},
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Offers `scenario` at a constant `rate` (requests per second, spread evenly) on `connections`
 * keep-alive connections: a warm-up run, then the measured one. Latency is wrk's, from each
 * request's sending; `late` says how many requests went after their slot (every connection was
 * busy) and `latestMs` how late the latest was, which a p99 measured from sending would hide.
 */
export async function runWrkAtRate(scenario: Scenario, options: LoadOptions, rate: number): Promise<RateResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-wrk-'));
  const file = path.join(dir, 'scenario.lua');
  fs.writeFileSync(file, script(scenario, headersOf(scenario, options), rate));
  const base = ['-t', '1', '-c', String(options.connections), '--timeout', '10s', '-s', file];
  const url = `http://127.0.0.1:${options.port}`;
  try {
    const warm =
      options.warmupSeconds > 0
        ? await wrk([...base, '-d', `${options.warmupSeconds}s`, url], options.warmupSeconds)
        : undefined;
    const run = await wrk([...base, '-d', `${options.seconds}s`, url], options.seconds);
    const errors = (s?: WrkSummary) => (s ? s.connect + s.read + s.write + s.timeout : 0);
    return {
      name: scenario.name,
      kind: scenario.kind,
      offered: rate,
      rps: (run.requests - run.status) / (run.duration_us / 1e6),
      p50: run.p50_us / 1000,
      p99: run.p99_us / 1000,
      max: run.max_us / 1000,
      late: run.late,
      latestMs: run.latest_ms,
      non2xx: run.status + (warm?.status ?? 0),
      errors: errors(run) + errors(warm),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
