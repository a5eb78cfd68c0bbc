#!/usr/bin/env node
// The README's screenshots, made again: starts the built server (`npm run build` first) on 127.0.0.1
// with a fresh data directory, seeds a product through the command line and the API, signs in with a
// login link, and has chromium (playwright-core, /usr/bin/chromium or CHROMIUM) save the board, an
// item, the matrix and a search at a desktop's width and a phone's under docs/screenshots/.
//
//   node scripts/screenshots.mjs [output directory]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.resolve(process.argv[2] ?? path.join(root, 'docs', 'screenshots'));
const SIZES = { desktop: { width: 1440, height: 900 }, phone: { width: 390, height: 844 } };
/** A screenshot above this is a sign that the page or the seed went wrong. */
const MAX_BYTES = 200_000;

async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-screenshots-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  PATH: process.env.PATH,
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  PORT: String(port),
  PUBLIC_URL: base,
  LOG_LEVEL: 'warn',
};
const cli = (...args) =>
  execFileSync(process.execPath, [path.join(root, 'bin', 'shiplog.js'), ...args], { env, encoding: 'utf8' }).trim();

const server = spawn(process.execPath, [path.join(root, 'dist', 'server.js')], {
  env,
  stdio: ['ignore', 'inherit', 'inherit'],
});
let browser;
try {
  await until('the server to answer', async () => (await fetch(`${base}/health`).catch(() => null))?.ok);
  const people = [
    ['grace@example.com', 'Grace', 'Hopper'],
    ['ada@example.com', 'Ada', 'Lovelace'],
    ['alan@example.com', 'Alan', 'Turing'],
  ];
  const keys = people.map(([email, first, last]) => cli('user', 'add', email, '--first', first, '--last', last));
  const auth = keys.map((key, i) => `Basic ${Buffer.from(`${people[i][0]}:${key}`).toString('base64')}`);
  const productId = Number(cli('product', 'add', 'Shiplog', '--owner', people[0][0]));
  const api = async (who, url, params) => {
    const res = await fetch(`${base}/api/products/${productId}${url}`, {
      method: 'POST',
      headers: { authorization: auth[who], 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  for (const [email] of people.slice(1)) cli('member', 'add', String(productId), email);
  const members = await (
    await fetch(`${base}/api/products/${productId}/people.json`, { headers: { authorization: auth[0] } })
  ).json();
  const ids = people.map(([email]) => String(members.find((m) => m.email === email).id));
  const story = await seed(api, ids);
  const link = cli('user', 'login-link', people[0][0]);

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const context = await browser.newContext({ viewport: SIZES.desktop, colorScheme: 'light' });
  const page = await context.newPage();
  await page.goto(link.replace(/^https?:\/\/[^/]+/, base));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/app\/products$/);

  fs.mkdirSync(out, { recursive: true });
  const pages = {
    board: `/app/products/${productId}/board`,
    item: `/app/products/${productId}/items/${story}`,
    matrix: `/app/products/${productId}/deploys/matrix`,
    search: '/app/search?q=page',
  };
  for (const [name, url] of Object.entries(pages)) {
    for (const [size, viewport] of Object.entries(SIZES)) {
      await page.setViewportSize(viewport);
      await page.goto(`${base}${url}`);
      const png = await page.screenshot({ type: 'png' });
      if (png.length > MAX_BYTES) throw new Error(`${name}-${size}.png is ${png.length} bytes`);
      fs.writeFileSync(path.join(out, `${name}-${size}.png`), png);
      console.log(`${path.relative(root, path.join(out, `${name}-${size}.png`))}: ${png.length} bytes`);
    }
  }
} finally {
  await browser?.close();
  server.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** A product's worth of work: stories with sub-items, every status, tags, scores, people, deploys. */
async function seed(api, ids) {
  const add = (who, params) => api(who, '/items.json', params);
  const story = await add(1, {
    type: 'story',
    who: 'follower',
    what: 'to open an item from a deploy email',
    why: 'I see what shipped without curl',
    status: 'in-progress',
    score: 'L',
    tags: 'web,mail',
    assigned_to: ids[1],
    description:
      'The **short_url** of an item leads a browser to its page; API clients keep the JSON.\n\n' +
      '- signed-out followers sign in first\n- the page shows where the item is deployed',
  });
  const sub = (title, status, score, tags) =>
    add(0, { type: 'task', title, status, score, tags, parent: String(story.number) });
  await sub('Render Markdown descriptions safely', 'in-progress', 'M', 'web');
  await sub('Drive the board in chromium', 'completed', 'S', 'web,tests');
  const items = [
    ['defect', 'Board column scrolls past the footer on phones', 'backlog', 'S', 'web'],
    ['task', 'Filter deploys by environment', 'backlog', 'M', 'deploys'],
    ['story', 'operator|a JSON health check|the load balancer knows', 'backlog', 'XL', 'api'],
    ['task', 'Dark scheme for the pages', 'in-progress', 'M', 'web'],
    ['test', 'Rollback mail names the reverted items', 'in-progress', 'S', 'mail,tests'],
    ['task', 'Sign-in links by mail', 'accepted', 'M', 'web,auth'],
    ['defect', 'Deploy notes lose line breaks', 'completed', 'S', 'mail'],
    ['task', 'Webhook deliveries page', 'completed', 'M', 'webhooks'],
    ['task', 'Keyboard shortcuts on the board', 'backlog', 'L', 'web'],
    ['defect', 'Matrix header wraps inside words', 'accepted', 'S', 'web'],
  ];
  const numbers = [story.number];
  for (const [i, [type, title, status, score, tags]] of items.entries()) {
    const [who, what, why] = title.split('|');
    const text = type === 'story' ? { who, what, why } : { title };
    const made = await add(i % 3, { type, status, score, tags, ...text, assigned_to: ids[i % 3] });
    numbers.push(made.number);
  }
  const deploy = (environment, version, list) =>
    api(0, '/deploys.json', { environment, version, numbers: list.join(',') });
  await deploy('staging', '1.4.0', numbers.slice(0, 9));
  await deploy('staging', '1.4.1', numbers.slice(0, 4));
  await deploy('production', '1.4.0', numbers.slice(0, 6));
  await deploy('production', '1.4.1', [story.number]);
  return story.number;
}

async function until(what, check, ms = 15_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
