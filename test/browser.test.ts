import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { openDatabase, type Db } from '../src/db/connection.js';
import { apiCall, launchChromium, mailedLink, signedInContext, type RunningBrowser } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { startServer, stopProcess, type Server } from './processes.js';
import { databaseOptionsFor } from './storage.js';

/*
 * The pages in a real browser: Debian's chromium, driven by playwright-core, against the built
 * server on loopback. Each test makes its own people and product and signs in through the mail.
 */

let server: Server;
let db: Db;
let chrome: RunningBrowser;
let base: string;
const dataDir = tempDir('shiplog-browser-');
const seenMail = new Set<string>();

before(async () => {
  server = await startServer({
    dataDir,
    envForPort: (port) => ({ PUBLIC_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn' }),
  });
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
const api = (user: TestUser, method: string, url: string, params?: Record<string, string>) =>
  apiCall(base, user, method, url, params);

/** Item numbers of a column, in priority order, as the API reads them. */
async function order(user: TestUser, productId: number, status: string): Promise<number[]> {
  const items = await api(
    user,
    'GET',
    `/api/products/${productId}/items.json?status=${status}&order_by=priority&limit=100`,
  );
  return items.map((i: { number: number }) => i.number);
}

/** The messages of the dialogs the page opens, each dismissed. */
function dismissedDialogs(page: Page): string[] {
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return dialogs;
}

async function newContext(width = 1280): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await chrome.browser.newContext({ viewport: { width, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  return { context, page, dialogs: dismissedDialogs(page) };
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

/** A page signed in as `email` without going through the pages (the first test goes through them). */
async function signedIn(email: string, width = 1280) {
  const { context, page } = await signedInContext(chrome.browser, base, db, email, {
    viewport: { width, height: 800 },
  });
  return { context, page, dialogs: dismissedDialogs(page) };
}

/** A person with a product of their own, holding items with these titles (backlog, in this order). */
async function productWithItems(titles: string[], name = 'Browser product', members: TestUser[] = []) {
  const owner = await makeUser(db);
  const product = await makeProduct(db, owner, members, name);
  const numbers: number[] = [];
  for (const title of titles)
    numbers.push(
      (await api(owner, 'POST', `/api/products/${product.id}/items.json`, { type: 'task', title, status: 'backlog' }))
        .number,
    );
  return { owner, product, numbers };
}

describe('the pages in chromium', { timeout: 120_000 }, () => {
  test('signing in from the link in the .eml file; a used or expired link is refused', async () => {
    const person = await makeUser(db);
    const { context, page } = await newContext();
    try {
      await page.goto(`${base}/app/`);
      const link = await signInHere(page, person.email);
      assert.equal(new URL(page.url()).pathname, '/app/products');
      await page.getByText(person.email).waitFor();
      const again = (await newContext()).context;
      const other = await again.newPage();
      await other.goto(`${base}${link}`);
      assert.ok(await other.getByText('has expired or has been used already').isVisible());
      await again.close();

      // A link past its 15 minutes is refused too.
      const late = (await newContext()).context;
      const latePage = await late.newPage();
      await latePage.goto(`${base}/app/sign-in`);
      await latePage.getByLabel('Email').fill(person.email);
      await latePage.getByRole('button', { name: 'Send me a sign-in link' }).click();
      const expiring = await mailedLink(dataDir, person.email, SIGN_IN_LINK, seenMail);
      await db
        .updateTable('signin_links')
        .set({ expires_at: '2000-01-01T00:00:00+00:00' })
        .where('user_id', '=', person.user.id)
        .where('used_at', 'is', null)
        .execute();
      const refused = await latePage.goto(`${base}${expiring}`);
      assert.equal(refused?.status(), 410);
      await latePage.getByText('has expired or has been used already').waitFor();
      await late.close();
    } finally {
      await context.close();
    }
  });

  test('an item made from the board stays on it; the keyboard alone moves a card, announced, focus kept', async () => {
    const { owner, product, numbers } = await productWithItems(['First', 'Second', 'Third']);
    const { context, page } = await signedIn(owner.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      // c: the new item's form.
      await page.keyboard.press('c');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'new-type');
      await page.locator('#new-title').fill('Made in the browser');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(/\/board\?created=4#item-4$/);
      await page.getByRole('status').getByText('Created #4 Made in the browser in backlog.').waitFor();
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'item-4');
      assert.deepEqual(await order(owner, product.id, 'backlog'), [...numbers, 4]);

      await page.goto(`${base}/app/products/${product.id}/board`);
      const focused = () => page.evaluate(() => document.activeElement?.id);
      const announced = (text: string) =>
        page.waitForFunction((t) => document.getElementById('board-live')?.textContent === t, text);
      const loads: string[] = [];
      page.on('load', () => loads.push(page.url()));
      // j and k go between cards.
      await page.keyboard.press('j');
      assert.equal(await focused(), `item-${numbers[0]}`);
      await page.keyboard.press('j');
      assert.equal(await focused(), `item-${numbers[1]}`);
      await page.keyboard.press('k');
      assert.equal(await focused(), `item-${numbers[0]}`);
      // Shift+Down moves the card down its column, without a reload; the move is said, focus stays on it.
      await page.keyboard.press('Shift+ArrowDown');
      await announced(`Moved #${numbers[0]} down in backlog.`);
      assert.equal(await focused(), `item-${numbers[0]}`);
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[1], numbers[0], numbers[2], 4]);
      // Shift+Right to the next status.
      await page.keyboard.press('Shift+ArrowRight');
      await announced(`Moved #${numbers[0]} to in-progress.`);
      assert.equal(await focused(), `item-${numbers[0]}`);
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[0]]);
      assert.equal(
        await page.locator(`section.column[data-status="in-progress"] #item-${numbers[0]}`).count(),
        1,
        'the card is in its new column',
      );
      // The move menu, by keyboard too.
      await page.getByLabel(`Move #${numbers[2]}`).focus();
      await page.keyboard.press('Enter');
      await page.locator(`#item-${numbers[2]}`).getByRole('button', { name: 'To completed' }).press('Enter');
      await announced(`Moved #${numbers[2]} to completed.`);
      assert.equal(await focused(), `item-${numbers[2]}`);
      assert.deepEqual(await order(owner, product.id, 'completed'), [numbers[2]]);
      assert.deepEqual(loads, [], 'no page was loaded again');
      // ? shows the keys, Escape hides them.
      await page.keyboard.press('?');
      await page.getByRole('heading', { name: 'Keyboard' }).waitFor();
      assert.equal(await focused(), 'board-keys');
      await page.keyboard.press('Escape');
      await page.getByRole('heading', { name: 'Keyboard' }).waitFor({ state: 'hidden' });
      // f goes to the filter's query; / to the search box, as on every page.
      await page.keyboard.press('f');
      assert.equal(await focused(), 'filter-q');
      await page.locator('#filter-q').blur();
      await page.keyboard.press('/');
      assert.equal(await focused(), 'search-q');
    } finally {
      await context.close();
    }
  });

  test('More adds the next cards to their column in place; 10 cards show at 1440x900', async () => {
    const titles = Array.from({ length: 28 }, (_, i) => `Card ${i + 1}`);
    const { owner, product } = await productWithItems(titles);
    const { context, page } = await signedIn(owner.email);
    try {
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.goto(`${base}/app/products/${product.id}/board`);
      const cards = page.locator('section.column[data-status="backlog"] li.card');
      assert.equal(await cards.count(), 25);
      const seen = await cards.evaluateAll((all) => all.filter((c) => c.getBoundingClientRect().bottom <= 900).length);
      assert.ok(seen >= 10, `${seen} cards of the column in view`);
      const url = page.url();
      await page.getByRole('link', { name: 'More (3 left)' }).click();
      await page.waitForFunction(
        () => document.querySelectorAll('section.column[data-status="backlog"] li.card').length === 28,
      );
      assert.equal(page.url(), url, 'the same page');
      assert.equal(await page.getByRole('link', { name: /More/ }).count(), 0);
      assert.equal(await page.evaluate(() => document.activeElement?.textContent?.includes('Card 26')), true);
    } finally {
      await context.close();
    }
  });

  test('a change made through the API shows on an open board and item page within 2 s, one stream each', async () => {
    const { owner, product, numbers } = await productWithItems(['Before', 'Other']);
    const { context, page } = await signedIn(owner.email);
    const streams: string[] = [];
    const watch = (p: Page) =>
      p.on('request', (r) => {
        if (new URL(r.url()).pathname.endsWith('/events')) streams.push(r.url());
      });
    try {
      watch(page);
      await page.goto(`${base}/app/products/${product.id}/board`);
      await page.locator(`#item-${numbers[0]}`).getByText('Before').waitFor();
      const loads: string[] = [];
      page.on('load', () => loads.push(page.url()));
      await api(owner, 'POST', `/api/products/${product.id}/items/${numbers[0]}.json`, { title: 'After' });
      await page.locator(`#item-${numbers[0]}`).getByText('After').waitFor({ timeout: 2000 });
      await api(owner, 'POST', `/api/products/${product.id}/items.json`, { type: 'task', title: 'Brand new' });
      await page.locator('section.column[data-status="backlog"]').getByText('Brand new').waitFor({ timeout: 2000 });
      assert.deepEqual(loads, []);
      assert.equal(streams.length, 1, 'the board: one stream, kept while its columns are fetched again');

      await page.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
      await page.getByRole('heading', { name: /After/ }).first().waitFor();
      await api(owner, 'POST', `/api/products/${product.id}/items/${numbers[0]}.json`, { score: 'XL' });
      await page.locator('article.item').getByText('XL').first().waitFor({ timeout: 2000 });
      await api(owner, 'POST', `/api/products/${product.id}/items/${numbers[0]}.json`, { title: 'After again' });
      await page
        .getByRole('heading', { name: /After again/ })
        .first()
        .waitFor({ timeout: 2000 });
      assert.equal(streams.length, 2, 'the item page: one stream of its own, kept while the page follows changes');

      // The same person without script (the session's cookie, in a browser that runs none): no stream, and
      // the board's move menu and the item's edit form still work, as forms.
      streams.length = 0;
      const off = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 }, javaScriptEnabled: false });
      try {
        await off.addCookies(await context.cookies());
        const plain = await off.newPage();
        watch(plain);
        await plain.goto(`${base}/app/products/${product.id}/board`);
        await plain.getByLabel(`Move #${numbers[1]}`).click();
        await plain.locator(`#item-${numbers[1]}`).getByRole('button', { name: 'To completed' }).click();
        await plain.waitForLoadState();
        assert.deepEqual(await order(owner, product.id, 'completed'), [numbers[1]]);
        await plain.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
        await plain.locator('#edit-title').fill('Edited without script');
        await plain.locator('form:has(#edit-title) button[type=submit]').click();
        await plain.waitForLoadState();
        const item = await api(owner, 'GET', `/api/products/${product.id}/items/${numbers[0]}.json`);
        assert.equal(item.title, 'Edited without script');
        assert.deepEqual(streams, [], 'no stream is opened without script');
      } finally {
        await off.close();
      }
    } finally {
      await context.close();
    }
  });

  test('a new API key is made only after a confirmation step', async () => {
    const person = await makeUser(db);
    const { context, page } = await signedIn(person.email);
    try {
      await page.goto(`${base}/app/settings`);
      await page.getByRole('button', { name: 'Make a new API key' }).click();
      await page.getByText('Make a new API key?').waitFor();
      assert.equal(await page.locator('code.key').count(), 0);
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Make a new API key');
      const whoami = await fetch(`${base}/api/user/whoami.json`, { headers: { authorization: person.auth } });
      assert.equal(whoami.status, 200, 'the old key still works');
      await page.getByRole('button', { name: 'Make a new API key' }).click();
      await page.locator('code.key').waitFor();
      const after = await fetch(`${base}/api/user/whoami.json`, { headers: { authorization: person.auth } });
      assert.equal(after.status, 403, 'the old key stopped');
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
      const announced = (text: string) =>
        page.waitForFunction((t) => document.getElementById('board-live')?.textContent === t, text);
      // Gamma onto the upper half of Alpha: it goes first.
      await card(numbers[2]).dragTo(card(numbers[0]), { targetPosition: { x: 20, y: 5 } });
      await announced(`Moved #${numbers[2]} to backlog.`);
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0], numbers[1], numbers[3]]);
      // Beta into the empty in-progress column.
      await card(numbers[1]).dragTo(page.locator('section.column[data-status="in-progress"]'));
      await announced(`Moved #${numbers[1]} to in-progress.`);
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[1]]);
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0], numbers[3]]);
      // Delta into in-progress, above Beta.
      await card(numbers[3]).dragTo(card(numbers[1]), { targetPosition: { x: 20, y: 5 } });
      await announced(`Moved #${numbers[3]} to in-progress.`);
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[3], numbers[1]]);
      assert.equal(await page.locator('section.column[data-status="in-progress"] li.card').count(), 2);
    } finally {
      await context.close();
    }
  });

  test("on a phone, a finger on a card's grip drags it to a new place; columns are tabs", async () => {
    const { owner, product, numbers } = await productWithItems(['Uno', 'Dos', 'Tres']);
    const { context, page } = await signedIn(owner.email, 390);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      const touch = await context.newCDPSession(page);
      const finger = (type: 'touchStart' | 'touchMove', x: number, y: number) =>
        touch.send('Input.dispatchTouchEvent', { type, touchPoints: [{ x: Math.round(x), y: Math.round(y) }] });
      /** Puts a finger on the grip of card `n`; returns where it is. */
      const pressGrip = async (n: number) => {
        const grip = page.locator(`#item-${n} .grip`);
        // In the middle of the screen, away from the edges where a held finger scrolls the page.
        await grip.evaluate((e) => e.scrollIntoView({ block: 'center' }));
        // Until the page has stopped moving.
        const scrollY = () => page.evaluate(() => window.scrollY);
        let y = -1;
        let next = await scrollY();
        while (next !== y) {
          y = next;
          await page.waitForTimeout(50);
          next = await scrollY();
        }
        const box = (await grip.boundingBox())!;
        const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
        await finger('touchStart', at.x, at.y);
        return at;
      };
      /** Moves the finger from `from` to `to` in steps. */
      const slide = async (from: { x: number; y: number }, to: { x: number; y: number }) => {
        for (let step = 1; step <= 8; step++)
          await finger('touchMove', from.x + ((to.x - from.x) * step) / 8, from.y + ((to.y - from.y) * step) / 8);
      };
      const lift = async (said: string) => {
        await touch.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
        await page.waitForFunction((t) => document.getElementById('board-live')?.textContent === t, said);
      };

      // Tres above Uno, both on screen: the page does not scroll under the finger.
      const from = await pressGrip(numbers[2]);
      const scrolled = await page.evaluate(() => window.scrollY);
      const uno = (await page.locator(`#item-${numbers[0]}`).boundingBox())!;
      assert.ok(uno.y > 60, 'Uno is clear of the top edge, where a finger scrolls the page');
      await slide(from, { x: uno.x + 20, y: uno.y + 4 });
      assert.equal(
        await page.evaluate(() => window.scrollY),
        scrolled,
        'dragging by the grip does not scroll the page',
      );
      await lift(`Moved #${numbers[2]} to backlog.`);
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0], numbers[1]]);

      // One column at a time, with tabs: Dos goes to in-progress through its move menu, then shows there.
      const inProgress = page.locator('section.column[data-status="in-progress"]');
      assert.ok(!(await inProgress.isVisible()), 'only the first column shows');
      await page.getByLabel(`Move #${numbers[1]}`).click();
      await page.locator(`#item-${numbers[1]}`).getByRole('button', { name: 'To in-progress' }).click();
      await page.waitForFunction(
        (t) => document.getElementById('board-live')?.textContent === t,
        `Moved #${numbers[1]} to in-progress.`,
      );
      assert.deepEqual(await order(owner, product.id, 'in-progress'), [numbers[1]]);
      await page
        .locator('nav.column-tabs')
        .getByRole('link', { name: /in-progress/ })
        .click();
      await inProgress.locator(`#item-${numbers[1]}`).waitFor();
      assert.ok(!(await page.locator('section.column[data-status="backlog"]').isVisible()));
      assert.deepEqual(await order(owner, product.id, 'backlog'), [numbers[2], numbers[0]]);
    } finally {
      await context.close();
    }
  });

  test('a short_url from a deploy email leads a signed-out follower, through signing in, to the item', async () => {
    const follower = await makeUser(db);
    const { owner, product, numbers } = await productWithItems(['Ship the thing'], 'Deployed product', [follower]);
    await api(follower, 'POST', `/api/products/${product.id}/items/${numbers[0]}/follow.json`);
    await api(owner, 'POST', `/api/products/${product.id}/deploys.json`, {
      environment: 'production',
      numbers: String(numbers[0]),
      version: '1.4.2',
    });
    const shortUrl = await mailedLink(dataDir, follower.email, /https?:\/\/[^/\s]+(\/i\/\d+\/\d+\/)/, seenMail);

    const { context, page } = await newContext(390);
    try {
      await page.goto(`${base}${shortUrl}`);
      assert.equal(new URL(page.url()).pathname, '/app/sign-in');
      await signInHere(page, follower.email);
      assert.equal(new URL(page.url()).pathname, `/app/products/${product.id}/items/${numbers[0]}`);
      await page.getByRole('heading', { level: 1 }).getByText(`#${numbers[0]}`).waitFor();
      await page.getByRole('cell', { name: 'production' }).waitFor();
      await page.getByRole('cell', { name: '1.4.2' }).waitFor();
    } finally {
      await context.close();
    }
  });

  test('editing shows a refused value next to its field; follow and unfollow', async () => {
    const { owner, product, numbers } = await productWithItems(['Editable']);
    const { context, page } = await signedIn(owner.email, 390);
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
      await page.locator('#edit-title').fill('');
      await page.getByRole('button', { name: 'Save' }).click();
      const error = page.locator('#error-title');
      await error.waitFor();
      assert.match((await error.textContent()) ?? '', /title/);
      assert.equal(await page.locator('#edit-title').getAttribute('aria-describedby'), 'error-title');
      // The first refused field is in view and has the focus.
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'edit-title');
      assert.ok(
        await page.locator('#edit-title').evaluate((e) => {
          const box = e.getBoundingClientRect();
          return box.top >= 0 && box.bottom <= window.innerHeight;
        }),
      );
      assert.equal((await api(owner, 'GET', `/api/products/${product.id}/items/${numbers[0]}.json`)).title, 'Editable');

      await page.locator('#edit-title').fill('Edited in the browser');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('#error-title').waitFor({ state: 'detached' });
      await page.getByRole('status').getByText('Your changes are saved.').waitFor();
      assert.equal(await page.locator('#edit-title').inputValue(), 'Edited in the browser');
      assert.equal(
        (await api(owner, 'GET', `/api/products/${product.id}/items/${numbers[0]}.json`)).title,
        'Edited in the browser',
      );

      // The creator follows what they create: unfollow, then follow again.
      await page.getByRole('button', { name: 'Unfollow' }).click();
      await page.getByText('0 followers').waitFor();
      await page.getByRole('button', { name: 'Follow', exact: true }).click();
      await page.getByText('1 follower:').waitFor();
      await page.getByRole('button', { name: 'Unfollow' }).waitFor();
    } finally {
      await context.close();
    }
  });

  test('two people edit one item: different fields both kept; the same field shows both to the second', async () => {
    const bob = await makeUser(db, { firstName: 'Bob', lastName: 'B' });
    const { owner: ada, product, numbers } = await productWithItems(['Item fifty'], 'Two editors', [bob]);
    const n = numbers[0];
    const url = `${base}/app/products/${product.id}/items/${n}`;
    const read = () => api(ada, 'GET', `/api/products/${product.id}/items/${n}.json`);
    const adas = await signedIn(ada.email);
    const bobs = await signedIn(bob.email);
    try {
      // Both open the item; Bob changes the title and saves, then Ada, who opened it before, only the description.
      await adas.page.goto(url);
      await bobs.page.goto(url);
      await bobs.page.locator('#edit-title').fill("Bob's title");
      await bobs.page.getByRole('button', { name: 'Save' }).click();
      await bobs.page.getByRole('heading', { level: 2, name: "Bob's title" }).waitFor();
      await adas.page.locator('#edit-description').fill("Ada's description");
      await adas.page.getByRole('button', { name: 'Save' }).click();
      await adas.page.locator('.markdown').getByText("Ada's description").waitFor();
      let item = await read();
      assert.deepEqual([item.title, item.description], ["Bob's title", "Ada's description"]);
      assert.equal(
        await adas.page.locator('#edit-title').inputValue(),
        "Bob's title",
        "Ada's page shows Bob's title now",
      );

      // Both open it again and change the description: Bob saves first.
      await adas.page.goto(url);
      await bobs.page.goto(url);
      await bobs.page.locator('#edit-description').fill('Written by Bob');
      await bobs.page.getByRole('button', { name: 'Save' }).click();
      await bobs.page.locator('.markdown').getByText('Written by Bob').waitFor();
      await adas.page.locator('#edit-description').fill('Written by Ada');
      await adas.page.locator('#edit-score').selectOption('L');
      await adas.page.getByRole('button', { name: 'Save' }).click();
      const note = adas.page.locator('#conflict-description');
      await note.waitFor();
      assert.match(
        (await note.textContent()) ?? '',
        /Somebody else changed the description since you opened this form/,
      );
      assert.equal((await note.locator('.theirs').textContent())?.trim(), 'Written by Bob', "Bob's value is shown");
      assert.equal(
        await adas.page.locator('#edit-description').inputValue(),
        'Written by Ada',
        "Ada's is kept in the field",
      );
      item = await read();
      assert.deepEqual(
        [item.description, item.score],
        ['Written by Bob', 'L'],
        "Bob's description stays until Ada chooses; her score is saved",
      );

      // Ada keeps hers.
      await note.getByLabel('Keep yours').check();
      await adas.page.getByRole('button', { name: 'Save' }).click();
      await adas.page.locator('#conflict-description').waitFor({ state: 'detached' });
      item = await read();
      assert.deepEqual([item.title, item.description, item.score], ["Bob's title", 'Written by Ada', 'L']);
    } finally {
      await adas.context.close();
      await bobs.context.close();
    }
  });

  test('choosing the environments that email me on the notifications page; the API reads the choice back', async () => {
    const { owner, product, numbers } = await productWithItems(['Shipped often']);
    for (const environment of ['staging', 'production']) {
      await api(owner, 'POST', `/api/products/${product.id}/deploys.json`, {
        environment,
        numbers: String(numbers[0]),
      });
    }
    const { context, page } = await signedIn(owner.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      await page.getByRole('link', { name: 'Notifications' }).click();
      await page.getByLabel('Only these environments').check();
      await page.getByLabel('production').check();
      await page.getByLabel('Other environments').fill('eu-west');
      // Nothing has been deployed to eu-west: said as it is typed, and confirmed before it is saved.
      await page.getByText('Nothing has been deployed to eu-west yet').waitFor();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByLabel('Keep eu-west').check();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved.').waitFor();
      assert.ok(await page.getByLabel('production').isChecked());
      assert.ok(!(await page.getByLabel('staging').isChecked()));
      assert.deepEqual(await api(owner, 'GET', `/api/products/${product.id}/notifications.json`), {
        environments: ['eu-west', 'production'],
        comments: true,
      });
    } finally {
      await context.close();
    }
  });

  test('an item page shows where it is deployed; the matrix filters done work not in production (phone)', async () => {
    const { owner, product, numbers } = await productWithItems(['Shipped', 'Pulled back', 'Waiting', 'Open']);
    const p = `/api/products/${product.id}`;
    for (const n of numbers.slice(0, 3)) await api(owner, 'POST', `${p}/items/${n}.json`, { status: 'completed' });
    const deploy = (params: Record<string, string>) => api(owner, 'POST', `${p}/deploys.json`, params);
    for (const environment of ['dev', 'qa', 'staging', 'canary', 'eu-west', 'us-east'])
      await deploy({ environment, numbers: numbers.join(','), version: '0.9' });
    await deploy({ environment: 'production', numbers: String(numbers[0]), version: '1.0' });
    await deploy({ environment: 'production', numbers: String(numbers[1]), version: '1.1' });
    await deploy({ environment: 'production', version: '1.0', rollback: 'true' });

    const { context, page } = await signedIn(owner.email, 390);
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${numbers[1]}`);
      const production = page.locator('ol.timeline li', { hasText: 'production' });
      await production.getByText('Rolled back').waitFor();
      assert.equal(await production.getAttribute('class'), 'reverted');
      await page
        .getByRole('table', { name: `Deploys of #${numbers[1]}` })
        .getByRole('row', { name: /Rollback/ })
        .waitFor();

      await page.goto(`${base}/app/products/${product.id}/deploys`);
      await page.getByRole('link', { name: 'What is where' }).click();
      await page.getByLabel('Status').selectOption('completed,accepted');
      await page.getByLabel('Not deployed to').fill('production');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/not_deployed_to=production/);
      const rows = await page
        .locator('table.matrix tbody tr')
        .evaluateAll((trs) => trs.map((tr) => Number(tr.id.replace('row-', ''))));
      const expected = (
        await api(owner, 'GET', `${p}/items.json?status=completed,accepted&not_deployed_to=production&order_by=newest`)
      ).map((i: { number: number }) => i.number);
      assert.deepEqual(rows, expected);
      assert.deepEqual(rows, [numbers[2], numbers[1]]);
      await page.getByRole('rowheader', { name: new RegExp(`#${numbers[1]} Pulled back`) }).waitFor();
      // Seven environments do not fit a phone: the table scrolls inside its box, the page does not.
      const widths = await page.evaluate(() => {
        const box = document.querySelector('.table-scroll')!;
        return {
          page: document.documentElement.scrollWidth,
          viewport: window.innerWidth,
          box: box.clientWidth,
          table: box.scrollWidth,
        };
      });
      assert.ok(widths.table > widths.box, `the table fits: ${JSON.stringify(widths)}`);
      assert.ok(widths.page <= widths.viewport, `the page scrolls sideways: ${JSON.stringify(widths)}`);
    } finally {
      await context.close();
    }
  });

  test('a script in a title is shown as text and never runs', async () => {
    const title = '<script>alert("title")</script><img src=x onerror=alert("img")>';
    const { owner, product, numbers } = await productWithItems([title]);
    const { context, page, dialogs } = await signedIn(owner.email);
    try {
      for (const url of [`/app/products/${product.id}/board`, `/app/products/${product.id}/items/${numbers[0]}`]) {
        await page.goto(`${base}${url}`);
        await page.getByText(title).first().waitFor();
        assert.equal(await page.locator('main img').count(), 0, url);
      }
      assert.deepEqual(dialogs, []);
    } finally {
      await context.close();
    }
  });

  test('a form posted from another origin changes nothing, even with the form token', async () => {
    const { owner, product, numbers } = await productWithItems(['Keep me']);
    const { context, page } = await signedIn(owner.email);
    const other = http.createServer();
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
      const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
      const target = `${base}/app/products/${product.id}/items/${numbers[0]}`;
      other.on('request', (_req, res) => {
        res.setHeader('content-type', 'text/html');
        res.end(
          `<form method="post" action="${target}"><input name="csrf" value="${csrf}">` +
            '<input name="title" value="Changed elsewhere"></form><script>document.forms[0].submit()</script>',
        );
      });
      other.listen(0, '127.0.0.1');
      await once(other, 'listening');
      const { port } = other.address() as { port: number };
      const answer = page.waitForResponse((r) => r.url() === target && r.request().method() === 'POST');
      await page.goto(`http://127.0.0.1:${port}/`);
      assert.equal((await answer).status(), 403);
      assert.equal((await api(owner, 'GET', `/api/products/${product.id}/items/${numbers[0]}.json`)).title, 'Keep me');
    } finally {
      other.close();
      await context.close();
    }
  });

  test('a person who is not a member sees a 403 page that names nothing of the product', async () => {
    const { product, numbers } = await productWithItems(['Secret work'], 'Secret product');
    const outsider = await makeUser(db);
    const { context, page } = await signedIn(outsider.email);
    try {
      for (const url of [
        `/app/products/${product.id}/board`,
        `/app/products/${product.id}/items/${numbers[0]}`,
        `/app/products/${product.id}/deploys`,
      ]) {
        const res = await page.goto(`${base}${url}`);
        assert.equal(res?.status(), 403, url);
        const text = (await page.content()) ?? '';
        assert.ok(!text.includes('Secret'), `${url} shows ${text}`);
        await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
      }
    } finally {
      await context.close();
    }
  });

  test('a comment posted with the keyboard, a preview without posting, the star; nothing typed is lost', async () => {
    const { owner, product, numbers } = await productWithItems(['Talked about']);
    const items = `/api/products/${product.id}/items/${numbers[0]}`;
    const { context, page } = await signedIn(owner.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
      const box = page.getByLabel('Comment (Markdown)');
      await box.fill('Half a thought');
      // What was typed survives leaving the page before posting.
      await page.reload();
      assert.equal(await box.inputValue(), 'Half a thought');
      await box.fill('A **plan**\n\n- first');
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.locator('.preview strong').getByText('plan').waitFor();
      assert.equal(await box.inputValue(), 'A **plan**\n\n- first', 'the text is still in the box');
      assert.deepEqual(await api(owner, 'GET', `${items}/comments.json`), [], 'a preview posts nothing');

      await box.focus();
      await page.keyboard.press('Control+Enter');
      await page.getByRole('status').getByText('Your comment is posted.').waitFor();
      const [comment] = await api(owner, 'GET', `${items}/comments.json`);
      assert.equal(comment.body, 'A **plan**\n\n- first');
      await page.locator(`#comment-${comment.id} .markdown strong`).getByText('plan').waitFor();
      assert.equal(await box.inputValue(), '', 'posted: the box is empty, and stays so on a reload');
      await page.goto(`${base}/app/products/${product.id}/items/${numbers[0]}`);
      assert.equal(await box.inputValue(), '');

      const star = page.getByRole('button', { name: 'Favorite' });
      assert.equal(await star.getAttribute('aria-pressed'), 'false');
      await star.click();
      await page.getByText('1 favorite', { exact: true }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Favorited' }).getAttribute('aria-pressed'), 'true');
      assert.equal((await api(owner, 'GET', `${items}.json`)).counts.favorites, 1);
      await page.getByRole('button', { name: 'Favorited' }).click();
      await page.getByText('0 favorites', { exact: true }).waitFor();
      assert.equal((await api(owner, 'GET', `${items}.json`)).counts.favorites, 0);
    } finally {
      await context.close();
    }
  });

  test('a block added and removed by number, a refusal next to its field; a file uploaded', async () => {
    const { owner, product, numbers } = await productWithItems(['First', 'Second']);
    const [a, b] = numbers;
    const { context, page } = await signedIn(owner.email, 390);
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${a}`);
      const field = page.getByLabel('This item blocks item number');
      await field.fill(String(a));
      await field.press('Enter');
      await page.locator('#error-blocked').getByText('must name another item than this one').waitFor();
      assert.equal(await page.getByLabel('This item blocks item number').inputValue(), String(a));
      await page.getByLabel('This item blocks item number').fill(String(b));
      await page.getByLabel('This item blocks item number').press('Enter');
      await page.getByRole('status').getByText('The block is added.').waitFor();
      const blocking = await api(owner, 'GET', `/api/products/${product.id}/items/${a}/blocking.json`);
      assert.deepEqual(
        blocking.map((x: { blocked: { number: number } }) => x.blocked.number),
        [b],
      );
      await page.goto(`${base}/app/products/${product.id}/board`);
      const mark = page.locator(`#item-${b} .mark.blocked`);
      await mark.waitFor();
      assert.equal((await mark.textContent())?.trim(), 'Blocked by 1 item');
      await page.goto(`${base}/app/products/${product.id}/items/${a}`);
      await page.getByRole('button', { name: `Remove the block with #${b}` }).click();
      await page.getByRole('status').getByText('The block is removed.').waitFor();
      assert.deepEqual(await api(owner, 'GET', `/api/products/${product.id}/items/${a}/blocking.json`), []);

      await page.getByLabel('Attach a file').setInputFiles({
        name: 'notes.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('uploaded from the page'),
      });
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.getByRole('status').getByText('The file is attached.').waitFor();
      const [file] = await api(owner, 'GET', `/api/products/${product.id}/items/${a}/attachments.json`);
      assert.equal(file.name, 'notes.txt');
      const link = page.getByRole('link', { name: 'notes.txt', exact: true });
      const href = await link.getAttribute('href');
      const served = await page.request.get(`${base}${href}`);
      assert.equal(await served.text(), 'uploaded from the page');
    } finally {
      await context.close();
    }
  });

  test('a seeded board and item page', async () => {
    const ada = await makeUser(db, { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' });
    const owner = await makeUser(db, { email: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper' });
    const product = await makeProduct(db, owner, [ada], 'Shiplog');
    const add = (params: Record<string, string>) =>
      api(owner, 'POST', `/api/products/${product.id}/items.json`, params);
    const story = await add({
      type: 'story',
      who: 'follower',
      what: 'to open an item from a deploy email',
      why: 'I see what shipped without curl',
      status: 'in-progress',
      score: 'L',
      tags: 'web,mail',
      assigned_to: String(ada.user.id),
      description: 'The **short_url** of an item leads a browser to its page; API clients keep the JSON.',
    });
    await add({
      type: 'task',
      title: 'Render Markdown descriptions safely',
      status: 'in-progress',
      score: 'M',
      tags: 'web',
      parent: String(story.number),
    });
    await add({
      type: 'test',
      title: 'Drive the board in chromium',
      status: 'completed',
      score: 'S',
      tags: 'web,tests',
      parent: String(story.number),
    });
    for (const [type, title, status, score, tags] of [
      ['defect', 'Board column scrolls past the footer on phones', 'backlog', 'S', 'web'],
      ['task', 'Filter deploys by environment', 'backlog', 'M', 'deploys'],
      ['story', '', 'backlog', 'XL', 'api'],
      ['task', 'Sign-in links by mail', 'accepted', 'M', 'web,auth'],
      ['task', 'Dark mode', 'backlog', '~', 'web'],
      ['defect', 'Deploy notes lose line breaks', 'completed', 'S', 'mail'],
    ]) {
      await add(
        type === 'story'
          ? { type, who: 'operator', what: 'a JSON health check', why: 'the load balancer knows', status, score, tags }
          : { type, title, status, score, tags },
      );
    }
    await api(owner, 'POST', `/api/products/${product.id}/deploys.json`, {
      environment: 'staging',
      numbers: String(story.number),
      version: '1.4.0',
    });
    await api(owner, 'POST', `/api/products/${product.id}/deploys.json`, {
      environment: 'production',
      numbers: String(story.number),
      version: '1.4.1',
    });

    const { context, page } = await signedIn(owner.email, 1200);
    try {
      await page.setViewportSize({ width: 1480, height: 640 });
      await page.goto(`${base}/app/products/${product.id}/board`);
      assert.equal(await page.locator('li.card').count(), 7, 'the top-level items');
      await page.locator(`#item-${story.number}`).getByText('2 sub-items').waitFor();
      await page.setViewportSize({ width: 900, height: 1100 });
      await page.goto(`${base}/app/products/${product.id}/items/${story.number}`);
      await page.getByRole('cell', { name: 'production' }).waitFor();
      await page.locator('.markdown strong').getByText('short_url').waitFor();
    } finally {
      await context.close();
    }
  });
});
