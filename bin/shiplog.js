#!/usr/bin/env node
// The bundled command line (scripts/bundle.mjs): one file to load instead of some hundreds, and the
// modules a command runs on only when it runs, so that `--help` and `deploy` (in CI pipelines, with
// no database) load neither the database drivers nor the server's modules.
process.exitCode = await (await import('../dist/bundle/cli.js')).main(process.argv.slice(2));
