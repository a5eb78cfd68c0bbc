import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { openDatabase, type Db } from '../src/db/connection.js';
import { launchChromium, mailedLink, type RunningBrowser } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { startServer, stopProcess, type Server } from './processes.js';
import { databaseOptionsFor } from './storage.js';

/*
 * The pages in a real browser: Debian's chromium, driven by playwright-core, against the built
 * server on loopback. Each test makes its own people and product and signs in through the mail.
 * With SHIPLOG_SCREENSHOTS=1 the seeded board and item page are saved under docs/screenshots/.
 */

let server: Server;
let db: Db;
let chrome: RunningBrowser;
let base: string;
const dataDir = tempDir('shiplog-browser-');
const seenMail = new Set<string>();

before(async () => {
  server = await startServer({ dataDir, envForPort: (port) => ({ PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn' }) });
  base = `http://127.0.0.1:${server.port}`;
  db = await openDatabase(await databaseOptionsFor(dataDir));
  chrome = await launchChromium();
});

after(async () => {
  await chrome?.stop();
  await db?.destroy();
  if (server) await stopProcess(server.child);
});

/** The API, as a deploy script or client calls it. */
async function api(user: TestUser, method: string, url: string, params?: Record<string, string>): Promise<any> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: user.auth, ...(params ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: params ? new URLSearchParams(params).toString() : undefined,
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Item numbers of a column, in priority order, as the API reads them. */
async function order(user: TestUser, productId: number, status: string): Promise<number[]> {
  const items = await api(user, 'GET', `/api/products/${productId}/items.json?status=${status}&order_by=priority&limit=100`);
  return items.map((i: { number: number }) => i.number);
}

async function newContext(width = 1280): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await chrome.browser.newContext({ viewport: { width, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, dialogs };
}

const SIGN_IN_LINK = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/;

/** Asks for a link on the sign-in page (where the browser is), then follows the mailed one and presses the button. */
async function signInHere(page: Page, email: string): Promise<string> {
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
  await page.getByText('a sign-in link is on its way').waitFor();
  const link = await mailedLink(dataDir, email, SIGN_IN_LINK, seenMail);
  await page.goto(`${base}${link}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  return link;
}

async function signedIn(email: string, width?: number) {
  const session = await newContext(width);
  await session.page.goto(`${base}/app/sign-in`);
  await signInHere(session.page, email);
  assert.equal(new URL(session.page.url()).pathname, '/app/products');
  return session;
}

/** A person with a product of their own, holding items with these titles (backlog, in this order). */
async function productWithItems(titles: string[], name = 'Browser product') {
  const owner = await makeUser(db);
  const product = await makeProduct(db, owner, [], name);
  const numbers: number[] = [];
  for (const title of titles) numbers.push((await api(owner, 'POST', `/api/products/${product.id}/items.json`, { type: 'task', title, status: 'backlog' })).number);
  return { owner, product, numbers };
}

describe('the pages in chromium', { timeout: 120_000 }, () => {
  test('signing in from the link in the .eml file; the used link is refused', async () => {
    const person = await makeUser(db);
    const { context, page } = await newContext();
    try {
      await page.goto(`${base}/app/`);
      const link = await signInHere(page, person.email);
      assert.equal(new URL(page.url()).pathname, '/app/products');
      await page.getByText(person.email).waitFor();
      const again = await (await newContext()).context;
      const other = await again.newPage();
      await other.goto(`${base}${link}`);
      assert.ok(await other.getByText('has expired or has been used already').isVisible());
      await again.close();
    } finally {
      await context.close();
    }
  });

  test('an item made from the board; the keyboard moves a card; the API reads the order back', async () => {
    const { owner, product, numbers } = await productWithItems(['First', 'Second', 'Third']);
    const { context, page } = await signedIn(owner.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      await page.locator('#new-title').fill('Made in the browser');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(/\/items\/\d+$/);
      await page.getByRole('heading', { level: 1 }).getByText('#4').waitFor();
      assert.deepEqual(await order(owner, product.id, 'backlog'), [...numbers, 4]);

      await page.goto(`${base}/app/products/${product.id}/board`);
      const down = page.getByRole('button', { name: `Move #${numbers[0]} down` });
      await down.focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(new RegExp(`#item-${numbers[0]}$`));
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[1], numbers[0], numbers[2], 4]);
      await page.getByLabel(`Status for #${numbers[2]}`).selectOption('in-progress');
      await page.getByRole('button', { name: `Move #${numbers[2]} to the chosen status` }).press('Enter');
      await page.waitForURL(new RegExp(`#item-${numbers[2]}$`));
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[2]]);
    } finally {
      await context.close();
    }
  });

  test('dragging a card to a new place and to another column; the API reads the order back', async () => {
    const { owner, product, numbers } = await productWithItems(['Alpha', 'Beta', 'Gamma', 'Delta']);
    const { context, page } = await signedIn(owner.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      const card = (n: number) => page.locator(`#item-${n}`);
      // Gamma onto the upper half of Alpha: it goes first.
      let reloaded = page.waitForEvent('load');
      await card(numbers[2]).dragTo(card(numbers[0]), { targetPosition: { x: 20, y: 5 } });
      await reloaded;
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0], numbers[1], numbers[3]]);
      // Beta into the empty in-progress column.
      reloaded = page.waitForEvent('load');
      await card(numbers[1]).dragTo(page.locator('section.column[data-status="in-progress"]'));
      await reloaded;
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[1]]);
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0], numbers[3]]);
      // Delta into in-progress, above Beta.
      reloaded = page.waitForEvent('load');
      await card(numbers[3]).dragTo(card(numbers[1]), { targetPosition: { x: 20, y: 5 } });
      await reloaded;
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[3], numbers[1]]);
      assert.equal(await page.locator('section.column[data-status="in-progress"] li.card').count(), 2);
    } finally {
      await context.close();
    }
  });
});
