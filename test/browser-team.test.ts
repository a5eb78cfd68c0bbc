import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { Db } from '../src/db/connection.js';
import { apiCall, browserWorld, mailedLink, signedInContext, type RunningBrowser } from './browser.js';
import { makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';

/*
 * The way in and a team's work in a real browser (Debian's chromium through playwright-core,
 * against the built server on loopback): the root address, making a product, inviting and
 * cancelling, archiving, replaying a webhook delivery, and the notifications page with and
 * without script.
 */

let db: Db;
let chrome: RunningBrowser;
let base: string;
const dataDir = tempDir('shiplog-browser-team-');
const seenMail = new Set<string>();

browserWorld(dataDir, { WEBHOOKS_ALLOW_PRIVATE: '1' }, (world) => {
  ({ db, chrome, base } = world);
});

/** The API, as a deploy script or client calls it. */
const api = (user: TestUser, method: string, url: string, params?: Record<string, string>) =>
  apiCall(base, user, method, url, params);

async function newContext(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  return { context, page: await context.newPage() };
}

const SIGN_IN_LINK = /https?:\/\/[^/\s]+(\/app\/sign-in\/[A-Za-z0-9_-]{43})\b/;
const INVITATION_LINK = /https?:\/\/[^/\s]+(\/invitations\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/;

/** A page signed in as `email` without going through the pages (the first test goes through them). */
const signedIn = (email: string, javaScriptEnabled = true) =>
  signedInContext(chrome.browser, base, db, email, { viewport: { width: 1280, height: 800 }, javaScriptEnabled });

/** Opens the service's root address signed out, which leads to signing in; signs in there. */
async function signedInFromTheRoot(email: string) {
  const session = await newContext();
  const { page } = session;
  await page.goto(`${base}/`);
  assert.equal(new URL(page.url()).pathname, '/app/sign-in');
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
  await page.getByText('a sign-in link is on its way').waitFor();
  const link = await mailedLink(dataDir, email, SIGN_IN_LINK, seenMail);
  await page.goto(`${base}${link}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  return session;
}

describe('the team in chromium', { timeout: 120_000 }, () => {
  test('the root address leads to sign-in, and once signed in to the products; a product made there', async () => {
    const ada = await makeUser(db);
    const { context, page } = await signedInFromTheRoot(ada.email);
    try {
      await page.goto(`${base}/`);
      assert.equal(new URL(page.url()).pathname, '/app/products');
      assert.equal(await page.getByRole('link', { name: 'API docs' }).getAttribute('href'), '/docs');
      await page.getByLabel('Name').fill('Made in chromium');
      await page.getByRole('button', { name: 'Create product' }).click();
      await page.getByText('Product created.').waitFor();
      const products = await api(ada, 'GET', '/api/products.json');
      assert.deepEqual(
        products.map((p: { name: string; admin: boolean }) => [p.name, p.admin]),
        [['Made in chromium', true]],
      );
      assert.equal(new URL(page.url()).pathname, `/app/products/${products[0].id}/people`);
    } finally {
      await context.close();
    }
  });

  test('inviting someone, seeing the invitation pending, and cancelling it after confirming', async () => {
    const ada = await makeUser(db);
    const product = await makeProduct(db, ada);
    const { context, page } = await signedIn(ada.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/board`);
      await page.getByRole('link', { name: 'People' }).click();
      await page.getByLabel('Email').fill('ivy.invited@example.com');
      await page.getByLabel('First name').fill('Ivy');
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.getByText('Invitation sent.').waitFor();
      await page.getByRole('cell', { name: /ivy\.invited@example\.com/ }).waitFor();
      const link = await mailedLink(dataDir, 'ivy.invited@example.com', INVITATION_LINK, seenMail);
      assert.equal((await fetch(`${base}${link}`)).status, 200);

      await page.getByRole('link', { name: 'Cancel\u2026' }).click();
      await page.getByText('Cancel the invitation of ivy.invited@example.com').waitFor();
      await page.getByRole('button', { name: 'Cancel the invitation' }).click();
      await page.getByText('Invitation cancelled').waitFor();
      await page.getByText('No invitation is waiting for an answer.').waitFor();
      assert.equal((await fetch(`${base}${link}`)).status, 410);
    } finally {
      await context.close();
    }
  });

  test('archiving an item from its page after a confirmation; the API reads it archived', async () => {
    const ada = await makeUser(db);
    const product = await makeProduct(db, ada);
    const item = await api(ada, 'POST', `/api/products/${product.id}/items.json`, { type: 'task', title: 'Old work' });
    const { context, page } = await signedIn(ada.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/items/${item.number}`);
      await page.getByRole('link', { name: 'Archive\u2026' }).click();
      await page.getByText('Archiving cannot be undone.').waitFor();
      const stored = () => api(ada, 'GET', `/api/products/${product.id}/items/${item.number}.json`);
      assert.equal((await stored()).archived, false);
      await page.getByRole('button', { name: `Archive #${item.number}` }).click();
      await page.getByText('The item is archived').waitFor();
      assert.equal((await stored()).archived, true);
    } finally {
      await context.close();
    }
  });

  test("replaying a webhook delivery from the webhook's deliveries", async () => {
    const ada = await makeUser(db);
    const product = await makeProduct(db, ada);
    const p = `/api/products/${product.id}`;
    const hook = await api(ada, 'POST', `${p}/webhooks.json`, {
      url: 'http://127.0.0.1:9/hook',
      events: 'item.created',
    });
    await api(ada, 'POST', `${p}/items.json`, { type: 'task', title: 'Announced' });
    const { context, page } = await signedIn(ada.email);
    try {
      await page.goto(`${base}/app/products/${product.id}/webhooks/${hook.id}`);
      await page.getByRole('button', { name: /^Replay item\.created / }).click();
      await page.getByText('Sent again as a new delivery').waitFor();
      const deliveries = await api(ada, 'GET', `${p}/webhooks/${hook.id}/deliveries.json`);
      assert.deepEqual(deliveries.map((d: { replay: number }) => d.replay > 0).sort(), [false, true]);
    } finally {
      await context.close();
    }
  });

  for (const script of [true, false]) {
    test(`notifications ${script ? 'with' : 'without'} script: a ticked box chooses only these`, async () => {
      const ada = await makeUser(db);
      const product = await makeProduct(db, ada);
      const item = await api(ada, 'POST', `/api/products/${product.id}/items.json`, { type: 'task', title: 'Out' });
      for (const environment of ['staging', 'production'])
        await api(ada, 'POST', `/api/products/${product.id}/deploys.json`, { environment, numbers: `${item.number}` });
      const { context, page } = await signedIn(ada.email, script);
      try {
        await page.goto(`${base}/app/products/${product.id}/notifications`);
        assert.ok(await page.getByLabel('All environments').isChecked());
        await page.getByLabel('production').check();
        // With script the choice follows the box at once; without, the server reads it so.
        if (script) assert.ok(await page.getByLabel('Only these environments').isChecked());
        await page.getByLabel('Other environments').fill('stagin');
        if (script) await page.getByText('Nothing has been deployed to stagin yet').waitFor();
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByText('nothing was saved').waitFor();
        const choice = () => api(ada, 'GET', `/api/products/${product.id}/notifications.json`);
        assert.deepEqual((await choice()).environments, 'all');
        // Corrected rather than kept: saved without asking again.
        await page.getByLabel('Other environments').fill('staging');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByText('Saved.').waitFor();
        assert.deepEqual((await choice()).environments, ['production', 'staging']);
        if (script) {
          // All again: the boxes are unticked, and the typed names set aside (not sent).
          await page.getByLabel('Other environments').fill('staging');
          await page.getByLabel('All environments').check();
          assert.ok(!(await page.getByLabel('production').isChecked()));
          await Promise.all([page.waitForEvent('load'), page.getByRole('button', { name: 'Save' }).click()]);
          await page.getByText('Saved.').waitFor();
          assert.equal((await choice()).environments, 'all');
        }
      } finally {
        await context.close();
      }
    });
  }
});
