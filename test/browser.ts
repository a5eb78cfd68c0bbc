import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserServer } from 'playwright-core';
import { readEml } from './helpers.js';
import { stopProcess, waitFor } from './processes.js';

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
