import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { openDatabase, type Db } from '../src/db/connection.js';
import { type AxeOptions, axeViolations, launchChromium, mailedLink, type RunningBrowser, apiCall } from './browser.js';
import { makeProduct, makeUser, readEml, tempDir, type TestUser } from './helpers.js';
import { startServer, stopProcess, waitFor, type Server } from './processes.js';
import { databaseOptionsFor } from './storage.js';

/*
 * Every page and state of Shiplog's own, checked by axe-core in chromium at a desktop's width and a
 * phone's, against the built server on loopback with seeded data. One browser, one page object per
 * person; each page is loaded once and checked at both widths.
 */

/**
 * What of Swagger UI's markup its stylesheet cannot change: an operation's summary is a button holding
 * buttons, its headings skip levels, and it has no landmarks. Its colours are Shiplog's to fix.
 */
const SWAGGER_UI_OWN = { disable: ['nested-interactive', 'heading-order', 'region'] };

const DESKTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };

let server: Server;
let db: Db;
let chrome: RunningBrowser;
let base: string;
let receiver: http.Server;
const dataDir = tempDir('shiplog-axe-');
const seenMail = new Set<string>();

before(async () => {
  server = await startServer({
    dataDir,
    envForPort: (port) => ({ PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn', WEBHOOKS_ALLOW_PRIVATE: '1' }),
  });
  base = `http://127.0.0.1:${server.port}`;
  db = await openDatabase(await databaseOptionsFor(dataDir));
  chrome = await launchChromium();
  receiver = http.createServer((_req, res) => res.writeHead(204).end());
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
});

after(async () => {
  await chrome?.stop();
  await db?.destroy();
  receiver?.close();
  if (server) await stopProcess(server.child);
});

/** The API, as a deploy script or client calls it. */
const api = (user: TestUser, method: string, url: string, params?: Record<string, string>) =>
  apiCall(base, user, method, url, params);

/** What axe-core found, by page, state and width: gathered over the whole walk so one run names every fault. */
const found: string[] = [];

/**
 * The page as it is now, at both widths (the same document, so one load): the desktop in the light
 * scheme, the phone in the dark one (colours depend on the scheme alone, the layout on the width
 * alone); at the phone's width the page itself never scrolls sideways (a table scrolls in its box).
 */
async function bothWidths(page: Page, label: string, options: AxeOptions = {}): Promise<void> {
  for (const [size, scheme] of [
    [DESKTOP, 'light'],
    [PHONE, 'dark'],
  ] as const) {
    await page.setViewportSize(size);
    await page.emulateMedia({ colorScheme: scheme });
    const at = `${label} at ${size.width}x${size.height} (${scheme})`;
    for (const v of await axeViolations(page, options))
      found.push(`${at}: ${v.id} (${v.impact}) ${v.help}; at ${v.targets.join(' | ')}`);
    if (size === PHONE) {
      const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (wide > 0) found.push(`${at}: the page scrolls ${wide} px sideways, past it: ${await overflowing(page)}`);
      for (const cell of await brokenWords(page)) found.push(`${at}: a word broken inside a table cell: ${cell}`);
    }
  }
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: 'light' });
}

/** The innermost elements that reach past the right edge of the window. */
function overflowing(page: Page): Promise<string> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll('body *'))
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && e.children.length === 0)
      .slice(0, 3)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}`)
      .join(' | '),
  );
}

/** The words in table cells that the browser laid out over more than one line. */
function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const broken: string[] = [];
    for (const cell of Array.from(document.querySelectorAll('th, td'))) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.textContent ?? '';
        for (const m of text.matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, m.index!);
          range.setEnd(node, m.index! + m[0].length);
          const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
          if (tops.size > 1) broken.push(m[0]);
        }
      }
    }
    return broken;
  });
}

async function visit(page: Page, url: string, label: string, status = 200): Promise<void> {
  const res = await page.goto(`${base}${url}`);
  assert.equal(res?.status(), status, `${label}: ${url}`);
  await bothWidths(page, label);
}

const SIGN_IN_LINK = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/;

/** A new browser page, signed in as `email` through the mailed link; the sign-in states are checked on the way. */
async function signIn(email: string, check: boolean): Promise<Page> {
  const context = await chrome.browser.newContext({ viewport: DESKTOP });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  await page.goto(`${base}/app/sign-in`);
  if (check) await bothWidths(page, 'sign-in');
  if (check) {
    await page.getByLabel('Email').fill('not an address');
    await page.locator('form').evaluate((f: HTMLFormElement) => {
      f.noValidate = true;
    });
    await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
    await page.locator('#error-email').waitFor();
    await bothWidths(page, 'sign-in, refused');
  }
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
  await page.getByText('a sign-in link is on its way').waitFor();
  if (check) await bothWidths(page, 'sign-in, link sent');
  const link = await mailedLink(dataDir, email, SIGN_IN_LINK, seenMail);
  await page.goto(`${base}${link}`);
  if (check) await bothWidths(page, 'sign-in link');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  assert.equal(new URL(page.url()).pathname, '/app/products');
  if (check) await visit(page, link, 'a used sign-in link', 410);
  return page;
}

/** A product with stories, sub-items, tags, deploys, a rollback, a comment, a webhook with a delivery. */
async function seed() {
  const owner = await makeUser(db, { firstName: 'Grace', lastName: 'Hopper' });
  const ada = await makeUser(db, { firstName: 'Ada', lastName: 'Lovelace' });
  const product = await makeProduct(db, owner, [ada], 'Accessible product');
  const p = `/api/products/${product.id}`;
  const story = await api(ada, 'POST', `${p}/items.json`, {
    type: 'story',
    who: 'reader',
    what: 'pages that work with a screen reader',
    why: 'everyone can ship',
    status: 'in-progress',
    score: 'L',
    tags: 'web,a11y',
    assigned_to: String(ada.user.id),
    description: 'Checked by **axe-core** at `1440x900` and `390x844`.\n\n- landmarks\n- contrast',
  });
  await api(ada, 'POST', `${p}/items.json`, { type: 'task', title: 'Label the landmarks', parent: `${story.number}` });
  for (const [status, title] of [
    ['backlog', 'Dark scheme'],
    ['completed', 'Focus rings'],
    ['accepted', 'Type scale'],
  ])
    await api(owner, 'POST', `${p}/items.json`, { type: 'defect', title, status, tags: 'web' });
  await api(owner, 'POST', `${p}/items/${story.number}/comments.json`, { body: 'Looks **good** on a phone.' });
  await api(owner, 'POST', `${p}/deploys.json`, { environment: 'staging', numbers: `${story.number}`, version: '2.0' });
  await api(owner, 'POST', `${p}/deploys.json`, {
    environment: 'production',
    numbers: `${story.number}`,
    version: '2.0',
  });
  const deploy = await api(owner, 'POST', `${p}/deploys.json`, {
    environment: 'production',
    numbers: `${story.number}`,
    version: '2.1',
  });
  await api(owner, 'POST', `${p}/deploys.json`, { environment: 'production', rollback: 'true', version: '2.0' });
  const { port } = receiver.address() as { port: number };
  const webhook = await api(owner, 'POST', `${p}/webhooks.json`, {
    url: `http://127.0.0.1:${port}/hook`,
    events: 'item.created',
  });
  await api(owner, 'POST', `${p}/items.json`, { type: 'task', title: 'Announce it' });
  await waitFor('a webhook delivery', async () => {
    const deliveries = await api(owner, 'GET', `/api/products/${product.id}/webhooks/${webhook.id}/deliveries.json`);
    return deliveries.length > 0;
  });
  return { owner, ada, product, story, deploy, webhook };
}

describe('axe-core on every page', { timeout: 300_000 }, () => {
  test("Shiplog's pages and their states have no violations at desktop and phone width", async () => {
    const s = await seed();
    const product = `/app/products/${s.product.id}`;
    const item = `${product}/items/${s.story.number}`;

    // Signed out: the links people follow from mail, and the pages of errors.
    const anon = await (await chrome.browser.newContext({ viewport: DESKTOP })).newPage();
    await visit(anon, '/app/no-such-page', 'a page that does not exist', 404);
    const outsider = await makeUser(db);
    await api(s.owner, 'POST', `/api/products/${s.product.id}/people.json`, { email: outsider.email });
    const invitation = await mailedLink(dataDir, outsider.email, /https?:\/\/[^/\s]+(\/invitations\/[^\s]+)/, seenMail);
    await visit(anon, invitation, 'an invitation');
    await anon.getByRole('button', { name: 'Accept the invitation' }).click();
    await anon.getByText('You are now a member').waitFor();
    await bothWidths(anon, 'an invitation accepted');
    await visit(anon, invitation, 'an invitation accepted already');
    await visit(anon, '/invitations/not-a-token', 'an invitation link that is not one', 404);
    const unsubscribe = await mailedLink(dataDir, s.ada.email, /https?:\/\/[^/\s]+(\/unsubscribe\/[^\s]+)/, seenMail);
    await visit(anon, unsubscribe, 'unsubscribe');
    await anon.getByRole('button', { name: 'Stop following' }).click();
    await anon.getByText('You no longer follow').waitFor();
    await bothWidths(anon, 'unsubscribed');
    await anon.context().close();

    const page = await signIn(s.owner.email, true);
    await visit(page, '/app/products', 'products');
    // The scheme follows the system's: a dark page when the system prefers dark.
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(await background(), 'rgb(246, 247, 249)');
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await background(), 'rgb(21, 24, 28)');
    await page.emulateMedia({ colorScheme: 'light' });
    await visit(page, '/app/settings', 'settings');
    await page.getByRole('button', { name: 'Make a new API key' }).click();
    await page.getByText('Make a new API key?').waitFor();
    await bothWidths(page, 'settings, asked to confirm a new key');
    await page.getByRole('button', { name: 'Make a new API key' }).click();
    await page.locator('code.key').waitFor();
    await bothWidths(page, 'settings, a new key shown');
    await visit(page, `${product}/board`, 'board');
    await visit(page, `${product}/board?tag=web&mine=1`, 'board, filtered');
    await visit(page, `${product}/board?status=backlog&offset=1`, 'board, one column from its second card');
    await visit(page, `${product}/board?tags=${'x'.repeat(65)}`, 'board, a filter refused', 400);
    await visit(page, `${product}/board?q=${encodeURIComponent('web is:open')}`, 'board, filtered by a query');
    await visit(page, `${product}/board?q=is%3Asideways`, 'board, a query refused', 400);
    await visit(page, `/app/search?q=${encodeURIComponent('screen axe')}`, 'search results, a line of a description');
    await visit(page, `/app/search?q=${encodeURIComponent('status:backlog')}&limit=1`, 'search results, paged');
    await visit(page, '/app/search?q=nothing%20matches%20zzzq', 'search, no results');
    await visit(page, `/app/search?q=${encodeURIComponent('phone colour:red')}`, 'search, a query refused', 400);
    await page.goto(`${base}${product}/board`);
    await page.locator('#new-type').selectOption('story');
    await page.locator('form.item-form button[type=submit]').click();
    await page.locator('form.item-form .error, form.item-form .field-error').first().waitFor();
    await bothWidths(page, 'new item, refused');
    await visit(page, item, 'item');
    await visit(page, `${item}/environments`, "an item's environments");
    await visit(page, `${item}/deploys`, "an item's deploys");
    await visit(page, `${product}/items/${s.story.number + 1}`, 'a sub-item');
    await page.locator('form.item-form input[name=title]').fill('');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('form.item-form .field-error, form.item-form .error').first().waitFor();
    await bothWidths(page, 'item edit, refused');
    await visit(page, `${product}/deploys`, 'deploys');
    await visit(page, `${product}/deploys/${s.deploy.id}`, 'one deploy');
    await visit(page, `${product}/deploys/matrix`, 'the matrix');
    await visit(page, `${product}/notifications`, 'notifications');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForLoadState();
    await bothWidths(page, 'notifications, saved');
    await visit(page, `${product}/webhooks`, 'webhooks');
    await visit(page, `${product}/webhooks/${s.webhook.id}`, 'webhook deliveries');
    const theirs = await makeProduct(db, await makeUser(db), [], 'Not yours');
    await visit(page, `/app/products/${theirs.id}/board`, 'a product of others', 403);
    await visit(page, `${product}/items/9999`, 'an item that does not exist', 404);

    // The type scale: the page's title is the largest heading, each level smaller than the one above.
    await page.goto(`${base}${item}`);
    const scale = await page.evaluate(() =>
      ['h1', 'h2', 'h3'].map((tag) =>
        Array.from(document.querySelectorAll(tag)).map((h) => Number.parseFloat(getComputedStyle(h).fontSize)),
      ),
    );
    assert.ok(Math.max(...scale[1]) < Math.min(...scale[0]), `h1 ${scale[0]} over h2 ${scale[1]}`);
    if (scale[2].length) assert.ok(Math.max(...scale[2]) < Math.min(...scale[1]), `h2 ${scale[1]} over h3 ${scale[2]}`);

    // Every stop of the keyboard on the item's page shows a ring of at least 2 px.
    const faint: string[] = [];
    let stops = 0;
    for (let stop = 0; stop < 60; stop++) {
      await page.keyboard.press('Tab');
      const ring = await page.evaluate(() => {
        const e = document.activeElement as HTMLElement;
        const style = getComputedStyle(e);
        const name = `${e.tagName.toLowerCase()} ${(e.textContent ?? '').trim().slice(0, 30)}`;
        return { name, width: Number.parseFloat(style.outlineWidth), style: style.outlineStyle };
      });
      if (ring.name.startsWith('body')) break;
      stops++;
      if (ring.style === 'none' || ring.width < 2) faint.push(`${ring.name}: ${ring.style} ${ring.width}px`);
    }
    assert.ok(stops > 10, `${stops} stops`);
    assert.deepEqual(faint, [], 'focus rings');
    await page.context().close();

    // The reference of the API, where Shiplog sets its colours and viewport.
    const docs = await (await chrome.browser.newContext({ viewport: DESKTOP })).newPage();
    await docs.goto(`${base}/docs`);
    await docs.locator('.opblock-summary-method').first().waitFor();
    assert.equal(await docs.locator('meta[name=viewport]').count(), 1);
    await bothWidths(docs, '/docs', SWAGGER_UI_OWN);
    await docs.context().close();

    // Every message sent, as a mail program shows it: each text against its background.
    const reader = await (await chrome.browser.newContext({ viewport: PHONE })).newPage();
    const mailDir = path.join(dataDir, 'mail');
    for (const file of fs.readdirSync(mailDir).filter((f) => f.endsWith('.eml'))) {
      const mail = await readEml(fs.readFileSync(path.join(mailDir, file)));
      await reader.setContent(mail.html);
      for (const v of await axeViolations(reader, { rules: ['color-contrast'] }))
        found.push(`the message "${mail.headers.get('subject')}": ${v.help}; at ${v.targets.join(' | ')}`);
    }
    await reader.context().close();
    assert.deepEqual(found, [], `axe-core found:\n${found.join('\n')}`);
  });
});
