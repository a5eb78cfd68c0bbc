// `npm start` and `npm test` build through this: dist/ is built again (npm run build) only when what
// it is made of has changed since the last build. That is the sources, the TypeScript and bundle
// settings, and the package files (the bundle holds the packages): a `git pull` or an `npm install`
// that changes any of them builds again. Their hash is kept in dist/.build-stamp after a build
// succeeds; contents are compared, not times, so a checkout that only touches files builds nothing.
//
// It also links node_modules/.bin/shiplog to bin/shiplog.js: `npx shiplog` runs that link at once,
// where otherwise npm would load the whole package tree first (a second or more).
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

/** The files under `entry`, in a stable order. */
function filesOf(entry) {
  if (!fs.statSync(entry).isDirectory()) return [entry];
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

/**
 * The link npx finds, made only in a node_modules of this checkout's own: one shared with another
 * checkout (a symbolic link to it) is left as it is.
 */
function linkBin() {
  if (!fs.existsSync('node_modules')) return;
  const modules = fs.realpathSync('node_modules');
  if (path.dirname(modules) !== fs.realpathSync('.')) return;
  const link = path.join(modules, '.bin', 'shiplog');
  const target = path.join('..', '..', 'bin', 'shiplog.js');
  const current = fs.lstatSync(link, { throwIfNoEntry: false });
  if (current?.isSymbolicLink() && fs.readlinkSync(link) === target) return;
  fs.mkdirSync(path.dirname(link), { recursive: true });
  if (current) fs.rmSync(link);
  fs.symlinkSync(target, link);
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
linkBin();
