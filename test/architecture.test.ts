import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { tempDir } from './helpers.js';

const CHECK = fileURLToPath(new URL('../scripts/check-architecture.mjs', import.meta.url));

/** Runs the architecture check on a small tree of the given files (path -> source). */
function check(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const root = tempDir('shiplog-arch-');
  fs.writeFileSync(
    path.join(root, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
      include: ['src'],
    }),
  );
  for (const [file, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), source);
  }
  return new Promise((resolve) => {
    execFile(process.execPath, [CHECK, root], { timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

test('the architecture check passes a tree that keeps the rules', { timeout: 90_000 }, async () => {
  const { code, output } = await check({
    'src/users/repository.ts': 'export const findUser = (id: number) => id;\n',
    'src/users/index.ts': "export { findUser } from './repository.js';\n",
    'src/items/service.ts':
      "import { findUser } from '../users/index.js';\nexport const owner = (id: number) => findUser(id);\n",
  });
  assert.equal(code, 0, output);
  assert.match(output, /no violations, no folder loops/);
});

test("the architecture check fails on a reach into another feature's repository, and on a folder loop", {
  timeout: 90_000,
}, async () => {
  const { code, output } = await check({
    'src/users/repository.ts': 'export const findUser = (id: number) => id;\n',
    'src/users/index.ts': "export { findUser } from './repository.js';\nexport { ownerName } from './names.js';\n",
    'src/users/names.ts':
      "import { itemTitle } from '../items/index.js';\nexport const ownerName = (id: number) => itemTitle(id);\n",
    'src/items/index.ts': "export { itemTitle } from './titles.js';\n",
    'src/items/titles.ts': 'export const itemTitle = (id: number) => String(id);\n',
    'src/items/service.ts':
      "import { findUser } from '../users/repository.js';\nimport { ownerName } from '../users/index.js';\nexport const owner = (id: number) => [findUser(id), ownerName(id)];\n",
  });
  assert.equal(code, 1, output);
  assert.match(output, /feature-internals: src\/items\/service\.ts -> src\/users\/repository\.ts/);
  assert.match(output, /folder-loop:/);
});

test("the architecture check fails when the deploy command's modules reach beyond pipeline/", {
  timeout: 90_000,
}, async () => {
  const { code, output } = await check({
    'src/config.ts': 'export const loadConfig = () => ({});\n',
    'src/pipeline/git.ts': 'export const readRange = () => [];\n',
    'src/pipeline/deploy.ts':
      "import { readRange } from './git.js';\nimport { loadConfig } from '../config.js';\nexport const run = () => [readRange(), loadConfig()];\n",
    'src/cli.ts': "import { run } from './pipeline/deploy.js';\nexport const main = () => run();\n",
  });
  assert.equal(code, 1, output);
  assert.match(output, /pipeline-is-a-client: src\/pipeline\/deploy\.ts -> src\/config\.ts/);
  assert.doesNotMatch(output, /pipeline\/git\.ts|src\/cli\.ts ->/);
});
