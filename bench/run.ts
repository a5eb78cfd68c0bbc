/**
 * `npm run bench`: builds or reuses datasets of 10k and 1M items, runs the built server and a
 * minimal baseline against them under load, and reports req/s, latency, memory, start-up and mail
 * delivery against the issue's targets (stdout and BENCHMARKS.md). DATABASE_URL runs the service
 * on PostgreSQL instead. See loadBenchConfig for the BENCH_* settings.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import SQLite from 'better-sqlite3';
import {
  CLI_SCRIPT,
  commandLine,
  DATA_ROOT,
  loadBenchConfig,
  SERVER_SCRIPT,
  sizeLabel,
  type BenchConfig,
  type LoadGenerator,
} from './config.js';
import { runLoad, type LoadOptions, type LoadResult, type RateResult, type Scenario } from './load.js';
import { runWrk, runWrkAtRate, runWrkBeside } from './wrk.js';
import { runH2load } from './h2load.js';
import {
  freePort,
  peakRssMb,
  request,
  rssMb,
  spawnNode,
  spawnServer,
  stopAllChildren,
  stopChild,
  stopChildrenOnExit,
  waitForOk,
  waitForPort,
  type Child,
} from './processes.js';
import {
  evaluateTargets,
  renderSection,
  writeReport,
  type Backend,
  type MailResult,
  type MixResult,
  type RunReport,
  type SizeReport,
} from './report.js';
import {
  deployScenario,
  descriptionWriter,
  itemWriteScenarios,
  listScenarios,
  mixRequests,
  pageScenarios,
  readMixScenario,
  readScenarios,
  searchScenarios,
  typingPaths,
  TYPED,
  type ScenarioData,
} from './scenarios.js';
import { ensureSqliteDataset, postgresSeededWith, seedPostgres, type DatasetInfo } from './seed.js';
import { postgresStore, sqliteStore, type BenchStore } from './store.js';
import { cleanEnv } from '../test/processes.js';
import { openDatabase } from '../src/db/connection.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Per-run copies of datasets (up to a gigabyte each): removed even when the run is interrupted. */
const scratchDirs = new Set<string>();
process.once('exit', () => {
  for (const dir of scratchDirs) fs.rmSync(dir, { recursive: true, force: true });
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The harness's environment without Shiplog's settings, so a child gets only what is passed. */
const childEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => cleanEnv(extra);

/** Everything one dataset's measurements share. */
interface SizeContext {
  cfg: BenchConfig;
  backend: Backend;
  size: number;
  label: string;
  info: DatasetInfo;
  logDir: string;
  headers: Record<string, string>;
}

function loadOptions(ctx: SizeContext, port: number): LoadOptions {
  return {
    port,
    seconds: ctx.cfg.seconds,
    warmupSeconds: ctx.cfg.warmupSeconds,
    connections: ctx.cfg.connections,
    headers: ctx.headers,
  };
}

const GENERATORS: Record<LoadGenerator, (scenario: Scenario, options: LoadOptions) => Promise<LoadResult>> = {
  h2load: runH2load,
  wrk: runWrk,
  autocannon: runLoad,
};

/** The generator of a scenario: h2load takes GETs of fixed paths only, wrk the writes and random paths then. */
const generatorOf = (load: LoadGenerator, scenario: Scenario): LoadGenerator =>
  load === 'h2load' && (scenario.method !== 'GET' || scenario.random) ? 'wrk' : load;

/**
 * One scenario under the run's generator. Unless that is autocannon, the baseline and the lists
 * are driven by the other two generators too (after it, on the same warm server), and every
 * figure is kept.
 */
async function drive(ctx: SizeContext, scenario: Scenario, options: LoadOptions): Promise<LoadResult> {
  const generator = generatorOf(ctx.cfg.load, scenario);
  const result = { ...(await GENERATORS[generator](scenario, options)), generator };
  if (generator === 'autocannon' || (scenario.kind !== 'list' && scenario.kind !== 'baseline')) return result;
  const others: NonNullable<LoadResult['others']> = [];
  for (const other of (['h2load', 'wrk', 'autocannon'] as const).filter((g) => g !== generator)) {
    const r = await GENERATORS[other](scenario, options);
    others.push({ generator: other, rps: r.rps, p99: r.p99 });
  }
  return { ...result, others };
}

/** A progress line on stderr as each scenario ends, so a long run shows where it is. */
function describe(ctx: SizeContext, r: LoadResult, baseline?: LoadResult): void {
  const ratio =
    baseline && r.kind !== 'write' && r.kind !== 'baseline'
      ? `  ${Math.round((100 * r.rps) / baseline.rps)}% of baseline`
      : '';
  const errors = r.non2xx || r.errors || !r.ok ? `  !! ${r.ok} 2xx, ${r.non2xx} non-2xx, ${r.errors} errors` : '';
  const other = (r.others ?? [])
    .map((o) => `  (${o.generator} ${Math.round(o.rps)} req/s, p99 ${o.p99.toFixed(2)} ms)`)
    .join('');
  log(
    `  [${ctx.label}] ${r.name.padEnd(44)} ${Math.round(r.rps).toString().padStart(6)} req/s  ` +
      `p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms${ratio}${errors}${other}`,
  );
}

/** The baseline in its own process on the dataset's SQLite file, loaded like every scenario. */
async function measureBaseline(ctx: SizeContext, file: string): Promise<LoadResult> {
  const port = await freePort();
  const child = spawnNode(
    ['--import', 'tsx', 'bench/baseline.ts', file, String(port)],
    childEnv(),
    path.join(ctx.logDir, `baseline-${ctx.size}.log`),
  );
  try {
    await waitForOk(child, port, '/items', 30_000, 20);
    const scenario: Scenario = {
      name: 'baseline: GET /items (20 rows, no auth)',
      kind: 'baseline',
      method: 'GET',
      next: () => ({ path: '/items' }),
    };
    const result = await drive(ctx, scenario, { ...loadOptions(ctx, port), headers: {} });
    describe(ctx, result);
    return result;
  } finally {
    await stopChild(child);
  }
}

interface RunningServer {
  child: Child;
  port: number;
}

/** Node's options to profile the measured server with (BENCH_CPU_PROF), none otherwise. */
function profiling(ctx: SizeContext): string[] {
  const dir = ctx.cfg.cpuProfDir;
  if (!dir) return [];
  fs.mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

/**
 * A profiled server writes its profile as it exits, after its SIGTERM: a long run's takes a while
 * to write, so it is given this long before it is killed (which would lose the profile).
 */
const PROFILED_STOP_MS = 120_000;

async function startServer(
  ctx: SizeContext,
  env: NodeJS.ProcessEnv,
  profiled = false,
): Promise<RunningServer & { startedMs: number }> {
  const port = await freePort();
  const spawned = performance.now();
  const child = spawnServer(
    SERVER_SCRIPT,
    { ...env, PORT: String(port) },
    path.join(ctx.logDir, `server-${ctx.backend}-${ctx.size}.log`),
    profiled ? profiling(ctx) : [],
  );
  try {
    const ready = await waitForOk(child, port, '/health', 120_000, 5);
    return { child, port, startedMs: ready - spawned };
  } catch (err) {
    await stopChild(child);
    throw err;
  }
}

/** Stops the measured server, waiting for its CPU profile when it writes one (named with its pid). */
async function stopServer(ctx: SizeContext, server: RunningServer | undefined): Promise<void> {
  const dir = ctx.cfg.cpuProfDir;
  if (!server || !dir) return stopChild(server?.child);
  await stopChild(server.child, PROFILED_STOP_MS);
  const written = fs.readdirSync(dir).filter((f) => f.includes(`.${server.child.pid}.`) && f.endsWith('.cpuprofile'));
  log(
    written.length
      ? `  [${ctx.label}] the server's CPU profile: ${written.map((f) => path.join(dir, f)).join(', ')}`
      : `  [${ctx.label}] !! the server (pid ${server.child.pid}) wrote no CPU profile to ${dir}`,
  );
}

/** Spawn to first successful GET /health, three times on the same database; each start stopped. */
async function measureStartup(ctx: SizeContext, env: NodeJS.ProcessEnv): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const server = await startServer(ctx, env);
    await stopChild(server.child);
    times.push(server.startedMs);
  }
  log(`  [${ctx.label}] start-up: ${times.map((t) => Math.round(t)).join(', ')} ms`);
  return times;
}

/** One request per list scenario: it must answer 200 with X-Sprintly-Item-Count. */
async function itemCountOf(server: RunningServer, ctx: SizeContext, scenario: Scenario): Promise<string | null> {
  const res = await request(server.port, scenario.next().path, { headers: ctx.headers });
  if (res.status !== 200)
    throw new Error(`${scenario.name}: check request answered ${res.status}: ${res.body.slice(0, 300)}`);
  const count = res.headers['x-sprintly-item-count'];
  return typeof count === 'string' ? count : null;
}

interface Health {
  mail: { pending: number; sending: number; sent: number; failed: number };
}

async function health(port: number): Promise<Health> {
  const res = await request(port, '/health');
  if (res.status !== 200) throw new Error(`/health answered ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as Health;
}

async function waitForIdleOutbox(port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { mail } = await health(port);
    if (mail.pending + mail.sending === 0) return true;
    await sleep(100);
  }
  return false;
}

/** Where the SMTP sink of a size logs, a line `message BYTES` per message it accepts. */
const sinkLog = (ctx: SizeContext): string => path.join(ctx.logDir, `smtp-sink-${ctx.size}.log`);

/** Sizes of every message the sink has logged so far, in order. */
function sinkMessageSizes(ctx: SizeContext): number[] {
  const lines = fs.existsSync(sinkLog(ctx)) ? fs.readFileSync(sinkLog(ctx), 'utf8').split('\n') : [];
  return lines.flatMap((line) => {
    const match = /^message (\d+)$/.exec(line);
    return match ? [Number(match[1])] : [];
  });
}

/** Items in the deploy whose messages the mail measurement copies: a typical deploy email. */
const MAIL_ITEMS = 10;

/**
 * Delivery rate from the outbox to the SMTP sink: one deploy through the API queues real
 * messages; once they are out, `count` copies of them are queued in one transaction and the
 * outbox counts are watched until every copy is sent (or failed).
 */
async function measureMail(ctx: SizeContext, server: RunningServer, store: BenchStore): Promise<MailResult> {
  const count = ctx.cfg.mailMessages;
  if (!(await waitForIdleOutbox(server.port, 120_000)))
    throw new Error('the outbox did not empty before the mail measurement');
  const body = new URLSearchParams({
    environment: 'mail-bench',
    numbers: ctx.info.deployGroups[0].slice(0, MAIL_ITEMS).join(','),
  }).toString();
  const res = await request(server.port, `/api/products/${ctx.info.productId}/deploys.json`, {
    method: 'POST',
    headers: { ...ctx.headers, 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  if (res.status !== 200) throw new Error(`priming deploy answered ${res.status}: ${res.body.slice(0, 300)}`);
  const deployId = (JSON.parse(res.body) as { id: number }).id;
  if (!(await waitForIdleOutbox(server.port, 60_000)))
    throw new Error("the priming deploy's messages were not delivered within 60 s");

  const before = (await health(server.port)).mail;
  const sizesBefore = sinkMessageSizes(ctx).length;
  await store.queueCopies(deployId, count);
  const committed = performance.now();
  const deadline = committed + Math.max(60_000, count * 20);
  let first: { at: number; delivered: number } | undefined;
  let delivered = 0;
  let failed = 0;
  let last = committed;
  while (performance.now() < deadline) {
    const { mail } = await health(server.port);
    delivered = mail.sent - before.sent;
    failed = mail.failed - before.failed;
    last = performance.now();
    if (!first && delivered > 0) first = { at: last, delivered };
    if (delivered + failed >= count) break;
    await sleep(50);
  }
  const sizes = sinkMessageSizes(ctx).slice(sizesBefore);
  const messageBytes = sizes.length ? sizes.reduce((a, b) => a + b, 0) / sizes.length : NaN;
  const seconds = (last - committed) / 1000;
  const steadySeconds = first ? (last - first.at) / 1000 : NaN;
  const result: MailResult = {
    queued: count,
    itemsPerMessage: MAIL_ITEMS,
    messageBytes,
    delivered,
    failed,
    seconds,
    rate: delivered / seconds,
    steadyRate: first && steadySeconds > 0 ? (delivered - first.delivered) / steadySeconds : NaN,
    complete: delivered + failed >= count,
  };
  log(
    `  [${ctx.label}] mail: ${delivered}/${count} delivered in ${seconds.toFixed(2)} s: ` +
      `${Math.round(result.rate)} messages/s`,
  );
  return result;
}

/** Warms up and measures one scenario against the server, noting its memory afterwards. */
async function measure(
  ctx: SizeContext,
  server: RunningServer,
  scenario: Scenario,
  baseline?: LoadResult,
): Promise<LoadResult> {
  const itemCount = scenario.kind === 'list' ? await itemCountOf(server, ctx, scenario) : undefined;
  const result = {
    ...(await drive(ctx, scenario, loadOptions(ctx, server.port))),
    itemCount,
    rssMb: rssMb(server.child.pid),
  };
  describe(ctx, result, baseline);
  return result;
}

/**
 * A web session of the caller, as a person gets one: the operator's one-time sign-in link
 * (`shiplog user login-link`), then the link's button pressed. Returns the Cookie header to send.
 */
async function signInToPages(ctx: SizeContext, server: RunningServer, env: NodeJS.ProcessEnv): Promise<string> {
  const link = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI_SCRIPT, 'user', 'login-link', ctx.info.caller.email],
      { env },
      (err, stdout, stderr) =>
        err ? reject(new Error(`shiplog user login-link failed: ${stderr || err.message}`)) : resolve(stdout.trim()),
    );
  });
  const res = await request(server.port, new URL(link).pathname, { method: 'POST' });
  const cookies = res.headers['set-cookie'];
  const session = (Array.isArray(cookies) ? cookies : [cookies ?? '']).map((c) => c.split(';')[0]).filter(Boolean);
  if (res.status !== 303 || !session.length)
    throw new Error(`signing in to the pages answered ${res.status}: ${res.body.slice(0, 300)}`);
  return session.join('; ');
}

/** The scenarios BENCH_SCENARIOS names (all when unset). */
const chosen = (ctx: SizeContext, scenarios: Scenario[]): Scenario[] =>
  ctx.cfg.only ? scenarios.filter((s) => ctx.cfg.only!.some((part) => s.name.includes(part))) : scenarios;

/** The rate the fixed-rate runs offer reads and creates at: 40% of the baseline's saturated req/s. */
const steadyRate = (baseline: LoadResult): number => Math.max(1, Math.round(0.4 * baseline.rps));
/** Resorts and deploys are offered at the rates their targets name. */
const RESORT_RATE = 300;
const DEPLOY_RATE = 20;

const TYPING = `search: typing "${TYPED}" letter by letter`;

/**
 * Typing into the search box: one request per letter, each sent when the one before answered, as
 * a page that waits for each answer would; the whole word's time, 20 times (after 3 unmeasured,
 * the first of which, before any of its queries was kept, is shown on its own).
 */
async function measureTyping(ctx: SizeContext, server: RunningServer): Promise<void> {
  const totals: number[] = [];
  let first = 0;
  for (let round = 0; round < 23; round++) {
    const started = performance.now();
    for (const path of typingPaths()) {
      const res = await request(server.port, path, { headers: ctx.headers });
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    }
    if (round === 0) first = performance.now() - started;
    if (round >= 3) totals.push(performance.now() - started);
  }
  totals.sort((a, b) => a - b);
  const at = (q: number) => Math.round(totals[Math.min(totals.length - 1, Math.floor(q * totals.length))]);
  log(
    `  [${ctx.label}] ${TYPING}: ${TYPED.length} requests in ${at(0.5)} ms (median), ${at(1)} ms at worst; ` +
      `the first time ${Math.round(first)} ms`,
  );
}

/** The size on disk of the search index's tables in a SQLite file (FTS5 keeps them as shadow tables). */
function searchIndexSize(ctx: SizeContext, file: string): void {
  const db = new SQLite(file, { readonly: true });
  try {
    const rows = db
      .prepare(`select name, sum(pgsize) as bytes from dbstat where name like 'item_search%' group by name`)
      .all() as { name: string; bytes: number }[];
    const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
    const total = rows.reduce((sum, r) => sum + r.bytes, 0);
    log(
      `  [${ctx.label}] search index on disk: ${mb(total)} (${rows.map((r) => `${r.name} ${mb(r.bytes)}`).join(', ')})`,
    );
  } finally {
    db.close();
  }
}

/** One scenario offered at a fixed rate, with a progress line. */
async function measureAtRate(
  ctx: SizeContext,
  server: RunningServer,
  scenario: Scenario,
  rate: number,
): Promise<RateResult> {
  const r = await runWrkAtRate(scenario, loadOptions(ctx, server.port), rate);
  describeRate(ctx, r);
  return r;
}

/** A progress line for a fixed-rate run. */
function describeRate(ctx: SizeContext, r: RateResult): void {
  const errors = r.non2xx || r.errors ? `  !! ${r.non2xx} non-2xx, ${r.errors} errors` : '';
  log(
    `  [${ctx.label}] at ${r.offered}/s: ${r.name.padEnd(40)} ${Math.round(r.rps).toString().padStart(6)} req/s  ` +
      `p50 ${fmt2(r.p50)} ms  p99 ${fmt2(r.p99)} ms  max ${fmt2(r.max)} ms  ` +
      `${r.late} late (latest ${fmt2(r.latestMs)} ms)${errors}`,
  );
}

/** Description writes offered beside the read mix (none, then these per second), on connections of its own. */
const MIX_WRITES_PER_SECOND = [0, 5, 50];
const MIX_WRITER_CONNECTIONS = 4;

/** Before the mix is measured: one request of each kind it sends answers 200, a list with its count. */
async function checkMix(ctx: SizeContext, server: RunningServer, data: ScenarioData): Promise<void> {
  const requests = mixRequests(data);
  for (const [path, list] of [
    [requests.fetch(), false],
    [requests.list(), true],
    [requests.openWork(), true],
  ] as const) {
    const res = await request(server.port, path, { headers: ctx.headers });
    if (res.status !== 200) throw new Error(`read mix: ${path} answered ${res.status}: ${res.body.slice(0, 300)}`);
    if (list && typeof res.headers['x-sprintly-item-count'] !== 'string')
      throw new Error(`read mix: ${path} answered without X-Sprintly-Item-Count`);
  }
}

/**
 * The read mix at saturation, alone and then beside description writes at each of
 * MIX_WRITES_PER_SECOND, with the memory after each.
 */
async function measureMix(
  ctx: SizeContext,
  server: RunningServer,
  data: ScenarioData,
  baseline: LoadResult,
): Promise<MixResult[]> {
  const reads = readMixScenario(data);
  if (!chosen(ctx, [reads]).length) return [];
  await checkMix(ctx, server, data);
  const mixed: MixResult[] = [];
  for (const rate of MIX_WRITES_PER_SECOND) {
    const writer = rate
      ? { scenario: descriptionWriter(data, rate), rate, connections: MIX_WRITER_CONNECTIONS }
      : undefined;
    const r = await runWrkBeside(reads, writer, loadOptions(ctx, server.port));
    const result: MixResult = { writesPerSecond: rate, ...r, reads: { ...r.reads, rssMb: rssMb(server.child.pid) } };
    log(`  [${ctx.label}] read mix, ${rate ? `${rate} writes/s beside it` : 'nothing writing'}:`);
    describe(ctx, result.reads, baseline);
    if (result.writes) describeRate(ctx, result.writes);
    if (result.reads.unlisted)
      log(`  [${ctx.label}]   !! ${result.reads.unlisted} lists without X-Sprintly-Item-Count`);
    mixed.push(result);
  }
  return mixed;
}
const fmt2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');

/** Description writes a second beside the searches: each moves the product's revision. */
const SEARCH_WRITES_PER_SECOND = 5;

/**
 * The searches at saturation while a team writes: beside description writes at
 * SEARCH_WRITES_PER_SECOND, which end every kept answer and window of matches of the product, so
 * most searches are answered from the index and the items' kept JSON.
 */
async function measureSearchBesideWrites(
  ctx: SizeContext,
  server: RunningServer,
  data: ScenarioData,
  baseline: LoadResult,
): Promise<void> {
  const besides = searchScenarios()
    .filter((s) => s.extraHeaders === undefined)
    .map((s) => ({ ...s, name: `${s.name}, beside ${SEARCH_WRITES_PER_SECOND} writes/s` }));
  for (const reads of chosen(ctx, besides)) {
    const writer = {
      scenario: descriptionWriter(data, SEARCH_WRITES_PER_SECOND),
      rate: SEARCH_WRITES_PER_SECOND,
      connections: MIX_WRITER_CONNECTIONS,
    };
    const r = await runWrkBeside(reads, writer, loadOptions(ctx, server.port));
    log(`  [${ctx.label}] ${reads.name}:`);
    describe(ctx, r.reads, baseline);
    if (r.writes) describeRate(ctx, r.writes);
  }
}

/**
 * Every HTTP scenario against the running server: reads at saturation, then the lists and fetch
 * at a fixed rate, then the read mix beside writers, then writes at saturation and at a fixed
 * rate. The deploy scenario is separate.
 */
async function runScenarios(
  ctx: SizeContext,
  server: RunningServer,
  data: ScenarioData,
  baseline: LoadResult,
  cookie: string,
): Promise<{ results: LoadResult[]; atRate: RateResult[]; mixed: MixResult[] }> {
  // A fresh process compiles its hot paths while it serves; without this the first scenario
  // alone pays for it. Every list and page is loaded for two seconds, unmeasured, before anything counts.
  for (const scenario of chosen(ctx, [...listScenarios(data), ...pageScenarios(data, cookie)])) {
    await runLoad(scenario, { ...loadOptions(ctx, server.port), seconds: 2, warmupSeconds: 0 });
  }
  const results: LoadResult[] = [];
  const atRate: RateResult[] = [];
  for (const scenario of chosen(ctx, [
    ...listScenarios(data),
    ...readScenarios(data),
    ...searchScenarios(),
    ...pageScenarios(data, cookie),
  ])) {
    results.push(await measure(ctx, server, scenario, baseline));
  }
  if (chosen(ctx, [{ ...searchScenarios()[0], name: TYPING }]).length) await measureTyping(ctx, server);
  const steady = steadyRate(baseline);
  const fetch = readScenarios(data).filter((s) => s.name === 'fetch item');
  // Not the list rendered afresh for every request: its saturated rate is below the one offered.
  const steadyLists = listScenarios(data).filter((s) => s.extraHeaders === undefined);
  for (const scenario of chosen(ctx, [...steadyLists, ...fetch]))
    atRate.push(await measureAtRate(ctx, server, scenario, steady));
  // After every read, before the writes: the mix sees the dataset they saw, and writes little itself.
  const mixed = await measureMix(ctx, server, data, baseline);
  await measureSearchBesideWrites(ctx, server, data, baseline);
  const writes = itemWriteScenarios(data);
  for (const scenario of chosen(ctx, writes)) results.push(await measure(ctx, server, scenario, baseline));
  for (const scenario of chosen(
    ctx,
    writes.filter((s) => s.name === 'create item'),
  ))
    atRate.push(await measureAtRate(ctx, server, scenario, steady));
  for (const scenario of chosen(
    ctx,
    writes.filter((s) => s.name.startsWith('resort')),
  ))
    atRate.push(await measureAtRate(ctx, server, scenario, RESORT_RATE));
  return { results, atRate, mixed };
}

async function startSink(ctx: SizeContext): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const child = spawnNode(['--import', 'tsx', 'bench/smtp-sink.ts', String(port)], childEnv(), sinkLog(ctx));
  await waitForPort(child, port);
  return { child, port };
}

/** The dataset the service runs on: a fresh copy of the cached SQLite file, or PostgreSQL reseeded. */
async function prepareDatabase(
  ctx: SizeContext,
  cachedFile: string,
  runDir: string,
): Promise<{ env: Record<string, string>; info?: DatasetInfo }> {
  if (ctx.backend === 'sqlite') {
    const file = path.join(runDir, 'shiplog.db');
    fs.copyFileSync(cachedFile, file);
    // A server's database is already in WAL mode, as its first start left it. Switching the fresh
    // copy here (which flushes the whole copied file to disk) keeps that out of the start-up figures.
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    db.close();
    if (!ctx.cfg.searchIndex) await withoutSearchIndex(file);
    return { env: {} };
  }
  if (ctx.cfg.reusePostgres && (await postgresSeededWith(ctx.cfg.databaseUrl!, ctx.size))) {
    // The generator draws the same dataset on either database: the SQLite file's description holds.
    log(`  [${ctx.label}] PostgreSQL: the dataset an earlier run seeded, reused (BENCH_PG_REUSE)`);
    return { env: { DATABASE_URL: ctx.cfg.databaseUrl! }, info: { ...ctx.info, seedSeconds: 0 } };
  }
  const info = await seedPostgres(ctx.cfg.databaseUrl!, ctx.size);
  log(`  [${ctx.label}] PostgreSQL seeded in ${Math.round(info.seedSeconds)} s`);
  return { env: { DATABASE_URL: ctx.cfg.databaseUrl! }, info };
}

/** Migrates a copy of the dataset and drops the triggers that index each write (BENCH_SEARCH_INDEX=off). */
async function withoutSearchIndex(file: string): Promise<void> {
  const db = await openDatabase({ filename: file, dataDir: path.dirname(file) });
  try {
    const triggers = await sql<{
      name: string;
    }>`select name from sqlite_schema where type = 'trigger' and name like 'item_search_%'`.execute(db);
    for (const { name } of triggers.rows) await sql.raw(`drop trigger ${name}`).execute(db);
    log(`  search index off: ${triggers.rows.length} triggers dropped`);
  } finally {
    await db.destroy();
  }
}

/**
 * The seeded deploys were written without the summary of their items that a deploy keeps when it
 * is recorded; a server fills each one the first time a page shows it, as it does for deploys from
 * before it kept them. Every deploy is listed once, unmeasured, so that the scenarios see what a
 * running service has: summaries for all.
 */
async function fillDeploySummaries(ctx: SizeContext, server: RunningServer): Promise<void> {
  const base = `/api/products/${ctx.info.productId}/deploys.json?limit=100`;
  for (let offset: string | undefined = '0'; offset !== undefined; ) {
    const res = await request(server.port, `${base}&offset=${offset}`, { headers: ctx.headers });
    if (res.status !== 200) throw new Error(`listing deploys to fill their summaries answered ${res.status}`);
    const next = res.headers['x-sprintly-next-offset'];
    offset = typeof next === 'string' ? next : undefined;
  }
}

/** Everything measured on one dataset size; every child it starts is stopped before it returns. */
async function benchSize(cfg: BenchConfig, backend: Backend, size: number): Promise<SizeReport> {
  const label = sizeLabel(size);
  log(`== ${label} items, service on ${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`);
  const dataset = await ensureSqliteDataset(size);
  const logDir = path.join(DATA_ROOT, 'logs');
  const runDir = path.join(DATA_ROOT, `run-${backend}-${size}`);
  fs.mkdirSync(logDir, { recursive: true });
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.mkdirSync(runDir, { recursive: true });
  scratchDirs.add(runDir);
  const caller = dataset.info.caller;
  const ctx: SizeContext = {
    cfg,
    backend,
    size,
    label,
    info: dataset.info,
    logDir,
    headers: { authorization: `Basic ${Buffer.from(`${caller.email}:${caller.apiKey}`).toString('base64')}` },
  };
  let sink: { child: Child; port: number } | undefined;
  let server: RunningServer | undefined;
  let store: BenchStore | undefined;
  try {
    const baseline = await measureBaseline(ctx, dataset.file);
    const prepared = await prepareDatabase(ctx, dataset.file, runDir);
    if (prepared.info) ctx.info = prepared.info;
    sink = await startSink(ctx);
    // One key from one address at full speed is what the rate limits stop; limits no run reaches
    // keep the limiter's cost in the figures.
    const limits = { RATE_LIMIT_PER_KEY: '1000000000', RATE_LIMIT_PER_ADDRESS: '1000000000' };
    const env = childEnv({
      HOST: '127.0.0.1',
      DATA_DIR: runDir,
      LOG_LEVEL: 'warn',
      SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
      // No balancer watches: a server told to stop closes its listener at once.
      DRAIN_DELAY_MS: '0',
      ...limits,
      ...prepared.env,
    });
    const startupMs = await measureStartup(ctx, env);
    if (backend === 'sqlite') searchIndexSize(ctx, path.join(runDir, 'shiplog.db'));
    store = backend === 'sqlite' ? sqliteStore(path.join(runDir, 'shiplog.db')) : postgresStore(cfg.databaseUrl!);
    const data: ScenarioData = {
      info: ctx.info,
      backlog: await store.backlogNumbers(size),
      titled: await store.titledNumbers(size),
    };
    server = await startServer(ctx, env, true);
    await fillDeploySummaries(ctx, server);
    const { results, atRate, mixed } = await runScenarios(
      ctx,
      server,
      data,
      baseline,
      await signInToPages(ctx, server, env),
    );
    const mail = ctx.cfg.only ? undefined : await measureMail(ctx, server, store);
    for (const scenario of chosen(ctx, [deployScenario(data)])) {
      results.push(await measure(ctx, server, scenario));
      atRate.push(await measureAtRate(ctx, server, scenario, DEPLOY_RATE));
    }
    const peakRss = peakRssMb(server.child.pid);
    log(`  [${ctx.label}] server peak RSS ${Math.round(peakRss)} MB`);
    return {
      size,
      seedSeconds: backend === 'postgres' ? ctx.info.seedSeconds : dataset.built ? dataset.info.seedSeconds : 0,
      baseline,
      results,
      atRate,
      mixed,
      mail,
      peakRssMb: peakRss,
      startupMs,
    };
  } finally {
    await stopServer(ctx, server);
    await stopChild(sink?.child);
    await store?.close();
    fs.rmSync(runDir, { recursive: true, force: true });
    scratchDirs.delete(runDir);
  }
}

/** Spawn to exit of a bare `node -e 0`, median of 3: the part of any start-up that is Node's own. */
async function bareNodeStartMs(): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, ['-e', '0'], (err) => (err ? reject(err) : resolve()));
    });
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[1];
}

async function databaseVersion(cfg: BenchConfig): Promise<string> {
  if (!cfg.databaseUrl) return '';
  const client = new pg.Client({ connectionString: cfg.databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ server_version: string }>('show server_version')).rows[0].server_version;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  stopChildrenOnExit();
  const cfg = loadBenchConfig();
  if (!fs.existsSync(SERVER_SCRIPT)) throw new Error(`${SERVER_SCRIPT} is missing: run npm run build first`);
  const backend: Backend = cfg.databaseUrl ? 'postgres' : 'sqlite';
  const run: RunReport = {
    backend,
    config: cfg,
    command: commandLine(),
    startedAt: new Date(),
    loadAverage: os.loadavg(),
    loadAverageAfter: [],
    bareNodeStartMs: await bareNodeStartMs(),
    databaseVersion: await databaseVersion(cfg),
    sizes: [],
  };
  try {
    for (const size of cfg.sizes) run.sizes.push(await benchSize(cfg, backend, size));
  } finally {
    await stopAllChildren();
  }
  run.loadAverageAfter = os.loadavg();
  const section = renderSection(run, evaluateTargets(run));
  process.stdout.write(`\n${section}\n`);
  if (cfg.only || cfg.reusePostgres) {
    log(
      `BENCHMARKS.md left as it is: ${cfg.only ? 'BENCH_SCENARIOS measured only some scenarios' : 'a reused dataset'}`,
    );
    return;
  }
  writeReport(backend, section);
  log(`BENCHMARKS.md: ${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'} section written`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void stopAllChildren().finally(() => process.exit(1));
  },
);
