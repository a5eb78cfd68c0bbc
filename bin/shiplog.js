#!/usr/bin/env node
// `deploy` runs in CI pipelines, with no database and none of the server's settings: it loads only
// its HTTP client, not the database drivers and server modules the admin commands are built on.
const args = process.argv.slice(2);
process.exitCode =
  args[0] === 'deploy'
    ? await (await import('../dist/pipeline/deploy.js')).deployCommand(args.slice(1))
    : await (await import('../dist/cli.js')).main(args);
