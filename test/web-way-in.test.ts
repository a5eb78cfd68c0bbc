import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { makeApp, makeUser, signInByMail, tempDir, type TestContext } from './helpers.js';
import { runCli, startServer, stopAll } from './processes.js';

/* The way in: the service's root address, and the links the command line prints. */

let t: TestContext;
before(async () => {
  t = await makeApp();
});
after(async () => {
  await t.close();
  await stopAll();
});

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('the root address', () => {
  test('a program gets an index of the service', async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      assert.equal(res.statusCode, 200, `${accept}: ${res.body}`);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.deepEqual(res.json().links, {
        api: '/api/products.json',
        openapi: '/openapi.json',
        docs: '/docs',
        health: '/health',
        pages: '/app/',
      });
    }
  });

  test('a browser is sent to sign in, and once signed in to its products', async () => {
    const root = await t.app.inject({ method: 'GET', url: '/', headers: { accept: BROWSER } });
    assert.equal(root.statusCode, 303);
    assert.equal(root.headers.location, '/app/');
    const away = await t.app.inject({ method: 'GET', url: '/app/', headers: { accept: BROWSER } });
    assert.equal(away.headers.location, '/app/sign-in');
    const ada = await makeUser(t.db);
    const cookie = await signInByMail(t, ada.email);
    const home = await t.app.inject({ method: 'GET', url: '/app/', headers: { accept: BROWSER, cookie } });
    assert.equal(home.headers.location, '/app/products');
  });
});

describe('the address links lead to', () => {
  test('without PUBLIC_URL, the address the server listens on, on the host the README uses', () => {
    assert.equal(loadConfig({ PORT: '4123' }).publicUrl, 'http://127.0.0.1:4123');
    assert.equal(loadConfig({ PORT: '4123', HOST: '0.0.0.0' }).publicUrl, 'http://127.0.0.1:4123');
    assert.equal(loadConfig({ PORT: '4123', HOST: '::1' }).publicUrl, 'http://[::1]:4123');
    assert.equal(loadConfig({ PORT: '4123', HOST: 'tracker.lan' }).publicUrl, 'http://tracker.lan:4123');
    assert.equal(loadConfig({}).publicUrl, 'http://127.0.0.1:3000');
    assert.equal(loadConfig({ PORT: '4123', PUBLIC_URL: 'https://x.example' }).publicUrl, 'https://x.example');
  });

  test('a login link printed without PORT leads to the port the server was started on', async () => {
    const dataDir = fs.mkdtempSync(path.join(tempDir('shiplog-way-in-'), 'data-'));
    const added = await runCli(['user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace'], { dataDir });
    assert.equal(added.code, 0, added.stderr);
    const server = await startServer({ dataDir });
    const printed = await runCli(['user', 'login-link', 'ada@example.com'], { dataDir });
    assert.equal(printed.code, 0, printed.stderr);
    const link = new URL(printed.stdout.trim());
    assert.equal(link.origin, `http://127.0.0.1:${server.port}`);
    const signedIn = await fetch(link, { method: 'POST', redirect: 'manual' });
    assert.equal(signedIn.status, 303);
    const cookie = signedIn.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const home = await fetch(new URL('/', link), { headers: { accept: BROWSER, cookie } });
    assert.equal(home.status, 200);
    assert.equal(new URL(home.url).pathname, '/app/products');

    // What the environment says wins over what the server recorded.
    const told = await runCli(['user', 'login-link', 'ada@example.com'], {
      dataDir,
      env: { PUBLIC_URL: 'https://tracker.example.com' },
    });
    assert.match(told.stdout, /^https:\/\/tracker\.example\.com\/app\/sign-in\//);
  });
});
