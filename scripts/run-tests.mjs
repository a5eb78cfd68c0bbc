#!/usr/bin/env node
// Runs test files with node's test runner, two at a time, the longest first: the runner starts
// files in the order it is given them, and a long file started last would run alone at the end
// while the other slot sits idle. The order changes only when each file runs, never what it checks.
//
// Each file runs in a process of its own, and loading TypeScript through a loader hook costs each
// of them about a third of its time. So the tests are first turned into JavaScript (esbuild, a
// fraction of a second for all of them) under .test-build/, a folder beside test/ at the same
// depth, and import the service from dist/, which the build made of the same sources (npm test
// builds first when a source changed). A file can still be run alone from its TypeScript:
// `node --import tsx --test test/x.test.ts`.
//
// Usage: node scripts/run-tests.mjs [node --test options...] [files or folders under test/...]
//   (default: every test/*.test.ts). `scripts/test-times.mjs` reports each file's time.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TESTS = path.join(ROOT, 'test');
const OUT = path.join(ROOT, '.test-build');

/** The files that take longest (seconds on a 2-core machine, from scripts/test-times.mjs), longest first. */
const LONGEST = [
  'browser.test.ts',
  'browser-accessibility.test.ts',
  'crash.test.ts',
  'browser-team.test.ts',
  'cli.test.ts',
  'fuzz-input.test.ts',
  'backup.test.ts',
  'fuzz-sequences.test.ts',
  'kill-under-load.test.ts',
  'disk-full.test.ts',
  'deploy-cli.test.ts',
  'bounded.test.ts',
  'openapi.test.ts',
];

const args = process.argv.slice(2);
const options = args.filter((a) => a.startsWith('-'));
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

/** Every TypeScript file under test/, helpers included. */
const sources = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });

/**
 * The tests as JavaScript under .test-build/, importing the service's modules from dist/ where the
 * TypeScript imports them from src/ (`../src/x.js` becomes `../dist/x.js`, at any depth). Paths
 * that only name a source file (a script a test starts with tsx) keep pointing at src/.
 */
async function compileTests() {
  fs.rmSync(OUT, { recursive: true, force: true });
  const result = await build({
    entryPoints: sources(TESTS),
    outdir: OUT,
    outbase: TESTS,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    sourcesContent: false,
    write: false,
    logLevel: 'warning',
  });
  const srcImport = /((?:\bfrom\s*|\bimport\s*\(\s*)["'`](?:\.\.\/)+)src\//g;
  for (const file of result.outputFiles) {
    fs.mkdirSync(path.dirname(file.path), { recursive: true });
    fs.writeFileSync(file.path, file.text.replace(srcImport, '$1dist/'));
  }
}

await compileTests();
const built = files.map((file) => path.join(OUT, path.relative(TESTS, path.resolve(file))).replace(/\.ts$/, '.js'));

const child = spawn(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-concurrency=2', ...options, ...built],
  { stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
