import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's folder: the nearest above this module holding package.json. Found rather than
 * written as a relative path, because the helpers run from test/, from test/pg/, and bundled into
 * test files one or two folders deep under .test-build/ (scripts/run-tests.mjs).
 */
export const ROOT = (() => {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error('No package.json above the tests');
  }
})();
