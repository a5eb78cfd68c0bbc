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
    'src/users/repository.ts': 'export type UserId = number;\nexport const selectUser = (id: UserId) => id;\n',
    'src/users/service.ts': [
      "import { selectUser, type UserId } from './repository.js';",
      "export type { UserId } from './repository.js';",
      'export const findUser = (id: UserId) => selectUser(id);',
      '',
    ].join('\n'),
    'src/users/index.ts': "export { findUser, type UserId } from './service.js';\n",
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
    'src/users/index.ts': "export { ownerName } from './names.js';\n",
    'src/users/names.ts':
      "import { itemTitle } from '../items/index.js';\nexport const ownerName = (id: number) => itemTitle(id);\n",
    'src/items/index.ts': "export { itemTitle } from './titles.js';\n",
    'src/items/titles.ts': 'export const itemTitle = (id: number) => String(id);\n',
    'src/items/service.ts': [
      "import { findUser } from '../users/repository.js';",
      "import { ownerName } from '../users/index.js';",
      'export const owner = (id: number) => [findUser(id), ownerName(id)];',
      '',
    ].join('\n'),
  });
  assert.equal(code, 1, output);
  assert.match(output, /feature-internals: src\/items\/service\.ts -> src\/users\/repository\.ts/);
  assert.match(output, /folder-loop:/);
});

test("the architecture check fails on an index.ts that offers a repository's functions, however they pass", {
  timeout: 90_000,
}, async () => {
  const { code, output } = await check({
    'src/users/repository.ts': [
      'export type UserId = number;',
      'export const findUser = (id: UserId) => id;',
      'export const countUsers = () => 0;',
      'export const keyOf = (id: UserId) => String(id);',
      '',
    ].join('\n'),
    // A value import and a re-export of the same module: one dependency to a module-level check.
    'src/users/service.ts': [
      "import { keyOf, type UserId } from './repository.js';",
      "export { findUser } from './repository.js';",
      "export type { UserId } from './repository.js';",
      'export const rotateKey = (id: UserId) => keyOf(id);',
      '',
    ].join('\n'),
    'src/users/index.ts': [
      "export { countUsers } from './repository.js';",
      "export { findUser, rotateKey, type UserId } from './service.js';",
      '',
    ].join('\n'),
    'src/jobs/run.ts': "import { rotateKey } from '../users/service.js';\nexport const run = () => rotateKey(1);\n",
  });
  assert.equal(code, 1, output);
  assert.match(output, /index-offers-no-repository: src\/users\/index\.ts -> src\/users\/repository\.ts/);
  assert.match(output, /src\/users\/index\.ts exports countUsers of src\/users\/repository\.ts/);
  assert.match(output, /src\/users\/index\.ts exports findUser of src\/users\/repository\.ts/);
  assert.match(output, /feature-internals: src\/jobs\/run\.ts -> src\/users\/service\.ts/);
  // Its types, and an operation of the service that reads through the repository, may be offered.
  assert.doesNotMatch(output, /UserId|rotateKey|keyOf/);
});

test("the architecture check fails when the deploy command's modules reach beyond pipeline/", {
  timeout: 90_000,
}, async () => {
  const { code, output } = await check({
    'src/config.ts': 'export const loadConfig = () => ({});\n',
    'src/pipeline/git.ts': 'export const readRange = () => [];\n',
    'src/pipeline/deploy.ts':
      "import { readRange } from './git.js';\nimport { loadConfig } from '../config.js';\n" +
      'export const run = () => [readRange(), loadConfig()];\n',
    'src/cli.ts': "import { run } from './pipeline/deploy.js';\nexport const main = () => run();\n",
  });
  assert.equal(code, 1, output);
  assert.match(output, /pipeline-is-a-client: src\/pipeline\/deploy\.ts -> src\/config\.ts/);
  assert.doesNotMatch(output, /pipeline\/git\.ts|src\/cli\.ts ->/);
});
