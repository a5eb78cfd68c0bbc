import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { headersOf, type LoadOptions, type LoadResult, type RateResult, type Scenario } from './load.js';

/**
 * Requests a wrk run cycles through, drawn from the scenario up front (wrk's Lua cannot call
 * back into the harness). `{n}` in a path or body becomes a number unique to each request (from
 * the second its wrk started, its thread and a count), so a write scenario never repeats itself,
 * not even in the measured run, which cycles through the same drawn requests as its warm-up.
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

/** The requests of a run: drawn up front and cycled through, or drawn per request by the scenario's Lua. */
function requestSource(scenario: Scenario): string {
  if (scenario.lua !== undefined) return scenario.lua;
  const drawn = Array.from({ length: DRAWN }, () => scenario.next());
  for (const r of drawn) {
    if (/[^\x20-\x7e]/.test(r.path + (r.body ?? '')))
      throw new Error(`${scenario.name}: wrk requests must be printable ASCII`);
  }
  return `local paths = {
${drawn.map((r) => `  ${lua(r.path)},`).join('\n')}
}
local bodies = {
${drawn.map((r) => `  ${r.body === undefined ? 'nil' : lua(r.body)},`).join('\n')}
}
local i = 0
function next_request()
  i = i % #paths + 1
  return paths[i], bodies[i]
end
`;
}

/**
 * With the scenario's own Lua, every answer is looked at: a status outside 2xx is counted (wrk
 * itself counts only 4xx and 5xx), and so is a JSON array, i.e. a list, without its item count.
 * (Looking makes wrk hand each answer's headers and body to Lua, which costs it a little.)
 */
const checks = `
bad_status = 0
unlisted = 0
response = function(status, headers, body)
  if status < 200 or status > 299 then
    bad_status = bad_status + 1
  elseif string.byte(body, 1) == 91 and headers["X-Sprintly-Item-Count"] == nil
      and headers["x-sprintly-item-count"] == nil then
    unlisted = unlisted + 1
  end
end
`;

function script(scenario: Scenario, headers: Record<string, string>, rate?: number): string {
  const headerLines = Object.entries(headers)
    .map(([k, v]) => `  [${lua(k)}] = ${lua(v)},`)
    .join('\n');
  return `-- Written by bench/wrk.ts for one scenario: ${scenario.name.replace(/\n/g, ' ')}
local method = ${lua(scenario.method)}
local headers = {
${headerLines}
}
${requestSource(scenario)}
${rate === undefined ? 'late, latest = 0, 0' : paced(rate)}
${scenario.lua === undefined ? 'bad_status, unlisted = nil, 0' : checks}
local n = 0
local started = os.time() % 100000
local thread_id = 0
local counter = 0
local threads = {}

setup = function(thread)
  counter = counter + 1
  thread:set("thread_id", counter)
  table.insert(threads, thread)
end

request = function()
  n = n + 1
  local unique = string.format("%d", started * 100000000 + thread_id * 10000000 + n)
  local p, b = next_request()
  p = string.gsub(p, "{n}", unique)
  if b ~= nil then b = string.gsub(b, "{n}", unique) end
  return wrk.format(method, p, headers, b)
end

done = function(summary, latency, requests)
  local e = summary.errors
  local all_late, all_latest, all_unlisted = 0, 0, 0
  -- Checked answers: every status outside 2xx; otherwise wrk's own count (4xx and 5xx).
  local all_bad = bad_status == nil and e.status or 0
  for _, thread in ipairs(threads) do
    all_late = all_late + (thread:get("late") or 0)
    all_latest = math.max(all_latest, thread:get("latest") or 0)
    if bad_status ~= nil then all_bad = all_bad + thread:get("bad_status") end
    all_unlisted = all_unlisted + (thread:get("unlisted") or 0)
  end
  io.stderr:write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p99_us":%d,"max_us":%d,"late":%d,"latest_ms":%f,"unlisted":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, all_bad, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, all_late, all_latest, all_unlisted))
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
  /** Lua-driven runs: lists answered without X-Sprintly-Item-Count. */
  unlisted: number;
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

/** A scratch folder for the scripts of a run, removed afterwards. */
async function inScratch<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-wrk-'));
  try {
    return await run(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** wrk's arguments (all but the duration and URL) for one scenario, its script written into `dir`. */
function job(dir: string, scenario: Scenario, options: LoadOptions, connections: number, rate?: number): string[] {
  const file = path.join(dir, `scenario-${fs.readdirSync(dir).length}.lua`);
  fs.writeFileSync(file, script(scenario, headersOf(scenario, options), rate));
  return ['-t', '1', '-c', String(connections), '--timeout', '10s', '-s', file];
}

interface Phases {
  warm: (WrkSummary | undefined)[];
  run: WrkSummary[];
}

/**
 * One wrk process per job, side by side: their warm-ups together, then their measured runs
 * together on new connections, so that every job's measured window is the others' too.
 */
async function phases(jobs: string[][], options: LoadOptions): Promise<Phases> {
  const url = `http://127.0.0.1:${options.port}`;
  const all = (seconds: number) => Promise.all(jobs.map((args) => wrk([...args, '-d', `${seconds}s`, url], seconds)));
  const warm = options.warmupSeconds > 0 ? await all(options.warmupSeconds) : jobs.map(() => undefined);
  return { warm, run: await all(options.seconds) };
}

const errorsOf = (s?: WrkSummary) => (s ? s.connect + s.read + s.write + s.timeout : 0);

/**
 * A run at saturation. wrk counts as errors the responses of status 400 and above (a Lua-driven
 * scenario every status outside 2xx); the harness's scenarios all expect 2xx, so requests minus
 * those are the successful ones. Latencies are of every response.
 */
function saturated(scenario: Scenario, warm: WrkSummary | undefined, run: WrkSummary): LoadResult {
  const ok = run.requests - run.status;
  return {
    name: scenario.name,
    kind: scenario.kind,
    generator: 'wrk',
    rps: ok / (run.duration_us / 1e6),
    p50: run.p50_us / 1000,
    p99: run.p99_us / 1000,
    max: run.max_us / 1000,
    ok,
    non2xx: run.status + (warm?.status ?? 0),
    errors: errorsOf(run) + errorsOf(warm),
    statuses: {},
    ...(scenario.lua === undefined ? {} : { unlisted: run.unlisted + (warm?.unlisted ?? 0) }),
  };
}

/** A run at a fixed offered rate. */
function atRate(scenario: Scenario, rate: number, warm: WrkSummary | undefined, run: WrkSummary): RateResult {
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
    errors: errorsOf(run) + errorsOf(warm),
  };
}

/**
 * Drives `scenario` with wrk (C, one thread per core it is given, far lighter than autocannon) at
 * `connections` keep-alive connections: a warm-up run, then the measured run on new connections.
 * The measured run's latencies include each new connection's first request (wrk cannot leave out
 * a warm-up window), which shows in p99 and max.
 */
export function runWrk(scenario: Scenario, options: LoadOptions): Promise<LoadResult> {
  return inScratch(async (dir) => {
    const { warm, run } = await phases([job(dir, scenario, options, options.connections)], options);
    return saturated(scenario, warm[0], run[0]);
  });
}

/**
 * Offers `scenario` at a constant `rate` (requests per second, spread evenly) on `connections`
 * keep-alive connections: a warm-up run, then the measured one. Latency is wrk's, from each
 * request's sending; `late` says how many requests went after their slot (every connection was
 * busy) and `latestMs` how late the latest was, which a p99 measured from sending would hide.
 */
export function runWrkAtRate(scenario: Scenario, options: LoadOptions, rate: number): Promise<RateResult> {
  return inScratch(async (dir) => {
    const { warm, run } = await phases([job(dir, scenario, options, options.connections, rate)], options);
    return atRate(scenario, rate, warm[0], run[0]);
  });
}

/** A scenario offered at a fixed rate beside another at saturation, on connections of its own. */
export interface Beside {
  scenario: Scenario;
  rate: number;
  connections: number;
}

/**
 * `reads` at saturation (as runWrk) with `writer`, when given, offered at its rate (as
 * runWrkAtRate) over the same warm-up and measured windows: each is its own wrk process.
 */
export function runWrkBeside(
  reads: Scenario,
  writer: Beside | undefined,
  options: LoadOptions,
): Promise<{ reads: LoadResult; writes?: RateResult }> {
  return inScratch(async (dir) => {
    const jobs = [job(dir, reads, options, options.connections)];
    if (writer) jobs.push(job(dir, writer.scenario, options, writer.connections, writer.rate));
    const { warm, run } = await phases(jobs, options);
    const result = saturated(reads, warm[0], run[0]);
    return writer
      ? { reads: result, writes: atRate(writer.scenario, writer.rate, warm[1], run[1]) }
      : { reads: result };
  });
}
