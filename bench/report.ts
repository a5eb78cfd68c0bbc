import fs from 'node:fs';
import os from 'node:os';
import SQLite from 'better-sqlite3';
import { REPORT_FILE, SERVER_NODE_OPTIONS, SERVER_START_ENV, sizeLabel, type BenchConfig } from './config.js';
import type { LoadResult, RateResult } from './load.js';

export type Backend = 'sqlite' | 'postgres';

export interface MailResult {
  queued: number;
  /** Items listed in each message, and the average size of a whole message as the sink got it. */
  itemsPerMessage: number;
  messageBytes: number;
  delivered: number;
  failed: number;
  /** From the commit of the queued messages to the last one marked sent. */
  seconds: number;
  /** delivered / seconds; what the target is judged on. */
  rate: number;
  /** Delivered per second from the first delivery seen, leaving out the worker's pick-up delay. */
  steadyRate: number;
  complete: boolean;
}

/** The read mix at saturation, with a writer offered beside it at `writesPerSecond` (none at 0). */
export interface MixResult {
  writesPerSecond: number;
  reads: LoadResult;
  writes?: RateResult;
}

/** Everything measured on one dataset. */
export interface SizeReport {
  size: number;
  seedSeconds: number;
  baseline: LoadResult;
  results: LoadResult[];
  /** Latency at fixed offered rates. */
  atRate: RateResult[];
  /** The read mix with nothing writing, then beside each writer. */
  mixed: MixResult[];
  mail: MailResult | undefined;
  peakRssMb: number;
  startupMs: number[];
}

export interface RunReport {
  backend: Backend;
  config: BenchConfig;
  command: string;
  startedAt: Date;
  loadAverage: number[];
  loadAverageAfter: number[];
  /** Spawn to exit of `node -e 0`: how much of a start-up is Node itself. */
  bareNodeStartMs: number;
  databaseVersion: string;
  sizes: SizeReport[];
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const whole = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
/** Errors, no successful response at all, or a list without its count header: figures not to trust. */
const flagged = (r: LoadResult): boolean =>
  r.non2xx > 0 || r.errors > 0 || r.ok === 0 || (r.kind === 'list' && r.itemCount === null) || (r.unlisted ?? 0) > 0;

export function startupMedian(s: SizeReport): number {
  return median(s.startupMs);
}

function statusSummary(r: LoadResult): string {
  if (r.non2xx === 0 && r.errors === 0) return r.ok === 0 ? '**no response completed**' : '0';
  const codes = Object.entries(r.statuses)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, n]) => `${n} x ${code}`);
  const parts = [...codes, ...(r.errors ? [`${r.errors} timeouts/conn. errors`] : [])];
  return `**${parts.join(', ')}**`;
}

/**
 * One dataset's scenarios as a Markdown table; read rows carry their ratio to the baseline, and
 * the baseline and the lists also their figures under the other generators (each against that
 * generator's own baseline), so a change of generator is visible.
 */
export function scenarioTable(s: SizeReport): string {
  const others = (s.baseline.others ?? []).map((o) => o.generator);
  const head = [
    '| Scenario | generator | req/s | p50 ms | p99 ms | max ms | vs baseline |' +
      others.map((g) => ` ${g}: req/s, vs its baseline, p99 ms |`).join('') +
      ' X-Sprintly-Item-Count | non-2xx / errors | RSS after, MB |',
    `|---|---|---:|---:|---:|---:|---:|${others.map(() => '---:|').join('')}---:|---|---:|`,
  ];
  const row = (r: LoadResult) => {
    const ratio =
      r.kind === 'list' || r.kind === 'read' || r.kind === 'page' ? `${fmt((100 * r.rps) / s.baseline.rps, 0)}%` : '';
    const count = r.kind === 'list' ? (r.itemCount ?? '**missing**') : '';
    const name = flagged(r) ? `${r.name} ⚠` : r.name;
    const rss = r.rssMb === undefined ? '' : fmt(r.rssMb, 0);
    const cells = others
      .map((g) => {
        const o = r.others?.find((x) => x.generator === g);
        const base = s.baseline.others?.find((x) => x.generator === g);
        if (!o || !base) return ' |';
        const vsBase = r === s.baseline ? '—' : `${fmt((100 * o.rps) / base.rps, 0)}%`;
        return ` ${whole(o.rps)}, ${vsBase}, ${fmt(o.p99, 2)} |`;
      })
      .join('');
    const max = r.max === undefined ? '' : fmt(r.max, 2);
    const figures = [whole(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), max, ratio].join(' | ');
    return `| ${name} | ${r.generator ?? ''} | ${figures} |${cells} ${count} | ${statusSummary(r)} | ${rss} |`;
  };
  return [...head, row(s.baseline), ...s.results.map(row)].join('\n');
}

/** The fixed-rate runs as a Markdown table. */
export function rateTable(s: SizeReport): string {
  const head = [
    '| Scenario | offered req/s | answered req/s | p50 ms | p99 ms | max ms | ' +
      'sent late (latest, ms) | non-2xx / errors |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
  ];
  const row = (r: RateResult) => {
    const late = r.late ? `${whole(r.late)} (${fmt(r.latestMs, 0)})` : '0';
    const failed = r.non2xx || r.errors ? `**${r.non2xx} non-2xx, ${r.errors} errors**` : '0';
    const figures = [whole(r.offered), whole(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.max, 2), late, failed];
    return `| ${r.name} | ${figures.join(' | ')} |`;
  };
  return [...head, ...s.atRate.map(row)].join('\n');
}

/** Non-2xx answers and errors of a run, and lists answered without their count. */
function failures(r: { non2xx: number; errors: number; unlisted?: number }): string {
  const parts = [
    ...(r.non2xx ? [`${r.non2xx} non-2xx`] : []),
    ...(r.errors ? [`${r.errors} errors`] : []),
    ...(r.unlisted ? [`${r.unlisted} lists without X-Sprintly-Item-Count`] : []),
  ];
  return parts.length ? `**${parts.join(', ')}**` : '0';
}

/**
 * The read mix with nothing writing and beside each writer, one row each. The mix is wrk's, so its
 * ratio to wrk's baseline is shown too when the baseline was measured by another generator.
 */
export function mixTable(s: SizeReport): string {
  const wrkBaseline =
    s.baseline.generator === 'wrk' ? undefined : s.baseline.others?.find((o) => o.generator === 'wrk');
  const head = [
    `| Writes offered /s | reads req/s | vs baseline |${wrkBaseline ? " vs wrk's baseline |" : ''} ` +
      'vs nothing writing | read p50 ms | read p99 ms | read non-2xx / errors | writes answered /s | ' +
      'write p50 ms | write p99 ms | write max ms | writes sent late (latest, ms) | write non-2xx / errors |',
    `|---:|---:|---:|${wrkBaseline ? '---:|' : ''}---:|---:|---:|---|---:|---:|---:|---:|---:|---|`,
  ];
  const alone = s.mixed.find((m) => m.writesPerSecond === 0);
  const ratio = (r: LoadResult, of: { rps: number } | undefined) => (of ? [`${fmt((100 * r.rps) / of.rps, 0)}%`] : []);
  const row = ({ writesPerSecond, reads: r, writes: w }: MixResult) => {
    const vsAlone = alone && alone.reads !== r ? ratio(r, alone.reads) : [''];
    const read = [whole(r.rps), ...ratio(r, s.baseline), ...ratio(r, wrkBaseline), ...vsAlone];
    const late = w?.late ? `${whole(w.late)} (${fmt(w.latestMs, 0)})` : '0';
    const write = w
      ? [whole(w.rps), fmt(w.p50, 2), fmt(w.p99, 2), fmt(w.max, 2), late, failures(w)]
      : Array(6).fill('');
    const figures = [...read, fmt(r.p50, 2), fmt(r.p99, 2), failures(r), ...write];
    return `| ${writesPerSecond || 'none'} | ${figures.join(' | ')} |`;
  };
  return [...head, ...s.mixed.map(row)].join('\n');
}

function otherFigures(s: SizeReport): string {
  const mail = s.mail
    ? `${whole(s.mail.rate)} messages/s (each listing ${s.mail.itemsPerMessage} items, ` +
      `${fmt(s.mail.messageBytes / 1024, 1)} KiB as sent; ` +
      `${s.mail.delivered.toLocaleString('en-US')} of ${s.mail.queued.toLocaleString('en-US')} delivered in ` +
      `${fmt(s.mail.seconds, 2)} s from commit; ${whole(s.mail.steadyRate)}/s from the first delivery` +
      `${s.mail.failed ? `; **${s.mail.failed} failed**` : ''}` +
      `${s.mail.complete ? '' : '; **did not finish**'})`
    : 'not measured';
  return [
    `- Mail delivery to a local SMTP sink: ${mail}`,
    `- Server peak RSS (VmHWM over all scenarios): ${fmt(s.peakRssMb, 0)} MB`,
    `- Start-up (spawn to first 200 from /health): median ${whole(startupMedian(s))} ms ` +
      `(${s.startupMs.map((m) => whole(m)).join(', ')} ms)`,
    `- Dataset seeding: ${s.seedSeconds ? `${fmt(s.seedSeconds, 0)} s` : 'cached'}`,
  ].join('\n');
}

/** List scenarios at the largest size against the smallest, side by side. */
function scalingTable(small: SizeReport, large: SizeReport): string {
  const [smallLabel, largeLabel] = [sizeLabel(small.size), sizeLabel(large.size)];
  const lines = [
    `| List scenario | req/s at ${smallLabel} | req/s at ${largeLabel} | ${largeLabel} / ${smallLabel} |`,
    '|---|---:|---:|---:|',
  ];
  for (const r of large.results.filter((x) => x.kind === 'list')) {
    const before = small.results.find((x) => sameScenario(x, r));
    const ratio = before ? `${fmt((100 * r.rps) / before.rps, 0)}%` : '-';
    lines.push(`| ${r.name} | ${before ? whole(before.rps) : '-'} | ${whole(r.rps)} | ${ratio} |`);
  }
  return lines.join('\n');
}

/** The deep page's offset differs by size; everything else is named alike. */
const sameScenario = (a: LoadResult, b: LoadResult): boolean =>
  a.name.replace(/\(.*\)/, '') === b.name.replace(/\(.*\)/, '');

export interface TargetResult {
  verdict: 'PASS' | 'FAIL' | 'SKIP';
  target: string;
  detail: string;
}

interface Rule {
  /** The figure judged, e.g. req/s as a percentage of the baseline. */
  value: (r: LoadResult) => number;
  limit: number;
  atLeast: boolean;
  show: (value: number) => string;
}

/** Checks each scenario against a rule; a scenario that had errors fails whatever its figures. */
function eachScenario(target: string, results: LoadResult[], rule: Rule): TargetResult {
  if (!results.length) return { verdict: 'SKIP', target, detail: 'not measured' };
  const passes = (r: LoadResult) => {
    const v = rule.value(r);
    return Number.isFinite(v) && (rule.atLeast ? v >= rule.limit : v <= rule.limit);
  };
  const failing = results.filter((r) => flagged(r) || !passes(r));
  if (failing.length) {
    const detail = failing
      .map((r) => `${r.name}: ${rule.show(rule.value(r))}${flagged(r) ? ' (flagged)' : ''}`)
      .join('; ');
    return { verdict: 'FAIL', target, detail };
  }
  const worst = results.reduce((w, r) =>
    (rule.atLeast ? rule.value(r) < rule.value(w) : rule.value(r) > rule.value(w)) ? r : w,
  );
  return { verdict: 'PASS', target, detail: `worst ${worst.name}: ${rule.show(rule.value(worst))}` };
}

const percent = (v: number) => `${fmt(v, 0)}%`;

/** A fixed-rate run's p99 against a limit; errors fail it. */
function rateTarget(target: string, runs: RateResult[], limitMs: number): TargetResult {
  if (!runs.length) return { verdict: 'SKIP', target, detail: 'not measured' };
  // A request sent later than its slot by more than the limit was late by that much already.
  const failing = runs.filter((r) => r.non2xx > 0 || r.errors > 0 || !(r.p99 <= limitMs) || r.latestMs > limitMs);
  if (failing.length)
    return {
      verdict: 'FAIL',
      target,
      detail: failing
        .map((r) => {
          const late = r.latestMs > limitMs ? `, sent up to ${fmt(r.latestMs, 0)} ms late` : '';
          return `${r.name}: p99 ${fmt(r.p99, 2)} ms${late}${r.non2xx || r.errors ? ' (errors)' : ''}`;
        })
        .join('; '),
    };
  const worst = runs.reduce((w, r) => (r.p99 > w.p99 ? r : w));
  return { verdict: 'PASS', target, detail: `worst ${worst.name}: p99 ${fmt(worst.p99, 2)} ms` };
}

/** The deploy list's default page before this round: 61 req/s (with 32 timeouts). */
const DEPLOY_LIST_BEFORE = 61;

/** What the targets of one dataset are judged with. */
interface Judge {
  at: string;
  large: SizeReport;
  find: (prefix: string) => LoadResult[];
  atLeastPercent: (target: string, results: LoadResult[], limit: number) => TargetResult;
  atMostMs: (target: string, results: LoadResult[], limit: number, figure: 'p99') => TargetResult;
}

function judgeOf(large: SizeReport): Judge {
  const ofBaseline = (r: LoadResult) => (100 * r.rps) / large.baseline.rps;
  return {
    at: `[${sizeLabel(large.size)}]`,
    large,
    find: (prefix) => large.results.filter((r) => r.name.startsWith(prefix)),
    atLeastPercent: (target, results, limit) =>
      eachScenario(target, results, { value: ofBaseline, limit, atLeast: true, show: percent }),
    atMostMs: (target, results, limit, figure) =>
      eachScenario(target, results, {
        value: (r) => r[figure],
        limit,
        atLeast: false,
        show: (v) => `${figure} ${fmt(v, 2)} ms`,
      }),
  };
}

function listTargets({ at, large, find, atLeastPercent }: Judge): TargetResult[] {
  const lists = large.results.filter((r) => r.kind === 'list');
  const plain = lists.filter((r) => r.name === 'list: no parameters' || r.name.startsWith('list: order_by='));
  const combined = lists.filter((r) => r.name.startsWith('list: status+type') || r.name.startsWith('list: children'));
  return [
    atLeastPercent(`${at} every plain list (no parameters, each order_by) >= 70% of the baseline's req/s`, plain, 70),
    atLeastPercent(
      `${at} the list rendered afresh (Cache-Control: no-cache) >= 50%`,
      find('list: no parameters, '),
      50,
    ),
    atLeastPercent(`${at} the combined filter and children=true >= 60%`, combined, 60),
    atLeastPercent(`${at} the deep page >= 50%`, find('list: deep page'), 50),
    eachScenario(`${at} at saturation, every list's p99 <= 3 x its p50`, lists, {
      value: (r) => r.p99 / r.p50,
      limit: 3,
      atLeast: false,
      show: (v) => `${fmt(v, 1)} x`,
    }),
  ];
}

function readTargets({ at, find, atLeastPercent, atMostMs }: Judge): TargetResult[] {
  const perSecond = (target: string, results: LoadResult[], limit: number) =>
    eachScenario(target, results, { value: (r) => r.rps, limit, atLeast: true, show: (v) => `${whole(v)} req/s` });
  const production = find('list deploys (production');
  return [
    atLeastPercent(`${at} fetch >= 60% of the baseline's req/s`, find('fetch item'), 60),
    atLeastPercent(`${at} the board >= 40% of the baseline's req/s`, find('page: board'), 40),
    atLeastPercent(`${at} the item page >= 60% of the baseline's req/s`, find('page: item'), 60),
    perSecond(
      `${at} the deploy list's default page >= 5 x ${DEPLOY_LIST_BEFORE} req/s, without errors`,
      find('list deploys (default page)'),
      5 * DEPLOY_LIST_BEFORE,
    ),
    atLeastPercent(`${at} random pages of production's deploys >= 30% of the baseline's req/s`, production, 30),
    atMostMs(`${at} random pages of production's deploys: p99 <= 100 ms`, production, 100, 'p99'),
    perSecond(
      `${at} create, update and resort >= 1,500 req/s`,
      [...find('create item'), ...find('update item'), ...find('resort')],
      1500,
    ),
  ];
}

/**
 * The read mix beside writers. On PostgreSQL the reads are held to less (the baseline stays on
 * SQLite): 50% with 5 writes/s, and neither the 50 writes/s ratio nor the read p99 is judged.
 */
function mixTargets(backend: Backend, { at, large, atLeastPercent, atMostMs }: Judge): TargetResult[] {
  const beside = (rate: number) => large.mixed.filter((m) => m.writesPerSecond === rate);
  const reads = (rate: number) => beside(rate).map((m) => m.reads);
  const writes = [5, 50].flatMap((rate) => beside(rate).flatMap((m) => (m.writes ? [m.writes] : [])));
  const mix = `${at} the read mix`;
  const writeTarget = rateTarget(
    `${at} description writes at 5/s and at 50/s beside the saturated read mix: p99 <= 50 ms`,
    writes,
    50,
  );
  if (backend === 'postgres')
    return [
      atLeastPercent(`${mix} with 5 writes/s >= 50% of the (SQLite) baseline's req/s`, reads(5), 50),
      writeTarget,
    ];
  return [
    atLeastPercent(`${mix} with 5 writes/s >= 70% of the baseline's req/s`, reads(5), 70),
    atLeastPercent(`${mix} with 50 writes/s >= 50% of the baseline's req/s`, reads(50), 50),
    atMostMs(`${mix} with 5 writes/s: read p99 <= 50 ms`, reads(5), 50, 'p99'),
    writeTarget,
  ];
}

function rateTargets({ at, large }: Judge): TargetResult[] {
  const rates = large.atRate;
  const rateOf = (prefix: string) => rates.filter((r) => r.name.startsWith(prefix));
  return [
    rateTarget(
      `${at} at 40% of the baseline's req/s, every list and fetch p99 <= 15 ms`,
      rates.filter((r) => r.kind === 'list' || r.name === 'fetch item'),
      15,
    ),
    rateTarget(`${at} at 40% of the baseline's req/s, create p99 <= 25 ms`, rateOf('create item'), 25),
    rateTarget(`${at} at 300 req/s, resort p99 <= 15 ms`, rateOf('resort'), 15),
    rateTarget(`${at} at 20 deploys/s, deploy of 50 items x 20 followers p99 <= 60 ms`, rateOf('deploy 50'), 60),
  ];
}

function processTargets({ at, large }: Judge): TargetResult[] {
  const mail = large.mail;
  const mailTarget = `${at} mail delivery >= 500 messages/s`;
  return [
    mail
      ? {
          verdict: mail.complete && mail.failed === 0 && mail.rate >= 500 ? 'PASS' : 'FAIL',
          target: mailTarget,
          detail:
            `${whole(mail.rate)} messages/s${mail.complete ? '' : ', did not finish'}` +
            `${mail.failed ? `, ${mail.failed} failed` : ''}`,
        }
      : { verdict: 'SKIP', target: mailTarget, detail: 'not measured' },
    {
      verdict: large.peakRssMb <= 200 ? 'PASS' : 'FAIL',
      target: `${at} server peak RSS over the whole run (the read mix and its writers included) <= 200 MB`,
      detail: `${fmt(large.peakRssMb, 0)} MB`,
    },
    {
      verdict: startupMedian(large) <= 800 ? 'PASS' : 'FAIL',
      target: `${at} start-up on the database <= 800 ms (median of 3)`,
      detail: `${whole(startupMedian(large))} ms`,
    },
  ];
}

/** The issues' targets, judged at the largest dataset measured (they are set for 1M items). */
export function evaluateTargets(run: RunReport): TargetResult[] {
  const judge = judgeOf(run.sizes.reduce((a, b) => (b.size > a.size ? b : a)));
  return [
    ...listTargets(judge),
    ...readTargets(judge),
    ...mixTargets(run.backend, judge),
    ...rateTargets(judge),
    ...processTargets(judge),
  ];
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) return match[1].trim();
  } catch {
    // Not Linux.
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

export function sqliteVersion(): string {
  const db = new SQLite(':memory:');
  try {
    return (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
  } finally {
    db.close();
  }
}

/** The server's command as `npm start` runs it, its environment first. */
const startLine = (): string =>
  [
    ...Object.entries(SERVER_START_ENV).map(([name, value]) => `${name}=${value}`),
    'node',
    ...SERVER_NODE_OPTIONS,
    'dist/bundle/server.js',
  ].join(' ');

function machine(run: RunReport): string {
  return [
    `- CPU: ${cpuModel()}, ${os.cpus().length} cores; memory ${fmt(os.totalmem() / 2 ** 30, 1)} GiB`,
    `- Node ${process.version} (a bare \`node -e 0\` takes ${whole(run.bareNodeStartMs)} ms ` +
      `from spawn to exit here); SQLite ${sqliteVersion()} (better-sqlite3)` +
      `${run.backend === 'postgres' ? `; PostgreSQL ${run.databaseVersion}` : ''}`,
    `- The server runs as \`npm start\` runs it: \`${startLine()}\`.`,
    `- Load average (1, 5, 15 min) at the start: ${run.loadAverage.map((l) => fmt(l, 2)).join(', ')}; at the end: ` +
      `${run.loadAverageAfter.map((l) => fmt(l, 2)).join(', ')}. ` +
      'Anything above what the benchmark itself runs means other work shared the cores.',
  ].join('\n');
}

const TITLES: Record<Backend, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

/** One backend's section of BENCHMARKS.md. */
export function renderSection(run: RunReport, targets: TargetResult[]): string {
  const c = run.config;
  const generators =
    c.load === 'h2load'
      ? 'h2load (nghttp2, HTTP/1.1) for reads of fixed paths, warming up and measuring on the same connections, ' +
        'and wrk (one thread) for writes and for reads of random items or pages (h2load would send every ' +
        'connection the same paths in the same order, so that 50 requests for one page shared one render)'
      : 'wrk (one thread)';
  const parts = [
    `## ${TITLES[run.backend]}`,
    '',
    `Run ${run.startedAt.toISOString().replace(/\.\d+Z$/, 'Z')} with \`${run.command}\`.`,
    '',
    machine(run),
    (c.load === 'autocannon'
      ? `- Load: autocannon, ${c.connections} keep-alive connections on 127.0.0.1. ` +
        'The freshly started server first serves every list scenario ' +
        'for 2 s, unmeasured (its JIT warms up); ' +
        `then per scenario ${c.warmupSeconds} s of warm-up, then ${c.seconds} s ` +
        'measured on the same connections (req/s counts 2xx responses; p50/p99 are of those). ' +
        'Every request authenticates with HTTP Basic as a '
      : `- Load at saturation: ${generators}, ` +
        `${c.connections} keep-alive connections on 127.0.0.1. ` +
        'The freshly started server first serves every list scenario ' +
        'for 2 s, unmeasured (its JIT warms up); ' +
        `then per scenario ${c.warmupSeconds} s of warm-up and ${c.seconds} s measured. ` +
        "A wrk run's measured window opens its own connections, " +
        'and the first request of each of them can wait hundreds of milliseconds ' +
        "(a bare Fastify server shows it too), so wrk's p99 and max include " +
        `${c.connections} such requests; h2load's do not. ` +
        'The baseline and the lists are then loaded the same way by the other generators, ' +
        'whose figures are in their own columns. ' +
        'Every request authenticates with HTTP Basic as a ') +
      'product member. Non-2xx and errors are counted over warm-up and measurement; ' +
      'a scenario with any, with no response at all, or a ' +
      'list without X-Sprintly-Item-Count is flagged ⚠ and fails its targets.',
    '- Baseline: Fastify + better-sqlite3 answering `GET /items` with 20 rows of the same items table ' +
      'in (product_id, status, sort) order, no auth, no joins' +
      (run.backend === 'postgres'
        ? '; **it stays on SQLite** (the same dataset as a SQLite file), so the ratios compare PostgreSQL with it'
        : '') +
      '.',
    '- Reads run before writes, with nothing else writing (but for the read mix below); ' +
      'writes run in the order shown; ' +
      'the deploy scenario runs last, with the mail worker delivering its messages meanwhile.',
    `- With ${c.connections} connections always waiting, mean latency is about ${c.connections} / req/s: ` +
      `a p99 of 25 ms needs well over ${whole((c.connections / 25) * 1000)} req/s, ` +
      "so latency at saturation follows from throughput (the baseline's own p99 is in each table for scale).",
    "- At a fixed rate: wrk offers the lists, fetch and create at 40% of the baseline's saturated req/s, " +
      'resort at 300/s and the deploy at 20/s, spread evenly over time ' +
      `(a Lua schedule, ${c.connections} connections), ${c.warmupSeconds} s of warm-up then ${c.seconds} s measured. ` +
      'Latency is from sending; a request sent after its slot because every connection was busy counts as late, ' +
      'with how late the latest was. ' +
      "(autocannon's own rate option was tried first: with 50 connections its timers fire together, " +
      'and it showed a p50 of 13 ms on the bare baseline at 1,000 req/s, where wrk shows 0.7 ms.)',
    `- Reads while writing: wrk (one thread, ${c.connections} connections) saturates the server with a read mix, ` +
      'each request drawn in its Lua: 40% fetch of a random item, 40% a list in one of the 8 orders at one of ' +
      "its first 51 pages of 20, 20% one member's open work (`assigned_to=U&status=backlog,in-progress`). " +
      'Every answer is checked (non-2xx counted, a list must carry X-Sprintly-Item-Count). ' +
      'It runs after the other reads and before the writes: alone, then beside a second wrk (4 connections) ' +
      'offering description updates of random items at 5/s, then at 50/s, paced as above, ' +
      `over the same ${c.warmupSeconds} s of warm-up and ${c.seconds} s measured.`,
    '',
  ];
  for (const s of run.sizes) {
    parts.push(`### ${sizeLabel(s.size)} items`, '', scenarioTable(s), '');
    if (s.atRate.length) parts.push(`#### At a fixed rate (${sizeLabel(s.size)} items)`, '', rateTable(s), '');
    if (s.mixed.length) parts.push(`#### Reads while writing (${sizeLabel(s.size)} items)`, '', mixTable(s), '');
    parts.push(otherFigures(s), '');
  }
  const small = run.sizes.find((s) => s.size === 10_000);
  const large = run.sizes.reduce((a, b) => (b.size > a.size ? b : a));
  if (small && small !== large)
    parts.push(
      `### Scaling from ${sizeLabel(small.size)} to ${sizeLabel(large.size)}`,
      '',
      scalingTable(small, large),
      '',
    );
  parts.push('### Targets', '', ...targets.map((t) => `- **${t.verdict}** ${t.target}: ${t.detail}`), '');
  return parts.join('\n');
}

const HEADER = [
  '# Benchmarks',
  '',
  '`npm run bench` (see bench/run.ts) measures the built server under load and writes this file: one section',
  'per database, each replaced only by a run on that database.',
  '',
].join('\n');

/** Replaces this backend's section of BENCHMARKS.md, keeping the other one. */
export function writeReport(backend: Backend, section: string): void {
  const start = `<!-- bench:${backend}:start -->`;
  const end = `<!-- bench:${backend}:end -->`;
  const block = `${start}\n${section.trimEnd()}\n${end}`;
  let text = fs.existsSync(REPORT_FILE) ? fs.readFileSync(REPORT_FILE, 'utf8') : HEADER;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) {
    text = text.slice(0, from) + block + text.slice(to + end.length);
  } else if (backend === 'sqlite' && text.includes('<!-- bench:postgres:start -->')) {
    const at = text.indexOf('<!-- bench:postgres:start -->');
    text = `${text.slice(0, at)}${block}\n\n${text.slice(at)}`;
  } else {
    text = `${text.trimEnd()}\n\n${block}\n`;
  }
  fs.writeFileSync(REPORT_FILE, text.endsWith('\n') ? text : `${text}\n`);
}
