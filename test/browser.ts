import fs from 'node:fs';
import path from 'node:path';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type BrowserServer,
  type Page,
} from 'playwright-core';
import { after, before } from 'node:test';
import { openDatabase, type Db } from '../src/db/connection.js';
import { sharedSecret } from '../src/settings.js';
import { operatorSignInLink } from '../src/web/index.js';
import { readEml } from './helpers.js';
import { startServer, stopProcess, waitFor, type Server } from './processes.js';
import { ROOT } from './root.js';
import { databaseOptionsFor } from './storage.js';

/** Debian's chromium: the browser tests drive it (nothing is downloaded); CI installs it. */
export const CHROMIUM = '/usr/bin/chromium';

export interface RunningBrowser {
  browser: Browser;
  /** Closes the connection, then stops the browser's process by its id. */
  stop(): Promise<void>;
}

/** Starts chromium headless, as a process of its own that the tests stop by its id. */
export async function launchChromium(): Promise<RunningBrowser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `The browser tests need chromium at ${CHROMIUM} (Debian: apt-get install -y chromium); .ci/run installs it.`,
    );
  }
  const server: BrowserServer = await chromium.launchServer({
    executablePath: CHROMIUM,
    // --no-sandbox: the tests may run as root (in containers), where chromium's sandbox cannot start.
    args: [
      '--no-sandbox',
      '--headless',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    timeout: 30_000,
  });
  const browser = await chromium.connect(server.wsEndpoint(), { timeout: 10_000 });
  const child = server.process();
  return {
    browser,
    async stop() {
      await Promise.race([
        browser.close().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 5_000)),
      ]);
      await stopProcess(child);
    },
  };
}

/**
 * The path of the sign-in link in the newest message written to `email` under the data directory
 * (the embedded default writes mail as `.eml` files); waits for the server's worker to write it.
 */
export async function mailedLink(
  dataDir: string,
  email: string,
  pattern: RegExp,
  seen: Set<string> = new Set(),
): Promise<string> {
  const dir = path.join(dataDir, 'mail');
  let found: string | undefined;
  await waitFor(`a message to ${email} with ${pattern}`, async () => {
    if (!fs.existsSync(dir)) return false;
    for (const file of fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.eml') && !seen.has(f))
      .sort()
      .reverse()) {
      const mail = await readEml(fs.readFileSync(path.join(dir, file)));
      if (!(mail.headers.get('to') ?? '').toLowerCase().includes(email.toLowerCase())) continue;
      const match = pattern.exec(mail.text);
      if (match) {
        seen.add(file);
        found = match[1];
        return true;
      }
    }
    return false;
  });
  return found!;
}

let axeSource: string | undefined;

/** One rule axe-core found broken on a page: which, how badly, and where (the first few elements). */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** What to check: parts of the page to leave out (CSS selectors, for what Shiplog does not render), or some rules. */
export interface AxeOptions {
  exclude?: string[];
  rules?: string[];
  /** Rules not to run: for markup of a library's that Shiplog only styles. */
  disable?: string[];
}

/**
 * Runs axe-core (every rule it has, best practices included, unless `rules` names some) on the page
 * as it is now and gives the violations. Its source is evaluated through the debugging protocol,
 * which the pages' script policy does not govern, so a page of any context can be checked.
 */
export async function axeViolations(page: Page, options: AxeOptions = {}): Promise<AxeViolation[]> {
  const file = path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js');
  axeSource ??= fs.readFileSync(file, 'utf8');
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(`${axeSource}\n;0`);
  return page.evaluate(
    async ({ exclude, rules, disable }) => {
      const axe = (window as unknown as { axe: any }).axe;
      const context = exclude?.length ? { exclude: exclude.map((s) => [s]) } : document;
      const only = rules?.length ? { runOnly: { type: 'rule', values: rules } } : {};
      const off = disable?.length ? { rules: Object.fromEntries(disable.map((id) => [id, { enabled: false }])) } : {};
      const result = await axe.run(context, { resultTypes: ['violations'], ...only, ...off });
      return result.violations.map((v: any) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')),
      }));
    },
    { exclude: options.exclude, rules: options.rules, disable: options.disable },
  );
}

/**
 * Fails, naming each rule and where it is broken, unless axe-core finds nothing on the page. Page
 * tests call it wherever a page reaches a state worth checking.
 */
export async function assertAccessible(page: Page, label: string, options: AxeOptions = {}): Promise<void> {
  const found = await axeViolations(page, options);
  if (found.length === 0) return;
  const lines = found.map((v) => `  ${v.id} (${v.impact}): ${v.help}; at ${v.targets.join(' | ')}`);
  throw new Error(`axe-core on ${label} (${page.url()}):\n${lines.join('\n')}`);
}

/** The API on a running server (`base`), as a deploy script or client calls it; fails the test on an error answer. */
export async function apiCall(
  base: string,
  user: { auth: string },
  method: string,
  url: string,
  params?: Record<string, string>,
): Promise<any> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: user.auth, ...(params ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: params ? new URLSearchParams(params).toString() : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** What a browser test file works with: its server, the server's database, chromium, the address. */
export interface BrowserWorld {
  server: Server;
  db: Db;
  chrome: RunningBrowser;
  base: string;
}

/**
 * Starts the built server on `dataDir` (with `env`), opens its database and starts chromium before
 * the file's tests, and stops them after, by their process ids; `ready` receives them. No
 * PUBLIC_URL: the address the server derives is the one the browser uses.
 */
export function browserWorld(dataDir: string, env: NodeJS.ProcessEnv, ready: (world: BrowserWorld) => void): void {
  let world: Partial<BrowserWorld> = {};
  before(async () => {
    const server = await startServer({ dataDir, env: { LOG_LEVEL: 'warn', ...env } });
    world = { server, base: `http://127.0.0.1:${server.port}` };
    world.db = await openDatabase(await databaseOptionsFor(dataDir));
    world.chrome = await launchChromium();
    ready(world as BrowserWorld);
  });
  after(async () => {
    await world.chrome?.stop();
    await world.db?.destroy();
    if (world.server) await stopProcess(world.server.child);
  });
}

const SIGN_IN_LINK = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/;

/** Signs `email` in on `page` through the sign-in page and the link mailed to the data directory. */
export async function signInByLink(page: Page, base: string, dataDir: string, email: string, seen: Set<string>) {
  await page.goto(`${base}/app/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
  await page.getByText('a sign-in link is on its way').waitFor();
  await page.goto(`${base}${await mailedLink(dataDir, email, SIGN_IN_LINK, seen)}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => !url.pathname.startsWith('/app/sign-in'));
}

/**
 * A new browser context already signed in as `email`, for the tests about what comes after: a
 * sign-in link made as an operator makes one (`shiplog user login-link`), posted by the
 * context's own request client, whose cookies are the context's. No page is rendered on the way;
 * the way in through the pages and the mailed link is what the sign-in tests and the
 * accessibility walk go through.
 */
export async function signedInContext(
  browser: Browser,
  base: string,
  db: Db,
  email: string,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const key = await sharedSecret(db, 'signin_key');
  const link = new URL(await db.transaction().execute((trx) => operatorSignInLink(trx, key, base, email))).pathname;
  const context = await browser.newContext(options);
  context.setDefaultTimeout(10_000);
  const res = await context.request.post(`${base}${link}`, { maxRedirects: 0 });
  if (res.status() !== 303) throw new Error(`signing ${email} in: ${res.status()} ${await res.text()}`);
  if (!(await context.cookies(base)).some((c) => c.name === 'shiplog_session'))
    throw new Error(`signing ${email} in: no session cookie`);
  return { context, page: await context.newPage() };
}
