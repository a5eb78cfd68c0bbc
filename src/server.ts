import { buildApp } from './app.js';
import { ConfigError, databaseOptions, loadConfig } from './config.js';
import { openDatabase } from './db/connection.js';
import { drain } from './http/lifecycle.js';
import { recordPublicUrl } from './settings.js';
import { countUsers } from './users/index.js';

function firstRunHelp(url: string): string {
  return [
    '',
    'Shiplog has no users yet. Create the first user and a product (in another terminal, in this folder):',
    '',
    '  npx shiplog user add you@example.com --first Ada --last Lovelace     # prints your API key',
    '  npx shiplog product add "My product" --owner you@example.com         # prints the product id',
    '',
    'Then call the API with your email and that key:',
    '',
    `  curl -u you@example.com:YOUR_API_KEY ${url}/api/products.json`,
    '',
  ].join('\n');
}

/** Reads the configuration, opens the database, serves, and shuts down cleanly on a signal. */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`shiplog: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  let log: { warn: (obj: object, msg: string) => void; info: (msg: string) => void } | undefined;
  const db = await openDatabase({
    ...databaseOptions(config),
    onCheckpointError: (message) =>
      log?.warn({ err: message }, 'background WAL checkpoints failing; trying again every turn'),
    onCheckpointRecovered: () => log?.info('background WAL checkpoints work again'),
  });
  const app = await buildApp({ config, db, startWorker: true, listenForMail: true });
  log = app.log;

  let closing = false;
  // SIGTERM (a supervisor, a rolling restart) drains: readiness fails, then the listener closes and
  // what is in flight finishes within DRAIN_TIMEOUT_MS. SIGINT (Ctrl-C at a terminal) stops at once.
  const shutdown = async (signal: string, delayMs: number) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    try {
      const outcome = await drain(app, { delayMs, timeoutMs: config.drainTimeoutMs });
      app.log.info(outcome, outcome.forced ? 'drained; connections still open were cut' : 'drained');
      await db.destroy();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM', config.drainDelayMs));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));

  await app.listen({ port: config.port, host: config.host });
  await recordPublicUrl(db, config.publicUrl).catch((err: unknown) =>
    app.log.warn({ err }, 'the address could not be recorded for the command line'),
  );
  if ((await countUsers(db)) === 0) process.stdout.write(firstRunHelp(config.publicUrl));
  if (!closing) app.lifecycle.ready();
}

main().catch((err) => {
  process.stderr.write(`shiplog: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
