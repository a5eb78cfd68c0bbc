// Bundles the compiled server (dist/server.js) and the packages it loads into one module,
// dist/bundle/server.js, the file `npm start` runs (what it loads only when needed, such as the
// PostgreSQL driver, in chunks beside it: see below). Node otherwise resolves, reads and compiles
// about a thousand files at every start (Kysely and TypeBox alone are some 450): one file
// starts the server in about half the time.
//
// Left outside the bundle: better-sqlite3 (a native addon), pg-native (optional, absent), and
// @fastify/swagger-ui, which serves files from its own directory, and email-reply-parser, whose
// regular expressions hold non-ASCII text that esbuild leaves as written (see the end). CommonJS code in the bundle has
// no __dirname, so any package added later that reads files beside itself (a pino transport, for
// one) must be left outside too. The bundle lies as deep under
// the project as the modules it is made of (dist/<folder>/), so a path one of them takes relative
// to itself (package.json from http/openapi.js) holds in the bundle too.
//
// The command line (bin/shiplog.js) runs from dist/bundle/cli.js, made the same way but split:
// what a command imports when it runs is a chunk of its own (dist/bundle/cli-*.js), so that
// `shiplog --help` loads a few kilobytes and a command only what it uses.
import fs from 'node:fs';
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['better-sqlite3', 'pg-native', '@fastify/swagger-ui', 'email-reply-parser'],
  // Fewer bytes to parse at start. Function names stay (esbuild renames only a few that collide),
  // so a stack trace still names its functions, but its line numbers point into a few long lines:
  // no source map, because Node's --enable-source-maps reads it at every start (a tenth of a
  // second). Run dist/server.js, the unbundled build, to debug with real lines.
  minifyWhitespace: true,
  minifySyntax: true,
  // The CommonJS packages inside an ES module still call require() for Node's own modules.
  banner: {
    js:
      "import { createRequire as shiplogRequire } from 'node:module'; " +
      'const require = shiplogRequire(import.meta.url);',
  },
  // The packages' license comments go beside the bundle, in server.js.LEGAL.txt.
  legalComments: 'external',
  logLevel: 'warning',
};

// Chunks are named by their content: those of an earlier build would pile up.
for (const name of fs.existsSync('dist/bundle') ? fs.readdirSync('dist/bundle') : [])
  if (/^(cli|server)-\w+\.js(\.LEGAL\.txt)?$/.test(name)) fs.rmSync(`dist/bundle/${name}`);
/** `entry` bundled into dist/bundle/<name>.js, what it imports only when it runs in chunks of its own (<name>-*.js). */
const bundleSplit = (name, entry) =>
  build({
    ...common,
    entryPoints: { [name]: entry },
    outdir: 'dist/bundle',
    splitting: true,
    chunkNames: `${name}-[hash]`,
  });

// What the server imports only when it needs it (the PostgreSQL driver, the inbound mail parser
// and SMTP server, the metrics) is a chunk of its own (dist/bundle/server-*.js), loaded then. V8
// keeps the source of every script it runs for as long as the process lives, so a process on
// SQLite that receives no mail does not hold their megabyte and more of text.
await bundleSplit('server', 'dist/server.js');
await bundleSplit('cli', 'dist/cli.js');

// V8 keeps a script's source for as long as it runs, one byte per character only when every
// character is ASCII: the bundle's 2.5 MB of source would hold 5 MB of the heap for one '·'.
// esbuild escapes what it can; text of a tagged template it leaves as written, so write
// such characters there as escapes (\u00b7).
for (const name of fs.readdirSync('dist/bundle').filter((n) => /^server(-\w+)?\.js$/.test(n))) {
  const bundled = fs.readFileSync(`dist/bundle/${name}`, 'utf8');
  const wide = /[\u0080-\uffff]/.exec(bundled);
  if (wide) {
    const around = bundled.slice(Math.max(0, wide.index - 60), wide.index + 20);
    throw new Error(`dist/bundle/${name} is not ASCII: ${JSON.stringify(wide[0])} in …${around}…`);
  }
}
