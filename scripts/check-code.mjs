#!/usr/bin/env node
// House limits that neither the compiler nor the linter checks: no line over 120 characters, and
// no function in src/ over 60 lines (migrations and the table of settings are lists, not logic).
// Exits 1 with each place that is over; run by `npm test`.
//
// Usage: node scripts/check-code.mjs [project-root]   (default: this project)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX_LINE = 120;
const MAX_FUNCTION_LINES = 60;
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(process.argv[2] ?? path.join(here, '..'));

const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', 'src', 'test', 'bench', 'scripts', 'bin'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => /\.(ts|mjs|js|cjs)$/.test(f) && !f.endsWith('.d.ts'));

const exempt = (file) => file.startsWith('src/db/migrations/') || file === 'src/config.ts';
const problems = [];

const functionLike = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

const nameOf = (node) => {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) return parent.name.getText();
  if (parent && ts.isCallExpression(parent)) return `callback of ${parent.expression.getText().slice(0, 40)}`;
  return '(anonymous)';
};

for (const file of files) {
  let text;
  try {
    text = readFileSync(path.join(root, file), 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  text.split('\n').forEach((line, i) => {
    if (line.length > MAX_LINE)
      problems.push(`${file}:${i + 1}: line of ${line.length} characters (at most ${MAX_LINE})`);
  });
  if (!file.startsWith('src/') || exempt(file)) continue;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (functionLike(node) && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = end - start + 1;
      if (lines > MAX_FUNCTION_LINES) {
        problems.push(`${file}:${start + 1}: ${nameOf(node)} is ${lines} lines (at most ${MAX_FUNCTION_LINES})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

if (problems.length) {
  console.error(`Code check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(
  `Code check: ${files.length} files, no line over ${MAX_LINE}, no function in src/ over ${MAX_FUNCTION_LINES} lines.`,
);
