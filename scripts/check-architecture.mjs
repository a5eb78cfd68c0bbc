#!/usr/bin/env node
// Checks the dependency rules of .dependency-cruiser.cjs, and that no two folders of src/ import
// each other, directly or round a loop (a module-level check cannot see a loop that passes
// through different files of each folder). Exits 1 with what is wrong; run by `npm test`.
//
// Usage: node scripts/check-architecture.mjs [project-root]   (default: this project)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(process.argv[2] ?? path.join(here, '..'));
const depcruise = path.join(here, '..', 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const config = path.join(here, '..', '.dependency-cruiser.cjs');

let raw;
try {
  raw = execFileSync(process.execPath, [depcruise, 'src', '--config', config, '--output-type', 'json'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
} catch (err) {
  // Violations make depcruise exit non-zero; its report is still on stdout.
  if (!err.stdout) throw err;
  raw = err.stdout;
}
const { modules, summary } = JSON.parse(raw);
const problems = summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);

/** `src/items/service.ts` -> `items`; files at the top of src/ stand for themselves. */
const folderOf = (file) => {
  const parts = file.split('/');
  return parts[0] === 'src' && parts.length > 2 ? parts[1] : null;
};
const edges = new Map();
for (const m of modules) {
  const from = folderOf(m.source);
  if (!from) continue;
  for (const d of m.dependencies) {
    const to = d.resolved ? folderOf(d.resolved) : null;
    if (!to || to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    edges.get(from).set(to, `${m.source} -> ${d.resolved}`);
  }
}

// Every folder loop, reported once from its smallest folder name.
const loops = new Set();
const walk = (start, at, trail, seen) => {
  for (const [next, via] of edges.get(at) ?? []) {
    if (next === start) loops.add([...trail, via].join('\n    '));
    else if (next > start && !seen.has(next)) walk(start, next, [...trail, via], new Set([...seen, next]));
  }
};
for (const folder of [...edges.keys()].sort()) walk(folder, folder, [], new Set([folder]));
for (const loop of loops) problems.push(`folder-loop:\n    ${loop}`);

if (problems.length) {
  console.error(`Architecture check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(
  `Architecture check: ${summary.totalCruised} modules, ${summary.totalDependenciesCruised} dependencies, no violations, no folder loops.`,
);
