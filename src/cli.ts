import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { addressGiven, databaseOptions, loadConfig, parseDatabaseUrl, type Config } from './config.js';
import type { CopySummary } from './db/backup.js';
import type { Db } from './db/connection.js';
import { AppError } from './errors.js';
import type { MailStatus } from './mail/index.js';
import { DEPLOY_SUMMARY, DEPLOY_USAGE, deployCommand } from './pipeline/deploy.js';
import type { DeliveryJson } from './webhooks/index.js';

// The modules a command runs on (the database drivers, the services) are imported when it runs:
// `shiplog --help` and a usage error answer without loading them, and each command loads only its own.

class UsageError extends Error {}

interface Command {
  usage: string;
  help: string;
  options: NonNullable<ParseArgsConfig['options']>;
  positionals: string[];
  /** Runs on the configured database, opened (and migrated) for the command. */
  run?(db: Db, args: string[], values: Record<string, string | boolean | undefined>, config: Config): Promise<string>;
  /**
   * Runs on the configuration alone, for the commands that handle the database file themselves:
   * restore must not open (and so create or migrate) the database it is about to replace.
   */
  runOnFiles?(args: string[], values: Record<string, string | boolean | undefined>, config: Config): Promise<string>;
}

/**
 * The configuration of a command as the server's: the links it prints or queues lead to the server
 * on the same database. Unless the environment says where that is (PUBLIC_URL, PORT or HOST, read
 * as the server reads them), the address the server recorded when it started is taken.
 */
async function serversConfig(db: Db, config: Config, env: NodeJS.ProcessEnv): Promise<Config> {
  if (addressGiven(env)) return config;
  const { recordedPublicUrl } = await import('./settings.js');
  const recorded = await recordedPublicUrl(db);
  return recorded ? Object.freeze({ ...config, publicUrl: recorded }) : config;
}

/** The one answer of backup and restore on PostgreSQL: its own tools do this properly. */
async function refuseOnPostgres(config: Config, command: string): Promise<void> {
  if (!config.databaseUrl) return;
  const { BackupError } = await import('./db/backup.js');
  throw new BackupError(
    `${command} works on the embedded SQLite database, and DATABASE_URL points to PostgreSQL. ` +
      "Use PostgreSQL's own tools: " +
      'pg_dump -Fc (and pg_restore to restore) while the servers keep running, or pg_basebackup for the whole cluster.',
  );
}

function formatCopy(heading: string, copy: CopySummary, ms: number): string {
  const schema =
    copy.migrations === copy.knownMigrations
      ? `${copy.migrations} of ${copy.knownMigrations} migrations`
      : `${copy.migrations} of ${copy.knownMigrations} migrations (a server applies the rest when it starts)`;
  return [
    heading,
    `size          ${copy.bytes} bytes (${copy.pages} pages of ${copy.pageSize} bytes)`,
    `products      ${copy.products}`,
    `items         ${copy.items}`,
    `deploys       ${copy.deploys}`,
    `pending mail  ${copy.pendingMail} outbox message(s)`,
    `schema        ${schema}`,
    'integrity     ok',
    ...(copy.foreign.length
      ? [`not Shiplog's  ${copy.foreign.join(', ')} (restore refuses a copy holding these)`]
      : []),
    `time          ${(ms / 1000).toFixed(2)} s`,
  ].join('\n');
}

function formatStatus(status: MailStatus): string {
  const lines = (['pending', 'sending', 'sent', 'failed'] as const).map((s) => `${s.padEnd(8)} ${status.counts[s]}`);
  lines.push(`oldest pending: ${status.oldestPendingAt ?? 'none'}`);
  lines.push(
    `oldest due:     ${status.oldestDueAt ? `${status.oldestDueAt} (waiting ${status.oldestDueSeconds} s)` : 'none'}`,
  );
  lines.push(`last delivery:  ${status.lastSentAt ?? 'none'}`);
  lines.push(`delivery:       ${status.stalled ? `STALLED. ${status.stalled}` : 'progressing'}`);
  if (status.recentErrors.length) {
    lines.push('last errors:');
    for (const e of status.recentErrors) {
      const state = e.status === 'failed' ? 'given up' : `retry at ${e.next_attempt_at}`;
      lines.push(`  #${e.id} to ${e.to} after ${e.attempts} attempt(s), ${state}: ${e.error}`);
    }
  }
  return lines.join('\n');
}

/** A delivery as one line of `webhooks log`. */
function formatDelivery(d: DeliveryJson): string {
  const answer = d.response_code === null ? '-' : String(d.response_code);
  const took = d.duration_ms === null ? '' : ` ${d.duration_ms} ms`;
  const state = d.status === 'pending' && d.next_attempt_at ? `pending (next ${d.next_attempt_at})` : d.status;
  const error = d.last_error ? `  ${d.last_error}` : '';
  const what = `${d.event} (event ${d.event_id})`;
  const outcome = `${state}  ${answer}${took}  ${d.attempts} attempt(s)${error}`;
  return `${d.created_at}  ${d.delivery_id}  webhook ${d.webhook_id}  ${what}  ${outcome}`;
}

/** A number given on the command line that names something (a product, a webhook). */
async function idArgument(name: string, raw: string): Promise<number> {
  const { digitsToId } = await import('./http/params.js');
  const id = digitsToId(raw);
  if (id === undefined) throw new UsageError(`${name} must be a number, got "${raw}".`);
  return id;
}

/** The keys the service signs with, by the name the command line gives them, and what replacing one ends. */
const SECRETS: Record<string, { setting: string; ends: string }> = {
  unsubscribe: { setting: 'unsubscribe_key', ends: 'unsubscribe and invitation links already mailed stop working' },
  'sign-in': { setting: 'signin_key', ends: 'sign-in links not yet used stop working' },
  session: { setting: 'session_cookie_key', ends: 'everyone signed in to the pages is signed out' },
};

const COMMANDS: Record<string, Command> = {
  'user add': {
    usage: 'shiplog user add EMAIL --first NAME --last NAME [--api-key KEY]',
    help: 'Creates a user and prints its API key (32 letters and digits; generated unless --api-key is given).',
    options: { first: { type: 'string' }, last: { type: 'string' }, 'api-key': { type: 'string' } },
    positionals: ['EMAIL'],
    async run(db, [email], v) {
      if (!v.first || !v.last) throw new UsageError('--first and --last are required.');
      const { createUser } = await import('./users/index.js');
      const { apiKey } = await db.transaction().execute((trx) =>
        createUser(trx, {
          email,
          firstName: String(v.first),
          lastName: String(v.last),
          apiKey: v['api-key'] as string | undefined,
        }),
      );
      return apiKey;
    },
  },
  'user key': {
    usage: 'shiplog user key EMAIL',
    help:
      'Issues a new API key for a user and prints it; the old key stops working, and the user is signed out of the ' +
      'pages everywhere.',
    options: {},
    positionals: ['EMAIL'],
    async run(db, [email]) {
      const { replaceApiKey } = await import('./web/index.js');
      return db.transaction().execute((trx) => replaceApiKey(trx, email));
    },
  },
  'user login-link': {
    usage: 'shiplog user login-link EMAIL',
    help:
      'Prints a link that signs the user in to the web pages (once, within 15 minutes); nothing is mailed. How the ' +
      'first admin gets in.',
    options: {},
    positionals: ['EMAIL'],
    async run(db, [email], _v, config) {
      const [{ sharedSecret }, { operatorSignInLink }] = await Promise.all([
        import('./settings.js'),
        import('./web/index.js'),
      ]);
      const key = await sharedSecret(db, 'signin_key');
      return db.transaction().execute((trx) => operatorSignInLink(trx, key, config.publicUrl, email));
    },
  },
  'product add': {
    usage: 'shiplog product add NAME --owner EMAIL',
    help: 'Creates a product with the owner as its admin member and prints the product id.',
    options: { owner: { type: 'string' } },
    positionals: ['NAME'],
    async run(db, [name], v) {
      if (!v.owner) throw new UsageError('--owner is required.');
      const [{ findUserByEmail }, { createProduct }] = await Promise.all([
        import('./users/index.js'),
        import('./products/index.js'),
      ]);
      const product = await db.transaction().execute(async (trx) => {
        const owner = await findUserByEmail(trx, String(v.owner).trim());
        if (!owner)
          throw new AppError(404, `No user with email ${String(v.owner)}; create it with "shiplog user add" first.`);
        return createProduct(trx, owner, name);
      });
      return String(product.id);
    },
  },
  'member add': {
    usage: 'shiplog member add PRODUCT_ID EMAIL [--admin]',
    help:
      "Makes an existing user a member (with --admin, an admin) of a product, at once and without mail (the API's " +
      'people.json sends an invitation instead).',
    options: { admin: { type: 'boolean' } },
    positionals: ['PRODUCT_ID', 'EMAIL'],
    async run(db, [productId, email], v) {
      const id = await idArgument('PRODUCT_ID', productId);
      const { addMemberByEmail } = await import('./products/index.js');
      const { product, admin } = await db
        .transaction()
        .execute((trx) => addMemberByEmail(trx, id, email, v.admin === true ? true : undefined));
      const role = admin ? 'an admin' : 'a member';
      return `${email.trim().toLowerCase()} is ${role} of product ${product.id} (${product.name}).`;
    },
  },
  'secrets rotate': {
    usage: `shiplog secrets rotate ${Object.keys(SECRETS).join('|')}`,
    help:
      'Replaces a signing key with a new random one. Restart every instance afterwards: ' +
      'each signs and checks with the new key from its start on, and then ' +
      Object.entries(SECRETS)
        .map(([name, s]) => `${name}: ${s.ends}`)
        .join('; ') +
      '.',
    options: {},
    positionals: ['NAME'],
    async run(db, [name]) {
      const secret = Object.hasOwn(SECRETS, name) ? SECRETS[name] : undefined;
      if (!secret) throw new UsageError(`NAME must be one of ${Object.keys(SECRETS).join(', ')}, got "${name}".`);
      const { replaceSharedSecret } = await import('./settings.js');
      await replaceSharedSecret(db, secret.setting);
      return `The ${name} key is replaced. Restart every instance; from then on ${secret.ends}.`;
    },
  },
  copy: {
    usage: 'shiplog copy --to postgres://USER:PASSWORD@HOST:PORT/DATABASE',
    help:
      'Copies the SQLite database under DATA_DIR (users and keys, products, items, deploys, followers, ' +
      'invitations, outbox, webhooks and their deliveries) into an empty PostgreSQL database, then checks that ' +
      'every table has the same number of rows.',
    options: { to: { type: 'string' } },
    positionals: [],
    async run(source, _args, v) {
      if (!v.to) throw new UsageError('--to is required.');
      const [{ dialectOf }, { openDatabase }, { copyDatabase, CopyError }] = await Promise.all([
        import('./db/dialect.js'),
        import('./db/connection.js'),
        import('./db/copy.js'),
      ]);
      if (dialectOf(source) !== 'sqlite')
        throw new UsageError('copy reads the SQLite database under DATA_DIR: run it without DATABASE_URL.');
      const target = await openDatabase({ dataDir: '', databaseUrl: parseDatabaseUrl(String(v.to)) });
      try {
        const report = await copyDatabase(source, target);
        const lines = report.map(
          (r) => `${r.table.padEnd(18)} ${String(r.source).padStart(9)} ${String(r.target).padStart(9)}`,
        );
        const mismatched = report.filter((r) => r.source !== r.target);
        if (mismatched.length)
          throw new CopyError(`Counts differ for ${mismatched.map((r) => r.table).join(', ')}:\n${lines.join('\n')}`);
        return [
          `${'table'.padEnd(18)} ${'sqlite'.padStart(9)} ${'postgres'.padStart(9)}`,
          ...lines,
          'Copied; every count matches.',
        ].join('\n');
      } finally {
        await target.destroy();
      }
    },
  },
  backup: {
    usage: 'shiplog backup FILE [--force]',
    help:
      "Copies the SQLite database under DATA_DIR to FILE while the server runs and writes (SQLite's online backup: " +
      'the database as of one moment), checks the copy, and prints what it holds. An existing FILE is replaced ' +
      'only with --force. On PostgreSQL, use pg_dump.',
    options: { force: { type: 'boolean' } },
    positionals: ['FILE'],
    async runOnFiles([file], v, config) {
      await refuseOnPostgres(config, 'backup');
      const [{ backupDatabase }, { sqliteFile }] = await Promise.all([
        import('./db/backup.js'),
        import('./db/connection.js'),
      ]);
      const started = performance.now();
      const copy = await backupDatabase(sqliteFile(config.dataDir), file, v.force === true);
      return formatCopy(`Backed up ${sqliteFile(config.dataDir)} to ${copy.file}.`, copy, performance.now() - started);
    },
  },
  restore: {
    usage: 'shiplog restore FILE',
    help:
      'Replaces the SQLite database under DATA_DIR with FILE (a copy made by "shiplog backup"), after checking it: ' +
      'undamaged, a Shiplog database, not from a newer version. Refused while a server or another command has the ' +
      'database open: stop the server first. On PostgreSQL, use pg_restore.',
    options: {},
    positionals: ['FILE'],
    async runOnFiles([file], _v, config) {
      await refuseOnPostgres(config, 'restore');
      const [{ restoreDatabase }, { sqliteFile }] = await Promise.all([
        import('./db/backup.js'),
        import('./db/connection.js'),
      ]);
      const started = performance.now();
      const copy = await restoreDatabase(file, sqliteFile(config.dataDir));
      return formatCopy(`Restored ${path.resolve(file)} to ${copy.file}.`, copy, performance.now() - started);
    },
  },
  'mail status': {
    usage: 'shiplog mail status [--json]',
    help:
      'Shows the outbox: messages by state, the oldest one not yet delivered, how long the oldest due one has ' +
      'waited, the last delivery, whether delivery is progressing, and the last errors.',
    options: { json: { type: 'boolean' } },
    positionals: [],
    async run(db, _args, v, config) {
      const { mailStatus } = await import('./mail/index.js');
      const status = await mailStatus(db, config.mailStallSeconds);
      return v.json ? JSON.stringify(status, null, 2) : formatStatus(status);
    },
  },
  'mail retry': {
    usage: 'shiplog mail retry [--failed]',
    help:
      'Makes every waiting message due now; with --failed, given-up messages are tried again too. A running server ' +
      'sends them within a second.',
    options: { failed: { type: 'boolean' } },
    positionals: [],
    async run(db, _args, v) {
      const { retryMail } = await import('./mail/index.js');
      const n = await retryMail(db, v.failed === true);
      return `${n} message(s) queued for delivery.`;
    },
  },
  'webhooks log': {
    usage: 'shiplog webhooks log PRODUCT_ID [--webhook ID] [--limit N] [--json]',
    help:
      "Shows the latest deliveries of a product's webhooks (or of one), newest first: when, the delivery's id, the " +
      "webhook, the event, its state, the receiver's status code, how long it took, the attempts, and the last " +
      'error.',
    options: { webhook: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
    positionals: ['PRODUCT_ID'],
    async run(db, [productId], v) {
      const webhookId = v.webhook === undefined ? undefined : await idArgument('--webhook', String(v.webhook));
      const limit = v.limit === undefined ? 50 : await idArgument('--limit', String(v.limit));
      const id = await idArgument('PRODUCT_ID', productId);
      const { deliveryLog, presentDelivery } = await import('./webhooks/index.js');
      const rows = (await deliveryLog(db, id, webhookId, Math.max(1, Math.min(limit, 1000)))).map(presentDelivery);
      if (v.json) return JSON.stringify(rows, null, 2);
      return rows.length ? rows.map(formatDelivery).join('\n') : 'No deliveries yet.';
    },
  },
  'webhooks replay': {
    usage: 'shiplog webhooks replay DELIVERY_ID',
    help:
      'Sends the event of a delivery to its webhook again: a new delivery with a new id, the same event id and ' +
      'payload. A running server sends it within a second.',
    options: {},
    positionals: ['DELIVERY_ID'],
    async run(db, [deliveryId]) {
      const { maskedUrl, replayDelivery } = await import('./webhooks/index.js');
      const replay = await db.transaction().execute((trx) => replayDelivery(trx, deliveryId));
      const webhook = `webhook ${replay.webhook.id} (${maskedUrl(replay.webhook.url)})`;
      return `Queued delivery ${replay.uid} of event ${replay.eventUid} to ${webhook}.`;
    },
  },
};

const RECEIVE_USAGE = 'shiplog mail receive [RECIPIENT]';
const RECEIVE_HELP =
  "Reads one message on standard input and takes it as the SMTP listener does (a reply to an item's mail becomes " +
  "a comment, files sent to an item's files address its attachments), for a Postfix or Exim pipe transport. " +
  `RECIPIENT is the address it was delivered to (Postfix: \${recipient}); without it the Delivered-To, ` +
  'X-Original-To, To and Cc headers are read. Exit status (sysexits.h): 0 taken, ignored (automatic mail) or ' +
  'refused and explained to its sender by Shiplog; 67 not an address of an item; 65 too large or unreadable; ' +
  '75 not stored now (the database, the configuration): the mail system tries again later.';

/**
 * `shiplog mail receive`: its own exit statuses, which a pipe transport reads (bounce or retry),
 * rather than the other commands' 0, 1 and 2.
 */
async function receiveCommand(args: string[], { stdin: input = process.stdin, out, env }: CliIo) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    out.write(`shiplog: ${(e as Error).message}\nUsage: ${RECEIVE_USAGE}\n`);
    return 64;
  }
  if (parsed.values.help) {
    out.write(`Usage: ${RECEIVE_USAGE}\n\n${RECEIVE_HELP}\n`);
    return 0;
  }
  let db: Db | undefined;
  try {
    const { openDatabase } = await import('./db/connection.js');
    db = await openDatabase(databaseOptions(loadConfig(env)));
    const config = await serversConfig(db, loadConfig(env), env);
    const { receiveFromPipe } = await import('./inbound/index.js');
    const { code, line } = await receiveFromPipe(db, config, input, parsed.positionals);
    out.write(`${line}\n`);
    return code;
  } catch (e) {
    // Nothing was stored: the mail system keeps the message and tries again.
    out.write(`4.3.0 shiplog: the message could not be stored now: ${(e as Error).message}\n`);
    return 75;
  } finally {
    await db?.destroy();
  }
}

function overview(): string {
  return [
    'Usage: shiplog <command> [options]',
    '',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage}\n      ${c.help}`),
    `  ${RECEIVE_USAGE}\n      ${RECEIVE_HELP}`,
    `  ${DEPLOY_USAGE}\n      ${DEPLOY_SUMMARY}`,
    '',
    'The database is the one under DATA_DIR (default ./data), the same the server uses; deploy uses only a ' +
      "server's API.",
    'Run "shiplog <command> --help" for one command.',
  ].join('\n');
}

/** Where a run of the command line reads and writes: the process's own, unless a caller gives others. */
export interface CliIo {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  /** The configuration's environment (DATA_DIR, DATABASE_URL, ...). */
  env: NodeJS.ProcessEnv;
  /** What `mail receive` reads (process.stdin is opened only then). */
  stdin?: NodeJS.ReadableStream;
}

/** Runs the admin command line; returns the exit code (0 done, 1 refused, 2 bad usage; deploy has more, see EXIT). */
export async function main(argv: string[], given: Partial<CliIo> = {}): Promise<number> {
  const io: CliIo = { out: process.stdout, err: process.stderr, env: process.env, ...given };
  const { out, err } = io;
  if (argv[0] === 'deploy') return deployCommand(argv.slice(1), out, err);
  if (argv[0] === 'mail' && argv[1] === 'receive') return receiveCommand(argv.slice(2), io);
  const words = COMMANDS[argv[0]] ? 1 : 2;
  const command = COMMANDS[argv.slice(0, words).join(' ')];
  if (!command) {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      out.write(`${overview()}\n`);
      return 0;
    }
    err.write(`shiplog: unknown command "${argv.join(' ')}".\n\n${overview()}\n`);
    return 2;
  }
  const parsed = parseCommandLine(command, argv.slice(words));
  if (typeof parsed === 'string') {
    err.write(`shiplog: ${parsed}\nUsage: ${command.usage}\n`);
    return 2;
  }
  if (parsed.values.help) {
    out.write(`Usage: ${command.usage}\n\n${command.help}\n`);
    return 0;
  }
  return execute(command, parsed, io);
}

/** The options and positionals of a command, or what is wrong with them. */
function parseCommandLine(command: Command, args: string[]) {
  try {
    const parsed = parseArgs({
      args,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (!parsed.values.help && parsed.positionals.length !== command.positionals.length)
      return `expected ${command.positionals.join(' ')}.`;
    return parsed;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Runs a command on the configured database; refusals are exit code 1, usage errors 2. */
async function execute(
  command: Command,
  parsed: { positionals: string[]; values: Record<string, string | boolean | undefined> },
  { out, err, env }: CliIo,
): Promise<number> {
  let db: Db | undefined;
  try {
    const config = loadConfig(env);
    if (command.runOnFiles) {
      out.write(`${await command.runOnFiles(parsed.positionals, parsed.values, config)}\n`);
    } else {
      const { openDatabase } = await import('./db/connection.js');
      db = await openDatabase(databaseOptions(config));
      out.write(`${await command.run!(db, parsed.positionals, parsed.values, await serversConfig(db, config, env))}\n`);
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`shiplog: ${e.message}\nUsage: ${command.usage}\n`);
      return 2;
    }
    const detail =
      e instanceof AppError && e.errors
        ? ` (${Object.entries(e.errors)
            .map(([k, v]) => `${k} ${v}`)
            .join('; ')})`
        : '';
    err.write(`shiplog: ${(e as Error).message}${detail}\n`);
    return 1;
  } finally {
    await db?.destroy();
  }
}
