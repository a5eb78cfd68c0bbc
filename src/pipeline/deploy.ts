import crypto from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { postDeploy, type Credentials, type DeployRequest } from './api.js';
import { EXIT, Failure } from './failure.js';
import { compileItemPattern, DEFAULT_ITEM_PATTERN, itemNumbers, readRange, type Range } from './git.js';
import { formatReceipt } from './receipt.js';

// `shiplog deploy` runs in CI pipelines, where there is no database and none of the server's
// settings: this folder speaks HTTP only and imports nothing else of Shiplog (a rule of
// .dependency-cruiser.cjs), and bin/shiplog.js runs it without loading what the admin commands run on.

export const DEPLOY_USAGE =
  'shiplog deploy --product ID --env NAME --version V (--since REV [--until REV] | --numbers 1,2,3) ' +
  '[--notes-file F] [--dry-run] [--json] [--url URL] [--key KEY] [--email EMAIL] [--pattern REGEX] [--repo DIR]';

export const DEPLOY_SUMMARY =
  'Records a deploy through the HTTP API, for CI pipelines (no database needed): ' +
  'its items are the numbers the commit messages of since..until mention.';

const DEPLOY_HELP = `${DEPLOY_SUMMARY}

Options:
  --product ID      the product's id
  --env NAME        the environment deployed to (production, staging, ...)
  --version V       the version deployed
  --since REV       the revision deployed before this one (a tag or commit); the items are read from since..until
  --until REV       the revision deployed now (default HEAD)
  --numbers 1,2,3   the item numbers; git is not run
  --notes-file F    the deploy's notes (Markdown) from a file, - for standard input
  --dry-run         records nothing: shows what would be deployed and who would be emailed
  --json            prints the server's answer as it came
  --url URL         the server's address, such as https://shiplog.example.com (or SHIPLOG_URL)
  --key KEY         your API key (or SHIPLOG_API_KEY)
  --email EMAIL     your email, to send the key as HTTP Basic rather than as a Bearer token (or SHIPLOG_EMAIL)
  --pattern REGEX   finds item numbers in each commit message (subject and body), ignoring case; its first
                    capture group is the number (or SHIPLOG_ITEM_PATTERN; default ${DEFAULT_ITEM_PATTERN}: every #12)
  --repo DIR        the git repository (default: the current folder)

A run repeated for the same product, environment, version and commits (or numbers) sends the same
Idempotency-Key, so a retried pipeline step records and emails nothing twice.

Exit codes: 0 deployed (or dry run shown), 1 refused by the server, 2 options missing or malformed,
3 no item number in the range, 4 git failed (not installed, not a repository, unknown revision),
5 server not reachable.`;

const OPTIONS = {
  product: { type: 'string' },
  env: { type: 'string' },
  version: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  numbers: { type: 'string' },
  'notes-file': { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  url: { type: 'string' },
  key: { type: 'string' },
  email: { type: 'string' },
  pattern: { type: 'string' },
  repo: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface Options {
  productId: number;
  environment: string;
  version: string;
  /** Where the numbers come from: given, or read from a range of commits. */
  source:
    | { numbers: number[] }
    | { since: string; until: string; repo: string; pattern: RegExp; patternSource: string };
  notesFile: string | undefined;
  dryRun: boolean;
  json: boolean;
  base: URL;
  credentials: Credentials;
}

const usage = (message: string): Failure => new Failure(EXIT.usage, message);

/** The server's address as the base the API paths resolve against (a path prefix is kept). */
function parseBase(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usage(`the URL must be the server's address, such as https://shiplog.example.com; got "${raw}"`);
  }
  if (url.username || url.password) throw usage('the URL must not hold credentials: give them as --key and --email');
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usage(`the URL must start with http:// or https://; got "${raw}"`);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  url.search = '';
  url.hash = '';
  return url;
}

function parseNumbers(raw: string): number[] {
  const parts = raw
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  const bad = parts.find((n) => !/^\d+$/.test(n) || !Number.isSafeInteger(Number(n)));
  if (bad !== undefined) throw usage(`--numbers must be item numbers separated by commas; got "${bad}"`);
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

function parseOptions(args: string[]) {
  try {
    return parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw usage((e as Error).message);
  }
}

/**
 * The options, with the environment's SHIPLOG_* settings where an option is not given (an empty
 * value counts as unset).
 */
function readOptions(args: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const values = parseOptions(args);
  if (values.help) return 'help';
  const setting = (value: string | undefined, name: string): string | undefined => value || env[name] || undefined;
  const url = setting(values.url, 'SHIPLOG_URL');
  const key = setting(values.key, 'SHIPLOG_API_KEY');
  const missing = [
    !values.product && '--product',
    !values.env && '--env',
    !values.version && '--version',
    !values.since && values.numbers === undefined && '--since (or --numbers)',
    !url && '--url (or SHIPLOG_URL)',
    !key && '--key (or SHIPLOG_API_KEY)',
  ].filter((m): m is string => !!m);
  if (missing.length) throw usage(`missing ${missing.join(', ')}; see shiplog deploy --help`);
  if (values.since && values.numbers !== undefined) throw usage('give --since or --numbers, not both');
  if (values.until && !values.since) throw usage('--until needs --since');
  if (!/^\d+$/.test(values.product!) || !Number.isSafeInteger(Number(values.product)))
    throw usage(`--product must be a product id (digits); got "${values.product}"`);

  let source: Options['source'];
  if (values.numbers !== undefined) {
    source = { numbers: parseNumbers(values.numbers) };
  } else {
    const patternSource = setting(values.pattern, 'SHIPLOG_ITEM_PATTERN') ?? DEFAULT_ITEM_PATTERN;
    const pattern = compileItemPattern(patternSource);
    source = { since: values.since!, until: values.until || 'HEAD', repo: values.repo || '.', pattern, patternSource };
  }
  return {
    productId: Number(values.product),
    environment: values.env!,
    version: values.version!,
    source,
    notesFile: values['notes-file'],
    dryRun: values['dry-run'] === true,
    json: values.json === true,
    base: parseBase(url!),
    credentials: { key: key!, email: setting(values.email, 'SHIPLOG_EMAIL') },
  };
}

function readNotes(file: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8').trimEnd();
  } catch (e) {
    throw usage(`cannot read the notes file ${file}: ${(e as Error).message}`);
  }
}

/** The item numbers to deploy, and the range they were read from (with its commits) when they come from git. */
async function numbersToDeploy(source: Options['source']): Promise<{ numbers: number[]; range?: Range }> {
  if ('numbers' in source) {
    if (!source.numbers.length) throw new Failure(EXIT.noItems, '--numbers names no item');
    return { numbers: source.numbers };
  }
  const range = await readRange(source.repo, source.since, source.until);
  const numbers = itemNumbers(range.messages, source.pattern);
  const span = `${source.since}..${source.until}`;
  const commits = range.messages.length;
  if (commits === 0) throw new Failure(EXIT.noItems, `${span} holds no commit, so no item to deploy`);
  if (!numbers.length) {
    throw new Failure(
      EXIT.noItems,
      `no commit message in ${span} (${commits} commit${commits === 1 ? '' : 's'}) ` +
        `names an item (pattern ${source.patternSource})`,
    );
  }
  return { numbers, range };
}

/**
 * The same for every run of one deploy: the product, environment and version, and the commits
 * the range names (not the names given for them, so `HEAD` on a later commit is another deploy),
 * or the numbers given. The server answers a repeat with the first deploy and sends nothing.
 */
function idempotencyKey(options: Options, numbers: number[], range: Range | undefined): string {
  const what = range ? ['range', range.sinceId, range.untilId] : ['numbers', numbers.join(',')];
  const basis = JSON.stringify(['shiplog deploy', options.productId, options.environment, options.version, ...what]);
  return crypto.createHash('sha256').update(basis).digest('hex');
}

/**
 * Runs `shiplog deploy ARGS`: reads the item numbers, posts the deploy, prints the receipt.
 * Returns the exit code (EXIT); a failure is one line on `err`.
 */
export async function deployCommand(
  args: string[],
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  try {
    const options = readOptions(args, env);
    if (options === 'help') {
      out.write(`Usage: ${DEPLOY_USAGE}\n\n${DEPLOY_HELP}\n`);
      return EXIT.ok;
    }
    const notes = options.notesFile === undefined ? undefined : readNotes(options.notesFile);
    const { numbers, range } = await numbersToDeploy(options.source);
    const request: DeployRequest = {
      productId: options.productId,
      environment: options.environment,
      version: options.version,
      numbers,
      notes,
      dryRun: options.dryRun,
      idempotencyKey: idempotencyKey(options, numbers, range),
    };
    const answer = await postDeploy(options.base, options.credentials, request);
    out.write(`${options.json ? answer.text : formatReceipt(answer.json, request, range)}\n`);
    if (options.dryRun && answer.json.dry_run !== true) {
      throw new Failure(
        EXIT.refused,
        `the server does not know dry runs and recorded deploy ${String(answer.json.id)}`,
      );
    }
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof Failure)) throw error;
    err.write(`shiplog deploy: ${error.message}\n`);
    return error.exitCode;
  }
}
