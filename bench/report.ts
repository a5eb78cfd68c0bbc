import fs from 'node:fs';
import os from 'node:os';
import SQLite from 'better-sqlite3';
import { REPORT_FILE, sizeLabel, type BenchConfig } from './config.js';
import type { LoadResult } from './load.js';

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

/** Everything measured on one dataset. */
export interface SizeReport {
  size: number;
  seedSeconds: number;
  baseline: LoadResult;
  results: LoadResult[];
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
const flagged = (r: LoadResult): boolean => r.non2xx > 0 || r.errors > 0 || r.ok === 0 || (r.kind === 'list' && r.itemCount === null);

export function startupMedian(s: SizeReport): number {
  return median(s.startupMs);
}

function statusSummary(r: LoadResult): string {
  if (r.non2xx === 0 && r.errors === 0) return r.ok === 0 ? '**no response completed**' : '0';
  const codes = Object.entries(r.statuses).filter(([code]) => !code.startsWith('2')).map(([code, n]) => `${n} x ${code}`);
  const parts = [...codes, ...(r.errors ? [`${r.errors} timeouts/conn. errors`] : [])];
  return `**${parts.join(', ')}**`;
}

/**
 * One dataset's scenarios as a Markdown table; read rows carry their ratio to the baseline, and
 * with wrk as the generator the lists also their figures under autocannon (against autocannon's
 * own baseline), so the change of generator is visible.
 */
export function scenarioTable(s: SizeReport): string {
  const both = s.baseline.autocannon !== undefined;
  const head = [
    `| Scenario | req/s | p50 ms | p99 ms | max ms | vs baseline |${both ? ' autocannon: req/s, vs its baseline, p99 ms |' : ''} X-Sprintly-Item-Count | non-2xx / errors | RSS after, MB |`,
    `|---|---:|---:|---:|---:|---:|${both ? '---:|' : ''}---:|---|---:|`,
  ];
  const row = (r: LoadResult) => {
    const ratio = r.kind === 'list' || r.kind === 'read' || r.kind === 'page' ? `${fmt((100 * r.rps) / s.baseline.rps, 0)}%` : '';
    const count = r.kind === 'list' ? (r.itemCount ?? '**missing**') : '';
    const name = flagged(r) ? `${r.name} ⚠` : r.name;
    const rss = r.rssMb === undefined ? '' : fmt(r.rssMb, 0);
    const a = r.autocannon;
    const other = !both ? '' : a ? ` ${whole(a.rps)}, ${r === s.baseline ? '—' : `${fmt((100 * a.rps) / s.baseline.autocannon!.rps, 0)}%`}, ${fmt(a.p99, 2)} |` : ' |';
    const max = r.max === undefined ? '' : fmt(r.max, 2);
    return `| ${name} | ${whole(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${max} | ${ratio} |${other} ${count} | ${statusSummary(r)} | ${rss} |`;
  };
  return [...head, row(s.baseline), ...s.results.map(row)].join('\n');
}

function otherFigures(s: SizeReport): string {
  const mail = s.mail
    ? `${whole(s.mail.rate)} messages/s (each listing ${s.mail.itemsPerMessage} items, ${fmt(s.mail.messageBytes / 1024, 1)} KiB as sent; ` +
      `${s.mail.delivered.toLocaleString('en-US')} of ${s.mail.queued.toLocaleString('en-US')} delivered in ` +
      `${fmt(s.mail.seconds, 2)} s from commit; ${whole(s.mail.steadyRate)}/s from the first delivery${s.mail.failed ? `; **${s.mail.failed} failed**` : ''}` +
      `${s.mail.complete ? '' : '; **did not finish**'})`
    : 'not measured';
  return [
    `- Mail delivery to a local SMTP sink: ${mail}`,
    `- Server peak RSS (VmHWM over all scenarios): ${fmt(s.peakRssMb, 0)} MB`,
    `- Start-up (spawn to first 200 from /health): median ${whole(startupMedian(s))} ms (${s.startupMs.map((m) => whole(m)).join(', ')} ms)`,
    `- Dataset seeding: ${s.seedSeconds ? `${fmt(s.seedSeconds, 0)} s` : 'cached'}`,
  ].join('\n');
}

/** List scenarios at the largest size against the smallest, side by side. */
function scalingTable(small: SizeReport, large: SizeReport): string {
  const lines = [
    `| List scenario | req/s at ${sizeLabel(small.size)} | req/s at ${sizeLabel(large.size)} | ${sizeLabel(large.size)} / ${sizeLabel(small.size)} |`,
    '|---|---:|---:|---:|',
  ];
  for (const r of large.results.filter((x) => x.kind === 'list')) {
    const before = small.results.find((x) => sameScenario(x, r));
    lines.push(`| ${r.name} | ${before ? whole(before.rps) : '-'} | ${whole(r.rps)} | ${before ? `${fmt((100 * r.rps) / before.rps, 0)}%` : '-'} |`);
  }
  return lines.join('\n');
}

/** The deep page's offset differs by size; everything else is named alike. */
const sameScenario = (a: LoadResult, b: LoadResult): boolean => a.name.replace(/\(.*\)/, '') === b.name.replace(/\(.*\)/, '');

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
    const detail = failing.map((r) => `${r.name}: ${rule.show(rule.value(r))}${flagged(r) ? ' (flagged)' : ''}`).join('; ');
    return { verdict: 'FAIL', target, detail };
  }
  const worst = results.reduce((w, r) => ((rule.atLeast ? rule.value(r) < rule.value(w) : rule.value(r) > rule.value(w)) ? r : w));
  return { verdict: 'PASS', target, detail: `worst ${worst.name}: ${rule.show(rule.value(worst))}` };
}

const percent = (v: number) => `${fmt(v, 0)}%`;
const ms = (v: number) => `${fmt(v, 2)} ms`;

/** The issue's targets, judged at the largest dataset measured (they are set for 1M items). */
export function evaluateTargets(run: RunReport): TargetResult[] {
  const large = run.sizes.reduce((a, b) => (b.size > a.size ? b : a));
  const small = run.sizes.find((s) => s.size === 10_000);
  const at = `[${sizeLabel(large.size)}]`;
  const lists = large.results.filter((r) => r.kind === 'list');
  const find = (prefix: string) => large.results.filter((r) => r.name.startsWith(prefix));
  const ofBaseline = (r: LoadResult) => (100 * r.rps) / large.baseline.rps;
  const results: TargetResult[] = [
    eachScenario(`${at} every list scenario >= 50% of the baseline's req/s`, lists, { value: ofBaseline, limit: 50, atLeast: true, show: percent }),
    eachScenario(`${at} every list scenario p99 <= 25 ms`, lists, { value: (r) => r.p99, limit: 25, atLeast: false, show: ms }),
  ];
  if (small && small !== large) {
    const ofSmall = (r: LoadResult) => {
      const before = small.results.find((x) => sameScenario(x, r));
      return before ? (100 * r.rps) / before.rps : NaN;
    };
    results.push(
      eachScenario(`${at} every list scenario >= 80% of its req/s at ${sizeLabel(small.size)}`, lists, {
        value: ofSmall,
        limit: 80,
        atLeast: true,
        show: percent,
      }),
    );
  } else {
    results.push({ verdict: 'SKIP', target: `${at} every list scenario >= 80% of its req/s at 10k`, detail: 'needs both 10k and a larger size' });
  }
  results.push(
    eachScenario(`${at} fetch >= 60% of the baseline's req/s`, find('fetch item'), { value: ofBaseline, limit: 60, atLeast: true, show: percent }),
    eachScenario(`${at} the board and the item page >= 40% of the baseline's req/s`, find('page:'), {
      value: ofBaseline,
      limit: 40,
      atLeast: true,
      show: percent,
    }),
    eachScenario(`${at} create item >= 1,500 req/s`, find('create item'), {
      value: (r) => r.rps,
      limit: 1500,
      atLeast: true,
      show: (v) => `${whole(v)} req/s`,
    }),
    eachScenario(`${at} resort p99 <= 10 ms`, find('resort'), { value: (r) => r.p99, limit: 10, atLeast: false, show: ms }),
    eachScenario(`${at} deploy of 50 items x 20 followers p99 <= 50 ms`, find('deploy 50'), { value: (r) => r.p99, limit: 50, atLeast: false, show: ms }),
  );
  const mail = large.mail;
  results.push(
    mail
      ? {
          verdict: mail.complete && mail.failed === 0 && mail.rate >= 500 ? 'PASS' : 'FAIL',
          target: `${at} mail delivery >= 500 messages/s`,
          detail: `${whole(mail.rate)} messages/s${mail.complete ? '' : ', did not finish'}${mail.failed ? `, ${mail.failed} failed` : ''}`,
        }
      : { verdict: 'SKIP', target: `${at} mail delivery >= 500 messages/s`, detail: 'not measured' },
    {
      verdict: large.peakRssMb <= 250 ? 'PASS' : 'FAIL',
      target: `${at} server peak RSS <= 250 MB`,
      detail: `${fmt(large.peakRssMb, 0)} MB`,
    },
    {
      verdict: startupMedian(large) <= 1000 ? 'PASS' : 'FAIL',
      target: `${at} start-up on the database <= 1 s (median of 3)`,
      detail: `${whole(startupMedian(large))} ms`,
    },
  );
  return results;
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

function machine(run: RunReport): string {
  return [
    `- CPU: ${cpuModel()}, ${os.cpus().length} cores; memory ${fmt(os.totalmem() / 2 ** 30, 1)} GiB`,
    `- Node ${process.version} (a bare \`node -e 0\` takes ${whole(run.bareNodeStartMs)} ms from spawn to exit here); ` +
      `SQLite ${sqliteVersion()} (better-sqlite3)${run.backend === 'postgres' ? `; PostgreSQL ${run.databaseVersion}` : ''}`,
    `- Load average (1, 5, 15 min) at the start: ${run.loadAverage.map((l) => fmt(l, 2)).join(', ')}; at the end: ` +
      `${run.loadAverageAfter.map((l) => fmt(l, 2)).join(', ')}. Anything above what the benchmark itself runs means other work shared the cores.`,
  ].join('\n');
}

const TITLES: Record<Backend, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

/** One backend's section of BENCHMARKS.md. */
export function renderSection(run: RunReport, targets: TargetResult[]): string {
  const c = run.config;
  const parts = [
    `## ${TITLES[run.backend]}`,
    '',
    `Run ${run.startedAt.toISOString().replace(/\.\d+Z$/, 'Z')} with \`${run.command}\`.`,
    '',
    machine(run),
    (c.load === 'wrk'
      ? `- Load: wrk (one thread), ${c.connections} keep-alive connections on 127.0.0.1. The freshly started server first serves every list scenario ` +
        `for 2 s, unmeasured (its JIT warms up); then per scenario ${c.warmupSeconds} s of warm-up and ${c.seconds} s measured (req/s counts ` +
        'responses below 400; p50/p99/max are of every response, and the measured run opens its own connections, so the first request of each of ' +
        `them, which waits behind all the others, is in its p99 and max: with ${c.connections} connections that is 1% of a run of ${c.connections * 100} requests). The baseline and the lists are then loaded the same way by autocannon, ` +
        'whose figures are in their own column. Every request authenticates with HTTP Basic as a '
      : `- Load: autocannon, ${c.connections} keep-alive connections on 127.0.0.1. The freshly started server first serves every list scenario ` +
        `for 2 s, unmeasured (its JIT warms up); then per scenario ${c.warmupSeconds} s of warm-up, then ${c.seconds} s ` +
        'measured on the same connections (req/s counts 2xx responses; p50/p99 are of those). Every request authenticates with HTTP Basic as a ') +
      'product member. Non-2xx and errors are counted over warm-up and measurement; a scenario with any, with no response at all, or a ' +
      'list without X-Sprintly-Item-Count is flagged ⚠ and fails its targets.',
    `- Baseline: Fastify + better-sqlite3 answering \`GET /items\` with 20 rows of the same items table in (product_id, status, sort) ` +
      `order, no auth, no joins${run.backend === 'postgres' ? '; **it stays on SQLite** (the same dataset as a SQLite file), so the ratios compare PostgreSQL with it' : ''}.`,
    '- Reads run before writes, with nothing else writing; writes run in the order shown; the deploy scenario runs last, with the mail worker delivering its messages meanwhile.',
    `- With ${c.connections} connections always waiting, mean latency is about ${c.connections} / req/s: a p99 of 25 ms needs well over ` +
      `${whole((c.connections / 25) * 1000)} req/s, so latency targets follow from throughput (the baseline's own p99 is in each table for scale).`,
    '',
  ];
  for (const s of run.sizes) {
    parts.push(`### ${sizeLabel(s.size)} items`, '', scenarioTable(s), '', otherFigures(s), '');
  }
  const small = run.sizes.find((s) => s.size === 10_000);
  const large = run.sizes.reduce((a, b) => (b.size > a.size ? b : a));
  if (small && small !== large) parts.push(`### Scaling from ${sizeLabel(small.size)} to ${sizeLabel(large.size)}`, '', scalingTable(small, large), '');
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
