import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import {
  acceptInvitation,
  basic,
  client,
  deliveredMail,
  invitationPath,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  tempDir,
  type TestContext,
  type TestUser,
} from './helpers.js';
import { freePort, runCli, spawnServer, startServer, stopAll, stopProcess, waitFor } from './processes.js';
import { SmtpSink } from './smtp-sink.js';
import { storageEnv } from './storage.js';

after(stopAll);

/** Every secret a test made the service handle, by what it is; none may appear in any log line. */
class Secrets {
  private readonly values = new Map<string, string>();

  add(label: string, value: string | undefined): void {
    assert.ok(value && value.length >= 8, `${label}: no secret to look for (${value})`);
    this.values.set(label, value);
  }

  /** A credential as it travels (Basic's base64 too), and the user's key. */
  addUser(label: string, user: TestUser): void {
    this.add(`${label}'s API key`, user.apiKey);
    this.add(`${label}'s Basic credentials`, user.auth.slice('Basic '.length));
  }

  assertAbsentFrom(log: string): void {
    assert.ok(log.length > 0, 'nothing was logged');
    const found = [...this.values].filter(
      ([, value]) => log.includes(value) || log.includes(encodeURIComponent(value)),
    );
    assert.deepEqual(
      found.map(([label]) => label),
      [],
      `secrets in the log:\n${log}`,
    );
  }
}

describe('at LOG_LEVEL=trace, requests carrying secrets', () => {
  const lines: string[] = [];
  const secrets = new Secrets();
  let t: TestContext;
  let owner: TestUser;
  let member: TestUser;
  /** Signs in to the pages, and replaces their key there. */
  let visitor: TestUser;
  let productId: number;
  const metricsToken = 'metrics-token-that-must-stay-out';

  before(async () => {
    // The server's own logger settings, at the most talkative level, written here instead of stdout.
    t = await makeApp({
      env: { LOG_LEVEL: 'trace', RATE_LIMIT_PER_KEY: '', RATE_LIMIT_PER_ADDRESS: '', METRICS_TOKEN: metricsToken },
      logger: { stream: { write: (line: string) => void lines.push(line) } },
    });
    owner = await makeUser(t.db);
    member = await makeUser(t.db);
    visitor = await makeUser(t.db);
    productId = (await makeProduct(t.db, owner, [member])).id;
    secrets.addUser('the owner', owner);
    secrets.addUser('the member', member);
    secrets.addUser('the visitor', visitor);
    for (const name of ['unsubscribe_key', 'signin_key', 'session_cookie_key']) {
      const row = await t.db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirstOrThrow();
      secrets.add(`the setting ${name}`, row.value);
    }
  });
  after(() => t.close());

  const inject = (
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string> = {},
    payload?: string,
  ): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method,
      url,
      headers: payload === undefined ? headers : { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload,
    });

  test('API keys, by Basic and Bearer, right, wrong and misplaced', async () => {
    const api = client(t.app, owner);
    const bearer = { authorization: `Bearer ${member.apiKey}` };
    assert.equal((await api.get('/api/user/whoami.json')).statusCode, 200);
    assert.equal((await inject('GET', '/api/products.json', bearer)).statusCode, 200);
    const wrongKey = 'Wr0ngKeyWr0ngKeyWr0ngKeyWr0ngKey';
    secrets.add('a wrong key', wrongKey);
    assert.equal(
      (await client(t.app, { auth: basic(owner.email, wrongKey) }).get('/api/user/whoami.json')).statusCode,
      403,
    );
    assert.equal(
      (await inject('GET', '/api/user/whoami.json', { authorization: `Bearer ${wrongKey}` })).statusCode,
      403,
    );
    // A key where a parameter goes: in the query string, a form body, a path.
    assert.equal((await api.get(`/api/products/${productId}/items.json`, { status: owner.apiKey })).statusCode, 400);
    assert.equal(
      (await api.post(`/api/products/${productId}/items.json`, { type: member.apiKey, title: 'x' })).statusCode,
      400,
    );
    assert.equal((await api.get(`/api/products/${owner.apiKey}/items.json`)).statusCode, 404);
    assert.equal((await inject('GET', `/api/${member.apiKey}.json`, bearer)).statusCode, 404);
    assert.equal((await inject('GET', `/health?key=${owner.apiKey}`)).statusCode, 200);
  });

  test('the metrics token', async () => {
    secrets.add('the metrics token', metricsToken);
    assert.equal((await inject('GET', '/metrics', { authorization: `Bearer ${metricsToken}` })).statusCode, 200);
    assert.equal((await inject('GET', '/metrics', { authorization: `Bearer ${metricsToken}x` })).statusCode, 401);
  });

  test('sign-in links, session cookies, form tokens and a new key on the settings page', async () => {
    assert.equal(
      (await inject('POST', '/app/sign-in', {}, new URLSearchParams({ email: visitor.email }).toString())).statusCode,
      200,
    );
    const mail = (await deliveredMail(t)).filter((m) => m.headers.get('to')?.includes(visitor.email)).at(-1);
    const link = /https?:\/\/[^/\s]+(\/app\/sign-in\/([A-Za-z0-9_-]{43}))/.exec(mail?.text ?? '');
    assert.ok(link, 'no sign-in link mailed');
    secrets.add('a sign-in token', link[2]);
    assert.equal((await inject('GET', link[1])).statusCode, 200);
    assert.equal((await inject('GET', `${link[1]}?next=/app/settings`)).statusCode, 200);
    const signedIn = await inject('POST', link[1]);
    assert.equal(signedIn.statusCode, 303);
    assert.equal((await inject('POST', link[1])).statusCode, 410, 'a used link is refused');
    assert.equal((await inject('GET', `/app/sign-in/${link[2].slice(0, 40)}abc`)).statusCode, 410);

    const cookie = String(
      [signedIn.headers['set-cookie']].flat().find((c) => String(c).startsWith('shiplog_session=')),
    ).split(';')[0];
    const cookieValue = decodeURIComponent(cookie.slice('shiplog_session='.length));
    secrets.add('the session cookie', cookieValue);
    secrets.add('the session id', cookieValue.slice(0, cookieValue.lastIndexOf('.')));
    const settings = await inject('GET', '/app/settings', { cookie });
    assert.equal(settings.statusCode, 200);
    const csrf = /name="csrf" value="([^"]+)"/.exec(settings.body)?.[1];
    secrets.add('the form token', csrf);
    assert.equal((await inject('POST', '/app/settings/api-key', { cookie }, 'csrf=wrong')).statusCode, 403);
    const rotated = await inject(
      'POST',
      '/app/settings/api-key',
      { cookie },
      new URLSearchParams({ csrf: csrf!, confirm: 'yes' }).toString(),
    );
    assert.equal(rotated.statusCode, 200);
    secrets.add('a key shown on the settings page', /\b([A-Za-z0-9]{32})\b/.exec(rotated.body.replace(csrf!, ''))?.[1]);
    assert.equal(
      (await inject('GET', '/api/products.json', { cookie })).statusCode,
      403,
      'the cookie does not open the API',
    );
  });

  test('unsubscribe links', async () => {
    const item = await makeItem(t.app, owner, productId, { assigned_to: member.user.id });
    const deployed = await client(t.app, owner).post(`/api/products/${productId}/deploys.json`, {
      environment: 'production',
      numbers: item.number,
    });
    assert.equal(deployed.statusCode, 200);
    const mail = (await deliveredMail(t)).filter((m) => m.headers.get('to')?.includes(member.email)).at(-1);
    const path = new URL(/^<(.+)>$/.exec(mail?.headers.get('list-unsubscribe') ?? '')?.[1] ?? 'http://x/').pathname;
    const token = path.slice('/unsubscribe/'.length);
    secrets.add('an unsubscribe token', token);
    secrets.add("an unsubscribe token's signature", token.split('.')[1]);
    assert.equal((await inject('GET', path, { accept: 'text/html' })).statusCode, 200);
    assert.equal((await inject('POST', path, {}, 'List-Unsubscribe=One-Click')).statusCode, 200);
    assert.equal((await inject('GET', `${path}x`)).statusCode, 404);
  });

  test('invitation links, and the key of the account they make', async () => {
    const email = `invited-${process.pid}@example.com`;
    const invited = await client(t.app, owner).post(`/api/products/${productId}/people.json`, {
      email,
      first_name: 'In',
      last_name: 'Vited',
    });
    assert.equal(invited.statusCode, 200, invited.body);
    const link = await invitationPath(t, email);
    secrets.add('an invitation token', link.slice('/invitations/'.length));
    assert.equal((await inject('GET', link, { accept: 'text/html' })).statusCode, 200);
    const accepted = await acceptInvitation(t.app, link);
    secrets.add("the invited person's new key", accepted.api_key);
    assert.equal((await inject('POST', link)).statusCode, 410);
  });

  test('headers logged whole would have their credentials redacted', () => {
    const headerSecret = 'Header-secret-that-must-stay-out';
    secrets.add('a credential header', headerSecret);
    t.app.log.info(
      { headers: { authorization: `Bearer ${headerSecret}`, cookie: `shiplog_session=${headerSecret}` } },
      'headers',
    );
    t.app.log.info({ res: { headers: { 'set-cookie': `shiplog_session=${headerSecret}` } } }, 'reply');
    assert.match(lines.at(-2) ?? '', /"authorization":"\[redacted\]"/);
  });

  test('none of them reached the log', () => {
    assert.ok(
      lines.some((l) => /"msg":"request"/.test(l)),
      'the requests were logged',
    );
    secrets.assertAbsentFrom(lines.join(''));
  });
});

describe('the server process at LOG_LEVEL=trace', () => {
  test('logs no API key, SMTP password or database password, whatever fails', async () => {
    const secrets = new Secrets();
    const smtpPassword = 'smtp-Pa55word-that-must-stay-out';
    const dbPassword = 'db-Pa55word-that-must-stay-out';
    secrets.add('the SMTP password', smtpPassword);
    secrets.add('the database password', dbPassword);
    const dataDir = tempDir();
    const storage = await storageEnv(dataDir);
    // PostgreSQL runs: the same database with a password in its URL (the test cluster trusts local connections).
    const databaseUrl = storage.DATABASE_URL
      ? Object.assign(new URL(storage.DATABASE_URL), { password: dbPassword }).toString()
      : undefined;
    const apiKey = 'L0gsNeverSeeTh1sKeyL0gsNeverSeeK';
    const cli = await runCli(
      ['user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace', '--api-key', apiKey],
      { dataDir },
    );
    assert.equal(cli.code, 0, cli.stderr);
    secrets.add('the API key', apiKey);
    secrets.add('the Basic credentials', basic('ada@example.com', apiKey).slice('Basic '.length));

    // A mail server without STARTTLS: with credentials in SMTP_URL Shiplog insists on TLS, so every delivery fails.
    const sink = await SmtpSink.create();
    const server = await startServer({
      dataDir,
      env: {
        LOG_LEVEL: 'trace',
        SMTP_URL: `smtp://shiplog:${smtpPassword}@127.0.0.1:${sink.port}`,
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      assert.equal(
        (await fetch(`${base}/api/user/whoami.json`, { headers: { authorization: basic('ada@example.com', apiKey) } }))
          .status,
        200,
      );
      assert.equal(
        (
          await fetch(`${base}/api/user/whoami.json`, {
            headers: { authorization: `Bearer ${apiKey.replace('0', '1')}` },
          })
        ).status,
        403,
      );
      const asked = await fetch(`${base}/app/sign-in`, {
        method: 'POST',
        body: new URLSearchParams({ email: 'ada@example.com' }),
      });
      assert.equal(asked.status, 200);
      await waitFor('the failed delivery in the log', () => /mail delivery failed/.test(server.stdout()));
    } finally {
      await stopProcess(server.child);
      await sink.stop();
    }
    assert.match(server.stdout(), /"msg":"mail server unreachable; pausing delivery and probing"/);
    secrets.assertAbsentFrom(server.stdout() + server.stderr());
  });

  test('says nothing of a password in a setting when it cannot start', async () => {
    const password = 'startup-Pa55word-that-must-stay-out';
    const secrets = new Secrets();
    secrets.add('the password', password);
    const closedPort = await freePort();
    const starts: Array<Record<string, string>> = [
      { DATABASE_URL: `postgres://shiplog:${password}@127.0.0.1:${closedPort}/shiplog`, PG_CONNECT_TIMEOUT_MS: '2000' },
      { DATABASE_URL: `mysql://shiplog:${password}@127.0.0.1/shiplog` },
      { SMTP_URL: `ftp://shiplog:${password}@127.0.0.1` },
      { SMTP_URL: `smtp://shiplog:${password}@127.0.0.1:notaport` },
    ];
    for (const env of starts) {
      const server = await spawnServer({ dataDir: tempDir(), env: { LOG_LEVEL: 'trace', ...env } });
      assert.equal(await server.exited, 1, JSON.stringify(env));
      assert.match(server.stderr(), /^shiplog: /, 'it says why');
      secrets.assertAbsentFrom(server.stdout() + server.stderr());
    }
  });
});
