import { buildApp } from './app.js';
import { ConfigError, databaseOptions, loadConfig } from './config.js';
import { openDatabase } from './db/connection.js';
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
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
      await db.destroy();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  await recordPublicUrl(db, config.publicUrl).catch((err: unknown) =>
    app.log.warn({ err }, 'the address could not be recorded for the command line'),
  );
  if ((await countUsers(db)) === 0) process.stdout.write(firstRunHelp(config.publicUrl));
}

main().catch((err) => {
  process.stderr.write(`shiplog: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
