// A node:test reporter that shows where the suite's time goes: each test file's time (the sum of
// its top-level tests), slowest first, after the usual spec output of failures. Use it beside spec:
//   node --import tsx --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./scripts/test-times.mjs --test-reporter-destination=stderr test/*.test.ts
import path from 'node:path';

export default async function* testTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    const entry = files.get(file) ?? { ms: 0, tests: 0, failed: 0 };
    entry.ms += details.duration_ms;
    entry.tests += 1;
    if (event.type === 'test:fail') entry.failed += 1;
    files.set(file, entry);
  }
  const rows = [...files].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((sum, [, e]) => sum + e.ms, 0);
  yield 'seconds  tests  file\n';
  for (const [file, e] of rows) {
    const failed = e.failed ? `  (${e.failed} failed)` : '';
    const seconds = (e.ms / 1000).toFixed(1).padStart(7);
    yield `${seconds}  ${String(e.tests).padStart(5)}  ${path.relative('.', file)}${failed}\n`;
  }
  yield `${(total / 1000).toFixed(1).padStart(7)}         in all, over ${rows.length} files\n`;
}
