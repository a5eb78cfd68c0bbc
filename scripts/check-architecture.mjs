#!/usr/bin/env node
// Checks the dependency rules of .dependency-cruiser.cjs; that no two folders of src/ import
// each other, directly or round a loop (a module-level check cannot see a loop that passes
// through different files of each folder); and that no index.ts exports a function or value
// declared in a repository, whatever module it passes through on the way (a module-level check
// sees `export ... from` only when it is a module's one dependency on the other). Exits 1 with
// what is wrong; run by `npm test`.
//
// Usage: node scripts/check-architecture.mjs [project-root]   (default: this project)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

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

problems.push(...repositoryExports());

/**
 * Each value that an index.ts exports and a repository declares, followed through re-exports
 * and imports: its types may be offered, its functions never (another feature asks a service
 * operation instead). Reads the files of src/ alone, binding names without checking types.
 */
function repositoryExports() {
  const src = path.join(root, 'src');
  const files = fs
    .readdirSync(src, { recursive: true })
    .filter((f) => /\.(ts|mts)$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => path.join(src, f));
  const { config: tsconfig } = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(tsconfig ?? {}, ts.sys, root);
  const program = ts.createProgram(files, { ...options, noResolve: true, noLib: true, types: [], noEmit: true });
  const checker = program.getTypeChecker();
  const found = [];
  for (const file of files.filter((f) => /^src\/[^/]+\/index\.ts$/.test(path.relative(root, f)))) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(file));
    for (const exported of module ? checker.getExportsOfModule(module) : []) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaredIn = symbol.declarations?.[0]?.getSourceFile().fileName;
      if (!declaredIn || !(symbol.flags & ts.SymbolFlags.Value)) continue;
      const where = path.relative(root, declaredIn);
      if (/(^|\/)repository\.ts$/.test(where))
        found.push(`index-offers-no-repository: ${path.relative(root, file)} exports ${exported.name} of ${where}`);
    }
  }
  return found;
}

if (problems.length) {
  console.error(`Architecture check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
const { totalCruised: modulesCruised, totalDependenciesCruised: cruised } = summary;
console.log(`Architecture check: ${modulesCruised} modules, ${cruised} dependencies, no violations, no folder loops.`);
