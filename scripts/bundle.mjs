// Bundles the compiled server (dist/server.js) and the packages it loads into one module,
// dist/bundle/server.js, the file `npm start` runs. Node otherwise resolves, reads and compiles
// about a thousand files at every start (Kysely and TypeBox alone are some 450): one file
// starts the server in about half the time.
//
// Left outside the bundle: better-sqlite3 (a native addon), pg-native (optional, absent), and
// @fastify/swagger-ui, which serves files from its own directory. CommonJS code in the bundle has
// no __dirname, so any package added later that reads files beside itself (a pino transport, for
// one) must be left outside too. The bundle lies as deep under
// the project as the modules it is made of (dist/<folder>/), so a path one of them takes relative
// to itself (package.json from http/openapi.js) holds in the bundle too.
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/server.js'],
  outfile: 'dist/bundle/server.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['better-sqlite3', 'pg-native', '@fastify/swagger-ui'],
  // Fewer bytes to parse at start. Function names stay (esbuild renames only a few that collide),
  // so a stack trace still names its functions, but its line numbers point into a few long lines:
  // no source map, because Node's --enable-source-maps reads it at every start (a tenth of a
  // second). Run dist/server.js, the unbundled build, to debug with real lines.
  minifyWhitespace: true,
  minifySyntax: true,
  // The CommonJS packages inside an ES module still call require() for Node's own modules.
  banner: { js: "import { createRequire as shiplogRequire } from 'node:module'; const require = shiplogRequire(import.meta.url);" },
  logLevel: 'warning',
});
