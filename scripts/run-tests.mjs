#!/usr/bin/env node
// Runs test files with node's test runner, three at a time on two cores (a fifth of the suite's
// time is files waiting on servers they started, a lease or a sink, while a core sits idle), the
// longest first: the runner starts files in the order it is given them, and a long file started
// last would run alone at the end. The order changes only when each file runs, never what it checks.
//
// Each file runs in a process of its own, and what it costs to start counts: resolving and
// compiling the service's modules and its packages, some thousand files, took each about half a
// second, and a TypeScript loader hook a third of its time more. So the test files are first
// bundled by esbuild (a second for all of them) into JavaScript under .test-build-<pid>/, a folder
// beside test/ at the same depth, made of the same sources (see compileTests). A file can
// still be run alone from its TypeScript: `node --import tsx --test test/x.test.ts`.
//
// Usage: node scripts/run-tests.mjs [--checks] [node --test options...] [files or folders under test/...]
//   (default: every test/*.test.ts). `scripts/test-times.mjs` reports each file's time. `npm test`
//   passes --checks: the lint and the dependency rules run at the same time as the bundling, and
//   the tests only when both pass.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TESTS = path.join(ROOT, 'test');
// One folder a run, so that runs at once (the SQLite suite and the PostgreSQL one) never replace
// each other's files; removed when the run ends.
const OUT = path.join(ROOT, `.test-build-${process.pid}`);

/** The files that take longest (seconds on a 2-core machine, from scripts/test-times.mjs), longest first. */
const LONGEST = [
  'browser.test.ts',
  'browser-accessibility.test.ts',
  'crash.test.ts',
  'cli.test.ts',
  'bounded.test.ts',
  'fuzz-input.test.ts',
  'kill-under-load.test.ts',
  'browser-forms.test.ts',
  'backup.test.ts',
  'disk-full.test.ts',
  'server.test.ts',
  'deploy-cli.test.ts',
  'browser-team.test.ts',
  'webhooks.test.ts',
  'architecture.test.ts',
  'openapi.test.ts',
  'kept-items.test.ts',
  'inbound.test.ts',
  'web.test.ts',
  'fuzz-sequences.test.ts',
  'item-page.test.ts',
  'mail-faults.test.ts',
  'connections.test.ts',
  'webhook-processes.test.ts',
  'instances.test.ts',
  'web-conversation.test.ts',
  'conversation.test.ts',
  'browser-search.test.ts',
];

const args = process.argv.slice(2);
/** `--checks`: the lint and the dependency rules too, each in a process of its own, beside the bundling. */
const checks = args.includes('--checks');
const options = args.filter((a) => a.startsWith('-') && a !== '--checks');
const named = args.filter((a) => !a.startsWith('-'));
const files = (named.length ? named : [TESTS])
  .flatMap((p) =>
    fs.statSync(p).isDirectory()
      ? fs
          .readdirSync(p)
          .filter((f) => f.endsWith('.test.ts'))
          .map((f) => path.join(p, f))
      : [p],
  )
  .sort();
const rank = (file) => {
  const i = LONGEST.indexOf(path.basename(file));
  return i === -1 ? LONGEST.length : i;
};
files.sort((a, b) => rank(a) - rank(b));

/**
 * Packages left outside the tests' bundles: native addons, packages that read files beside
 * themselves or start programs of their own, and the tools some tests run (as the server's bundle
 * leaves out the first kind, scripts/bundle.mjs).
 */
const EXTERNAL = [
  'better-sqlite3',
  'pg-native',
  '@fastify/swagger-ui',
  'email-reply-parser',
  'playwright-core',
  'axe-core',
  'esbuild',
  'tsx',
  'typescript',
  'openapi-typescript',
  'dependency-cruiser',
  '@biomejs/biome',
  'autocannon',
  '@seriousme/openapi-schema-validator',
];

/**
 * Each test file to run as a JavaScript module under the run's folder, at the depth of its source
 * under test/, holding the service's sources and the packages they use, with what files share in
 * a few chunks: node then reads a few files where it would resolve and compile some thousand,
 * which cost each test process about half a second. No source maps (node would read megabytes of
 * them at every start): a stack names its functions, and `// src/...` comments in the modules say
 * whose they are; to debug with the sources' lines, run the file alone with tsx
 * (`node --import tsx --test test/x.test.ts`).
 */
async function compileTests(entries) {
  fs.rmSync(OUT, { recursive: true, force: true });
  await build({
    entryPoints: entries,
    outdir: OUT,
    outbase: TESTS,
    bundle: true,
    // What several files share is written once, in chunks they import: a tenth of a second for
    // the whole suite, where a whole bundle a file took twelve seconds and 400 MB.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    external: EXTERNAL,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The CommonJS packages inside an ES module still call require() for Node's own modules.
    banner: {
      js: "import { createRequire as testRequire } from 'node:module'; const require = testRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
}

/** Runs a command with the terminal's output; resolves to its exit code. */
const run = (command, commandArgs) =>
  new Promise((resolve) =>
    spawn(command, commandArgs, { cwd: ROOT, stdio: 'inherit' }).on('exit', (code) => resolve(code ?? 1)),
  );

const [codes] = await Promise.all([
  checks
    ? Promise.all([run('npm', ['run', '--silent', 'lint']), run(process.execPath, ['scripts/check-architecture.mjs'])])
    : [],
  compileTests(files),
]);
if (codes.some((code) => code !== 0)) {
  fs.rmSync(OUT, { recursive: true, force: true });
  process.exit(1);
}
const built = files.map((file) => path.join(OUT, path.relative(TESTS, path.resolve(file))).replace(/\.ts$/, '.js'));

const child = spawn(process.execPath, ['--test', '--test-concurrency=3', ...options, ...built], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  fs.rmSync(OUT, { recursive: true, force: true });
  process.exit(signal ? 1 : (code ?? 1));
});
