import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Db } from '../src/db/connection.js';
import { apiCall, browserWorld, type RunningBrowser, signInByLink } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';

/*
 * Every form of the pages, sent with a value the server refuses, in chromium: the page that comes
 * back has the refused field focused and in view, marked aria-invalid, and its reason next to it
 * (in the field's own block, named by its aria-describedby). The browser's own checks (required,
 * type=email) are turned off first, as in a browser without them: the server's answer is what is tested.
 */

let db: Db;
let chrome: RunningBrowser;
let base: string;
const dataDir = tempDir('shiplog-browser-forms-');
const seenMail = new Set<string>();

browserWorld(dataDir, {}, (world) => {
  ({ db, chrome, base } = world);
});

/** A short window, so that most forms start below the fold. */
async function newPage(): Promise<Page> {
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 600 } });
  context.setDefaultTimeout(10_000);
  return context.newPage();
}

const signIn = (page: Page, email: string) => signInByLink(page, base, dataDir, email, seenMail);

/**
 * Sends the form of `field` (the browser's checks off) through its first submit button, and
 * checks the page that comes back: `field` is focused, in view, aria-invalid, and its reason
 * (matching `reason`) is next to it and named by its aria-describedby.
 */
async function refused(page: Page, o: { field: string; reason: RegExp }): Promise<void> {
  await page.evaluate(() => {
    for (const form of document.forms) form.noValidate = true;
  });
  const send = page.locator(`form:has(#${o.field}) button[type=submit]`).first();
  await Promise.all([page.waitForEvent('load'), send.click()]);
  await page.waitForFunction((id) => document.activeElement?.id === id, o.field).catch(() => undefined);
  const seen = await page.evaluate(() => {
    const field = document.activeElement as HTMLElement;
    const ids = (field.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean);
    const reason = ids.map((id) => document.getElementById(id)).find((e) => e?.classList.contains('field-error'));
    const box = field.getBoundingClientRect();
    return {
      focused: field.id,
      invalid: field.getAttribute('aria-invalid'),
      reason: reason?.textContent ?? '',
      // Next to it: in the same block as the field (its paragraph, the fieldset of its boxes, a filter's box).
      besideIt: !!reason && !!field.closest('p, fieldset, form.inline, form.filters > span')?.contains(reason),
      inView: box.top >= 0 && box.bottom <= window.innerHeight,
      firstInvalid: document.querySelector('[aria-invalid="true"]')?.id,
    };
  });
  assert.equal(seen.focused, o.field, `focused: ${JSON.stringify(seen)}`);
  assert.equal(seen.invalid, 'true');
  assert.equal(seen.firstInvalid, o.field);
  assert.match(seen.reason, o.reason);
  assert.ok(seen.besideIt, `the reason is next to ${o.field}`);
  assert.ok(seen.inView, `${o.field} is scrolled into view`);
}

describe('a refused form in chromium: the first refused field in view, focused, its reason beside it', {
  timeout: 180_000,
}, () => {
  let owner: TestUser;
  let productId: number;
  let itemNumber: number;
  let page: Page;
  const api = (method: string, url: string, params?: Record<string, string>) =>
    apiCall(base, owner, method, url, params);

  before(async () => {
    owner = await makeUser(db);
    productId = (await makeProduct(db, owner, [], 'Forms')).id;
    // A long description, so that the item page's forms start well below the fold.
    const made = await api('POST', `/api/products/${productId}/items.json`, {
      type: 'task',
      title: 'A task with a long description',
      description: Array.from({ length: 60 }, (_, i) => `Paragraph ${i} of a long description.`).join('\n\n'),
    });
    itemNumber = made.number;
    for (let i = 0; i < 30; i++)
      await api('POST', `/api/products/${productId}/items.json`, { type: 'task', title: `Filler ${i}` });
    page = await newPage();
  });

  after(() => page?.context().close());

  test('sign-in', async () => {
    await page.goto(`${base}/app/sign-in`);
    await page.getByLabel('Email').fill('not an address');
    await refused(page, { field: 'email', reason: /email must be an email address/ });
    assert.equal(await page.locator('#email').inputValue(), 'not an address', 'what was typed is kept');
    await signIn(page, owner.email);
  });

  test('new product', async () => {
    await page.goto(`${base}/app/products`);
    await page.getByLabel('Name').fill('   ');
    await refused(page, { field: 'product-name', reason: /name/ });
  });

  test('inviting someone', async () => {
    await page.goto(`${base}/app/products/${productId}/people`);
    await page.getByLabel('Email').fill('nobody at all');
    await refused(page, { field: 'invite-email', reason: /email/ });
  });

  test('a new item on the board', async () => {
    await page.goto(`${base}/app/products/${productId}/board`);
    await page.locator('#new-type').selectOption('story');
    await page.locator('#new-who').fill('a user');
    await refused(page, { field: 'new-what', reason: /what/ });
  });

  test('editing an item', async () => {
    await page.goto(`${base}/app/products/${productId}/items/${itemNumber}`);
    await page.locator('#edit-parent').fill('99999');
    await refused(page, { field: 'edit-parent', reason: /parent/ });
  });

  test('a sub-item', async () => {
    const story = await api('POST', `/api/products/${productId}/items.json`, {
      type: 'story',
      who: 'a team',
      what: 'sub-items',
      why: 'work is split',
    });
    await page.goto(`${base}/app/products/${productId}/items/${story.number}`);
    await page.getByText('New sub-item').click();
    await page.locator('#new-title').fill('');
    await refused(page, { field: 'new-title', reason: /title/ });
  });

  test('a comment', async () => {
    await page.goto(`${base}/app/products/${productId}/items/${itemNumber}`);
    await refused(page, { field: 'comment-body', reason: /body/ });
  });

  test('a block', async () => {
    await page.goto(`${base}/app/products/${productId}/items/${itemNumber}`);
    await page.locator('#block-blocker').fill('99999');
    await refused(page, { field: 'block-blocker', reason: /blocker/ });
  });

  test('notifications', async () => {
    await page.goto(`${base}/app/products/${productId}/notifications`);
    await page.locator('input[name=choice][value=some]').check();
    await page.locator('#other-environments').fill('x'.repeat(300));
    await refused(page, { field: 'other-environments', reason: /environments/ });
  });

  test('a webhook', async () => {
    await page.goto(`${base}/app/products/${productId}/webhooks`);
    await page.getByLabel('URL').fill('not a url');
    await refused(page, { field: 'webhook-url', reason: /url/ });
  });

  test('a webhook with no event chosen', async () => {
    await page.goto(`${base}/app/products/${productId}/webhooks`);
    await page.getByLabel('URL').fill('https://example.com/hook');
    for (const box of await page.locator('input[name=events]').all()) await box.uncheck();
    await refused(page, { field: 'webhook-event-0', reason: /events/ });
  });

  test("the board's filter", async () => {
    await page.goto(`${base}/app/products/${productId}/board`);
    await page.locator('#filter-tags').fill(`ui, ${'z'.repeat(70)}`);
    await refused(page, { field: 'filter-tags', reason: /tags each tag must be at most 64 characters/ });
    assert.ok((await page.locator('li.card').count()) > 0, 'the board, unfiltered, below it');
  });

  test("the deploys' filter", async () => {
    await api('POST', `/api/products/${productId}/deploys.json`, {
      environment: 'staging',
      numbers: String(itemNumber),
    });
    await page.goto(`${base}/app/products/${productId}/deploys`);
    await page.locator('#deploys-environment').fill('e'.repeat(300));
    await refused(page, { field: 'deploys-environment', reason: /environment/ });
    await page.getByText('1 deploy,').waitFor();
  });

  test('the matrix filter', async () => {
    await page.goto(`${base}/app/products/${productId}/deploys/matrix`);
    await page.locator('#matrix-not-deployed-to').fill('y'.repeat(300));
    await refused(page, { field: 'matrix-not-deployed-to', reason: /not deployed to/ });
  });
});
