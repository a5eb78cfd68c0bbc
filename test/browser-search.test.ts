import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Db } from '../src/db/connection.js';
import { apiCall, browserWorld, type RunningBrowser, signInByLink } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';

/*
 * Searching from the pages, in chromium against the built server: `/` goes to the header's box from
 * anywhere, a search shows its results with the words marked, a facet narrows them through the URL,
 * `#N` goes to the item, a refused query comes back beside the focused field, and the board's
 * filter takes the same query.
 */

let db: Db;
let chrome: RunningBrowser;
let base: string;
const dataDir = tempDir('shiplog-browser-search-');
const seenMail = new Set<string>();

browserWorld(dataDir, {}, (world) => {
  ({ db, chrome, base } = world);
});

const signIn = (page: Page, email: string) => signInByLink(page, base, dataDir, email, seenMail);

const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? '');

describe('searching from the pages in chromium', { timeout: 180_000 }, () => {
  let owner: TestUser;
  let productId: number;
  let page: Page;
  const numbers: Record<string, number> = {};
  const api = (method: string, url: string, params?: Record<string, string>) =>
    apiCall(base, owner, method, url, params);

  before(async () => {
    owner = await makeUser(db);
    productId = (await makeProduct(db, owner, [], 'Searchable')).id;
    const items: [string, Record<string, string>][] = [
      ['Login button is misaligned', { type: 'defect', tags: 'ui' }],
      [
        'Login page times out',
        { type: 'task', status: 'in-progress', description: 'The spinner runs *forever* once the session expires.' },
      ],
      ['Logout clears the session', { type: 'task' }],
      ['Billing export', { type: 'task' }],
    ];
    for (const [title, rest] of items) {
      const made = await api('POST', `/api/products/${productId}/items.json`, { title, ...rest });
      numbers[title] = made.number;
    }
    const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await signIn(page, owner.email);
  });

  after(() => page?.context().close());

  test('/ focuses the search box from anywhere but a field', async () => {
    await page.goto(`${base}/app/products`);
    await page.keyboard.press('/');
    assert.equal(await focusedId(page), 'search-q');
    // Typed into a field, / is a character.
    await page.goto(`${base}/app/products/${productId}/board`);
    await page.locator('#new-title').fill('a/b');
    await page.locator('#new-title').press('/');
    assert.equal(await focusedId(page), 'new-title');
    assert.equal(await page.locator('#new-title').inputValue(), 'a/b/');
    await page.locator('#new-title').fill('');
    await page.locator('#new-title').blur();
    await page.keyboard.press('/');
    assert.equal(await focusedId(page), 'search-q');
    // The board's filter is reached with f, as its keys say.
    await page.locator('#search-q').blur();
    await page.keyboard.press('f');
    assert.equal(await focusedId(page), 'filter-q');
    const keys = await page
      .locator('#board-keys dl')
      .evaluate((dl) =>
        Array.from(dl.querySelectorAll('dt')).map((dt) => `${dt.textContent} ${dt.nextElementSibling?.textContent}`),
      );
    assert.ok(keys.includes('f the filter') && keys.includes('/ the search box'), keys.join('; '));
  });

  test('a search shows the results with the words marked', async () => {
    await page.goto(`${base}/app/products`);
    await page.keyboard.press('/');
    await page.keyboard.type('login');
    await Promise.all([page.waitForURL(/\/app\/search\?/), page.keyboard.press('Enter')]);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'login');
    const titles = await page.locator('ol.results .title').allInnerTexts();
    assert.deepEqual(titles.map((t) => t.replace(/^#\d+ /, '')).sort(), [
      'Login button is misaligned',
      'Login page times out',
    ]);
    assert.deepEqual(await page.locator('ol.results mark').allInnerTexts(), ['Login', 'Login']);
    assert.match((await page.locator('.summary').textContent()) ?? '', /2 items match/);
    // A word the title lacks: the line of the description that holds it says why the item matched.
    await page.goto(`${base}/app/search?q=login+session`);
    assert.deepEqual(await page.locator('ol.results .excerpt').allInnerTexts(), [
      'The spinner runs forever once the session expires.',
    ]);
    assert.deepEqual(await page.locator('ol.results .excerpt mark').allInnerTexts(), ['session']);
  });

  test('a facet narrows the results and the URL carries it; its term can be taken out', async () => {
    await page.goto(`${base}/app/search?q=login`);
    await Promise.all([
      page.waitForURL(/status%3Ain-progress/),
      page.locator('.facets').getByRole('link', { name: 'in-progress' }).click(),
    ]);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'status:in-progress login');
    assert.equal(await page.locator('#search-q').inputValue(), 'status:in-progress login');
    assert.deepEqual(await page.locator('ol.results .title').allInnerTexts(), [
      `#${numbers['Login page times out']} Login page times out`,
    ]);
    await Promise.all([
      page.waitForURL(/\?q=login$/),
      page.getByRole('link', { name: 'Remove status:in-progress' }).click(),
    ]);
    assert.equal(await page.locator('ol.results li').count(), 2);
  });

  test('#N goes straight to the item', async () => {
    const n = numbers['Billing export'];
    await page.goto(`${base}/app/products`);
    await page.keyboard.press('/');
    await page.keyboard.type(`#${n}`);
    await Promise.all([page.waitForURL(new RegExp(`/items/${n}$`)), page.keyboard.press('Enter')]);
    assert.equal(new URL(page.url()).pathname, `/app/products/${productId}/items/${n}`);
  });

  test('a refused query comes back with its reason beside the focused field', async () => {
    await page.goto(`${base}/app/products`);
    await page.keyboard.press('/');
    await page.keyboard.type('login colour:red');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/app/search')),
      page.keyboard.press('Enter'),
    ]);
    assert.equal(answer.status(), 400);
    await page.waitForFunction(() => document.activeElement?.id === 'search-q');
    const seen = await page.evaluate(() => {
      const field = document.activeElement as HTMLInputElement;
      const ids = (field.getAttribute('aria-describedby') ?? '').split(/\s+/);
      const reason = ids.map((id) => document.getElementById(id)).find((e) => e?.classList.contains('field-error'));
      return {
        value: field.value,
        invalid: field.getAttribute('aria-invalid'),
        reason: reason?.textContent ?? '',
        besideIt: !!reason && !!field.closest('p')?.contains(reason),
      };
    });
    assert.equal(seen.value, 'login colour:red');
    assert.equal(seen.invalid, 'true');
    assert.match(seen.reason, /The query cannot read "colour:red": unknown field "colour:"/);
    assert.ok(seen.besideIt, 'the reason is next to the field');
    assert.equal(await page.locator('ol.results').count(), 0);
  });

  test("the board's filter takes the same query", async () => {
    await page.goto(`${base}/app/products/${productId}/board`);
    assert.equal(await page.locator('li.card').count(), 4);
    await page.locator('#filter-q').fill('login -button');
    await Promise.all([page.waitForURL(/board\?q=login/), page.locator('#filter-q').press('Enter')]);
    const shown = await page.locator('li.card').evaluateAll((all) => all.map((c) => c.getAttribute('data-number')));
    assert.deepEqual(shown, [String(numbers['Login page times out'])]);
    assert.equal(await page.locator('#filter-q').inputValue(), 'login -button');
  });
});
