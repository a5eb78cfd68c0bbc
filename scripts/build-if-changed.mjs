// `npm start` and `npm test` build through this: dist/ is built again (npm run build) only when what
// it is made of has changed since the last build. That is the sources, the TypeScript and bundle
// settings, and the package files (the bundle holds the packages): a `git pull` or an `npm install`
// that changes any of them builds again. Their hash is kept in dist/.build-stamp after a build
// succeeds; contents are compared, not times, so a checkout that only touches files builds nothing.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const INPUTS = [
  'src',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/bundle.mjs',
];
const OUTPUTS = ['dist/server.js', 'dist/cli.js', 'dist/bundle/server.js', 'dist/bundle/cli.js'];
const STAMP = 'dist/.build-stamp';

process.chdir(fileURLToPath(new URL('..', import.meta.url)));

/** The files under `entry`, in a stable order (none when it is missing, as a lock file may be). */
function filesOf(entry) {
  const stat = fs.statSync(entry, { throwIfNoEntry: false });
  if (!stat) return [];
  if (!stat.isDirectory()) return [entry];
  return fs
    .readdirSync(entry)
    .sort()
    .flatMap((name) => filesOf(path.join(entry, name)));
}

function inputsHash() {
  const hash = crypto.createHash('sha256');
  for (const file of INPUTS.flatMap(filesOf)) hash.update(`${file}\0`).update(fs.readFileSync(file)).update('\0');
  return hash.digest('hex');
}

const digest = inputsHash();
const built =
  fs.existsSync(STAMP) && fs.readFileSync(STAMP, 'utf8') === digest && OUTPUTS.every((file) => fs.existsSync(file));
if (!built) {
  fs.rmSync(STAMP, { force: true });
  const run = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
  // The hash taken before the build: a source changed while it ran builds again next time.
  fs.writeFileSync(STAMP, digest);
}
