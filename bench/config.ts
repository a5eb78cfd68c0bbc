import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, so the harness works from any current directory. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Cached datasets and per-run copies; never committed. */
export const DATA_ROOT = path.join(ROOT, 'bench', '.data');
export const SERVER_SCRIPT = path.join(ROOT, 'dist', 'bundle', 'server.js');
const START = startCommand();
/** The options `npm start` gives Node before the server's script: the bench runs the same process. */
export const SERVER_NODE_OPTIONS = START.options;
/** The environment `npm start` sets for the server (the C library's allocator settings). */
export const SERVER_START_ENV = START.env;
export const CLI_SCRIPT = path.join(ROOT, 'bin', 'shiplog.js');
export const REPORT_FILE = path.join(ROOT, 'BENCHMARKS.md');

/** What a run measures, read once from the environment. */
export interface BenchConfig {
  readonly sizes: number[];
  /** Measured seconds per scenario. */
  readonly seconds: number;
  /** Unmeasured seconds per scenario before it, so caches and JIT are warm. */
  readonly warmupSeconds: number;
  readonly connections: number;
  /** Messages queued at once for the mail delivery measurement. */
  readonly mailMessages: number;
  /** PostgreSQL instead of SQLite for the service (the baseline stays on SQLite). */
  readonly databaseUrl: string | undefined;
  /**
   * BENCH_SCENARIOS: only the scenarios whose names contain one of these (comma-separated) parts,
   * e.g. `page:,list: no parameters`; mail is then not measured and BENCHMARKS.md is not written.
   */
  readonly only: string[] | undefined;
  /**
   * BENCH_LOAD: the load generator at saturation. `h2load` (the default; nghttp2's, C, light on a
   * 2-core machine) drives the reads, warming up and measuring on the same connections, and wrk
   * the writes (whose bodies differ per request); `wrk` drives everything; `autocannon` (Node,
   * which takes a core itself) too. With h2load or wrk, the baseline and every list are also
   * measured with the other generators, so a change of generator shows in the figures.
   */
  readonly load: LoadGenerator;
  /**
   * BENCH_CPU_PROF: a folder (made if missing) where the measured server writes a CPU profile
   * (`node --cpu-prof`) when it exits at the end of each size; unset, nothing is profiled.
   */
  readonly cpuProfDir: string | undefined;
  /**
   * BENCH_PG_REUSE=1: on PostgreSQL, measure the dataset of the same size that an earlier run
   * seeded (with what that run wrote since) instead of seeding afresh, which takes minutes at 1M
   * items. For comparing changes run after run; BENCHMARKS.md is written from fresh seeds only.
   */
  readonly reusePostgres: boolean;
  /**
   * BENCH_SEARCH_INDEX=off (SQLite only): the run's copy of the dataset is migrated and its search
   * triggers dropped before the server starts, so no write touches the search index: what the index
   * costs a write is the difference with a run without it. Searches then find nothing new.
   */
  readonly searchIndex: boolean;
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new Error(`${name} must be a whole number of at least 1, got "${raw}".`);
  return Number(raw);
}

function sizes(): number[] {
  const raw = process.env.BENCH_SIZES;
  if (!raw) return [10_000, 1_000_000];
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.length || list.some((s) => !/^\d+$/.test(s) || Number(s) < 1000)) {
    throw new Error(`BENCH_SIZES must be a comma-separated list of item counts of at least 1000, got "${raw}".`);
  }
  return list.map(Number);
}

export type LoadGenerator = 'h2load' | 'wrk' | 'autocannon';

function loadGenerator(): LoadGenerator {
  const raw = process.env.BENCH_LOAD || 'h2load';
  if (raw !== 'h2load' && raw !== 'wrk' && raw !== 'autocannon')
    throw new Error(`BENCH_LOAD must be h2load, wrk or autocannon, got "${raw}".`);
  return raw;
}

function searchIndex(): boolean {
  const raw = process.env.BENCH_SEARCH_INDEX || 'on';
  if (raw !== 'on' && raw !== 'off') throw new Error(`BENCH_SEARCH_INDEX must be on or off, got "${raw}".`);
  if (raw === 'off' && process.env.DATABASE_URL) throw new Error('BENCH_SEARCH_INDEX=off is for SQLite only.');
  return raw === 'on';
}

export function loadBenchConfig(): BenchConfig {
  return Object.freeze({
    sizes: sizes(),
    seconds: positiveInt('BENCH_SECONDS', 10),
    warmupSeconds: positiveInt('BENCH_WARMUP_SECONDS', 3),
    connections: positiveInt('BENCH_CONNECTIONS', 50),
    mailMessages: positiveInt('BENCH_MAIL_MESSAGES', 5000),
    databaseUrl: process.env.DATABASE_URL || undefined,
    load: loadGenerator(),
    cpuProfDir: process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined,
    reusePostgres: process.env.BENCH_PG_REUSE === '1',
    searchIndex: searchIndex(),
    only: process.env.BENCH_SCENARIOS
      ? process.env.BENCH_SCENARIOS.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
  });
}

/** The command that reproduces this run, with any password in DATABASE_URL hidden. */
export function commandLine(): string {
  const names = [
    'BENCH_SIZES',
    'BENCH_SCENARIOS',
    'BENCH_LOAD',
    'BENCH_SECONDS',
    'BENCH_WARMUP_SECONDS',
    'BENCH_CONNECTIONS',
    'BENCH_MAIL_MESSAGES',
    'BENCH_CPU_PROF',
    'BENCH_PG_REUSE',
    'BENCH_SEARCH_INDEX',
    'DATABASE_URL',
  ];
  const env = names
    .filter((name) => process.env[name])
    .map((name) => `${name}=${name === 'DATABASE_URL' ? redactUrl(process.env[name]!) : process.env[name]}`);
  return [...env, 'npm run bench'].join(' ');
}

export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** 10000 -> "10k", 1000000 -> "1M": how sizes are named in output. */
export function sizeLabel(size: number): string {
  if (size % 1_000_000 === 0) return `${size / 1_000_000}M`;
  if (size % 1000 === 0) return `${size / 1000}k`;
  return String(size);
}

function startCommand(): { env: Record<string, string>; options: string[] } {
  const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const found = /((?:\b[A-Z_]+=\S+ )*)node((?: --\S+)*) dist\/bundle\/server\.js\b/.exec(scripts.start);
  if (!found) throw new Error(`npm start (${scripts.start}) does not run node dist/bundle/server.js`);
  const words = (text: string) => text.trim().split(/\s+/).filter(Boolean);
  const env = Object.fromEntries(words(found[1]).map((word) => word.split('=', 2) as [string, string]));
  return { env, options: words(found[2]) };
}
