import assert from 'node:assert/strict';
import { insertMembership } from '../src/products/repository.js';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  client,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  tempDir,
  type TestContext,
  type TestUser,
} from './helpers.js';
import { freePort, runCli, type CliRun } from './processes.js';

// `shiplog deploy` as a pipeline runs it: the built command line as a child process, a git
// repository made here, and a Shiplog server on loopback (the app the tests build, listening).

const root = tempDir('shiplog-deploy-cli-');

/**
 * Settings the server would refuse: if the deploy command read the server's configuration or
 * opened a database, every run below would fail.
 */
const NO_SERVER = {
  DATABASE_URL: 'not a database url',
  PORT: 'not a port',
  DATA_DIR: path.join(root, 'no-such-dir', 'data'),
};

/** git for the fixtures, blind to the machine's and the user's git configuration. */
function git(repo: string, ...args: string[]): string {
  return execFileSync(
    'git',
    ['-c', 'user.name=Pipeline', '-c', 'user.email=pipeline@example.com', '-c', 'commit.gpgsign=false', ...args],
    {
      cwd: repo,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      encoding: 'utf8',
    },
  ).trim();
}

/**
 * The repository: v1.3.0, then commits naming items in each form the default pattern reads,
 * tagged v1.4.0, then one more commit (HEAD).
 */
function makeRepository(): string {
  const repo = fs.mkdtempSync(path.join(root, 'repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  const commit = (message: string) => git(repo, 'commit', '-q', '--allow-empty', '-m', message);
  commit('Start the project (#7)');
  git(repo, 'tag', 'v1.3.0');
  commit('Fix the login form #1');
  commit('[#2] Faster board');
  commit('Tidy the deploy page\n\nFixes #3');
  commit('Update the docs\n\nRefs #4, #5');
  commit('Paint the header #2a2a2a, as #1 asked');
  git(repo, 'tag', 'v1.4.0');
  commit('Later work [#6]\n\nCloses SL-8');
  return repo;
}

const TITLES = [
  'Fix the login form',
  'Faster board',
  'Tidy the deploy page',
  'Update the docs',
  'Docs part two',
  'Later work',
  'Start',
  'Shiplog task',
];

let t: TestContext;
let url: string;
let repo: string;
let owner: TestUser;
const notARepo = fs.mkdtempSync(path.join(root, 'plain-'));

before(async () => {
  t = await makeApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  owner = await makeUser(t.db);
  repo = makeRepository();
});
after(() => t.close());

/** A product of its own for a test, with items 1 to 8. */
async function makeProductWithItems(): Promise<number> {
  const product = await makeProduct(t.db, owner);
  for (const title of TITLES) await makeItem(t.app, owner, product.id, { title });
  return product.id;
}

/** Runs `shiplog deploy ARGS` in the repository, with the server's address and a key in the environment. */
function deploy(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliRun> {
  return runCli(['deploy', ...args], {
    cwd: options.cwd ?? repo,
    env: { ...NO_SERVER, SHIPLOG_URL: url, SHIPLOG_API_KEY: owner.apiKey, ...options.env },
  });
}

async function deployed(args: string[], options?: Parameters<typeof deploy>[1]): Promise<string> {
  const run = await deploy(args, options);
  assert.equal(run.code, 0, `shiplog deploy ${args.join(' ')}: ${run.stderr}`);
  assert.equal(run.stderr, '');
  return run.stdout;
}

/** A failure: its exit code, nothing on stdout, one line on stderr that matches. */
function assertFailed(run: CliRun, code: number, message: RegExp): void {
  assert.equal(run.code, code, `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^shiplog deploy: [^\n]+\n$/, run.stderr);
  assert.match(run.stderr, message);
}

async function deploysOf(
  productId: number,
): Promise<
  Array<{ id: number; environment: string; version: string; notes: string; items: Array<{ number: number }> }>
> {
  const res = await client(t.app, owner).get(`/api/products/${productId}/deploys.json`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const numbersOf = (d: { items: Array<{ number: number }> }) => d.items.map((i) => i.number);

describe('shiplog deploy against a server', () => {
  test('reads the numbers of since..until from the commit messages and records the deploy', async () => {
    const id = await makeProductWithItems();
    const elsewhere = fs.mkdtempSync(path.join(root, 'cwd-'));
    const out = await deployed(
      [
        '--product',
        String(id),
        '--env',
        'production',
        '--version',
        'v1.4.0',
        '--since',
        'v1.3.0',
        '--until',
        'v1.4.0',
        '--repo',
        repo,
      ],
      { cwd: elsewhere },
    );
    const [recorded] = await deploysOf(id);
    assert.deepEqual(numbersOf(recorded), [1, 2, 3, 4, 5]);
    assert.equal(recorded.environment, 'production');
    assert.equal(recorded.version, 'v1.4.0');
    assert.equal(recorded.notes, '');
    assert.match(out, /^v1\.3\.0\.\.v1\.4\.0 \([0-9a-f]{12}\.\.[0-9a-f]{12}\): 5 commits naming #1 #2 #3 #4 #5$/m);
    assert.match(out, new RegExp(`^Deploy ${recorded.id} recorded: 5 items to production, version v1\\.4\\.0$`, 'm'));
    assert.match(out, /^ {2}#1 Fix the login form$/m);
    assert.match(out, /^ {2}#5 Docs part two$/m);
    // Neither the server's settings nor a database were looked at.
    assert.deepEqual(fs.readdirSync(elsewhere), []);
  });

  test('--until defaults to HEAD; HTTP Basic with --email works as well as a Bearer key', async () => {
    const id = await makeProductWithItems();
    await deployed([
      '--product',
      String(id),
      '--env',
      'staging',
      '--version',
      'v1.5.0-rc1',
      '--since',
      'v1.3.0',
      '--email',
      owner.email,
    ]);
    const [recorded] = await deploysOf(id);
    assert.deepEqual(numbersOf(recorded), [1, 2, 3, 4, 5, 6]);
  });

  test('a repeated run records one deploy; another version is another deploy', async () => {
    const id = await makeProductWithItems();
    const args = (version: string, since = 'v1.3.0', until = 'v1.4.0') => [
      '--product',
      String(id),
      '--env',
      'production',
      '--version',
      version,
      '--since',
      since,
      '--until',
      until,
    ];
    const first = await deployed(args('v1.4.0'));
    const again = await deployed(args('v1.4.0'));
    const byCommit = await deployed(args('v1.4.0', git(repo, 'rev-parse', 'v1.3.0'), git(repo, 'rev-parse', 'v1.4.0')));
    const deploys = await deploysOf(id);
    assert.equal(deploys.length, 1);
    for (const out of [first, again, byCommit]) assert.match(out, new RegExp(`^Deploy ${deploys[0].id} recorded`, 'm'));
    await deployed(args('v1.4.0-hotfix'));
    assert.equal((await deploysOf(id)).length, 2);
  });

  test('--numbers skips git: no repository and no git needed', async () => {
    const id = await makeProductWithItems();
    const noGit = fs.mkdtempSync(path.join(root, 'path-'));
    await deployed(['--product', String(id), '--env', 'production', '--version', '2.0', '--numbers', '5, 3,5,8'], {
      cwd: notARepo,
      env: { PATH: noGit },
    });
    const [recorded] = await deploysOf(id);
    assert.deepEqual(numbersOf(recorded), [3, 5, 8]);
  });

  test('--notes-file gives the notes', async () => {
    const id = await makeProductWithItems();
    const notes = path.join(root, 'notes.md');
    fs.writeFileSync(notes, 'Release notes\n\n- a faster board\n- *fixed* login\n\n');
    await deployed([
      '--product',
      String(id),
      '--env',
      'production',
      '--version',
      'v1.4.0',
      '--since',
      'v1.3.0',
      '--until',
      'v1.4.0',
      '--notes-file',
      notes,
    ]);
    const [recorded] = await deploysOf(id);
    assert.equal(recorded.notes, 'Release notes\n\n- a faster board\n- *fixed* login');
  });

  test('--pattern and SHIPLOG_ITEM_PATTERN choose what names an item; the first group is the number', async () => {
    const id = await makeProductWithItems();
    await deployed([
      '--product',
      String(id),
      '--env',
      'brackets',
      '--version',
      '1',
      '--since',
      'v1.3.0',
      '--pattern',
      '\\[#(\\d+)\\]',
    ]);
    await deployed(['--product', String(id), '--env', 'fixes', '--version', '1', '--since', 'v1.3.0'], {
      env: { SHIPLOG_ITEM_PATTERN: '(?:fixes|closes) #(\\d+)' },
    });
    await deployed([
      '--product',
      String(id),
      '--env',
      'prefix',
      '--version',
      '1',
      '--since',
      'v1.4.0',
      '--pattern',
      '\\bSL-(\\d+)',
    ]);
    const byEnvironment = Object.fromEntries((await deploysOf(id)).map((d) => [d.environment, numbersOf(d)]));
    assert.deepEqual(byEnvironment, { brackets: [2, 6], fixes: [3], prefix: [8] });
  });

  test("--json prints the server's answer as it came", async () => {
    const id = await makeProductWithItems();
    const out = await deployed([
      '--product',
      String(id),
      '--env',
      'production',
      '--version',
      '3',
      '--numbers',
      '1',
      '--json',
    ]);
    const answer = JSON.parse(out);
    assert.equal(answer.id, (await deploysOf(id))[0].id);
    assert.deepEqual(numbersOf(answer), [1]);
  });

  test('a dry run against the server records nothing, sends nothing, and says who would be emailed', async () => {
    const id = await makeProductWithItems();
    const colleague = await makeUser(t.db, { firstName: 'Ada', lastName: 'Lovelace' });
    await t.db
      .transaction()
      .execute((trx) => insertMembership(trx, id, colleague.user.id, false, '2026-01-01T00:00:00+00:00'));
    // An assignee follows the item: item 2 is in the range (v1.3.0..v1.4.0).
    assert.equal(
      (await client(t.app, owner).post(`/api/products/${id}/items/2.json`, { assigned_to: String(colleague.user.id) }))
        .statusCode,
      200,
    );
    // An item outside the range blocks item 2: the receipt says so.
    const blocker = await makeItem(t.app, owner, id, { title: 'Not shipped yet' });
    const blocking = await client(t.app, owner).post(`/api/products/${id}/items/${blocker.number}/blocking.json`, {
      blocked: '2',
    });
    assert.equal(blocking.statusCode, 200, blocking.body);
    const outboxBefore = await t.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();

    const out = await deployed([
      '--product',
      String(id),
      '--env',
      'production',
      '--version',
      'v1.4.0',
      '--since',
      'v1.3.0',
      '--until',
      'v1.4.0',
      '--dry-run',
    ]);
    assert.match(out, /^Dry run, nothing recorded/m);
    assert.match(out, /^Would email 1 person:/m);
    assert.match(
      out,
      new RegExp(
        `^Blocked: #2 would go to production; it is blocked by #${blocker.number}, which is not there\\.$`,
        'm',
      ),
    );
    assert.match(out, new RegExp(`${colleague.email.replace(/[.]/g, '\\.')}.*#2\\b`));
    assert.deepEqual(await deploysOf(id), []);
    const outboxAfter = await t.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(outboxAfter.n), Number(outboxBefore.n));

    // The real run afterwards records the deploy and mails that person.
    const real = await deployed([
      '--product',
      String(id),
      '--env',
      'production',
      '--version',
      'v1.4.0',
      '--since',
      'v1.3.0',
      '--until',
      'v1.4.0',
    ]);
    assert.match(real, /^Deploy \d+ recorded/m);
    assert.equal((await deploysOf(id)).length, 1);
  });
});

describe('shiplog deploy refusals', () => {
  let id: number;
  before(async () => {
    id = await makeProductWithItems();
  });
  const base = () => ['--product', String(id), '--env', 'production', '--version', 'v1.4.0'];
  const range = ['--since', 'v1.3.0', '--until', 'v1.4.0'];

  test('a range that names no item exits 3, and records nothing', async () => {
    assertFailed(
      await deploy([...base(), '--since', 'v1.4.0', '--until', 'v1.4.0']),
      3,
      /v1\.4\.0\.\.v1\.4\.0 holds no commit/,
    );
    assertFailed(
      await deploy([...base(), ...range, '--pattern', 'JIRA-(\\d+)']),
      3,
      /5 commits\) names an item \(pattern JIRA-/,
    );
    assertFailed(await deploy([...base(), '--numbers', ' , ']), 3, /--numbers names no item/);
    assert.deepEqual(await deploysOf(id), []);
  });

  test('git missing, no repository, an unknown revision, a shallow clone: exit 4', async () => {
    const noGit = fs.mkdtempSync(path.join(root, 'path-'));
    assertFailed(await deploy([...base(), ...range], { env: { PATH: noGit } }), 4, /git is not installed/);
    assertFailed(
      await deploy([...base(), ...range], { cwd: notARepo }),
      4,
      /is not a git repository.*not a git repository/,
    );
    assertFailed(await deploy([...base(), '--since', 'v9.9.9']), 4, /"v9\.9\.9" names no commit/);
    const shallow = path.join(fs.mkdtempSync(path.join(root, 'shallow-')), 'clone');
    git(root, 'clone', '-q', '--depth', '1', `file://${repo}`, shallow);
    assertFailed(
      await deploy([...base(), '--since', 'v1.3.0'], { cwd: shallow }),
      4,
      /"v1\.3\.0" names no commit .*shallow.*fetch-depth: 0/,
    );
    assert.deepEqual(await deploysOf(id), []);
  });

  test("the server's refusal exits 1 with its message and status", async () => {
    assertFailed(
      await deploy([...base(), ...range], { env: { SHIPLOG_API_KEY: 'Abcdefghij0123456789KLMNOPqrstuv' } }),
      1,
      /refused the deploy \(403\): Invalid or unknown user\./,
    );
    assertFailed(
      await deploy([...base(), ...range, '--email', owner.email, '--key', 'wrong']),
      1,
      /\(403\): Invalid or unknown user\./,
    );
    const stranger = await makeUser(t.db);
    assertFailed(
      await deploy([...base(), ...range], { env: { SHIPLOG_API_KEY: stranger.apiKey } }),
      1,
      /\(403\): You are not a member of this product\./,
    );
    assertFailed(await deploy([...base(), '--numbers', '99']), 1, /\(400\): .*/);
    assertFailed(
      await deploy(['--product', '999999', '--env', 'production', '--version', '1', '--numbers', '1']),
      1,
      /\(404\)/,
    );
    assert.deepEqual(await deploysOf(id), []);
  });

  test('a server that cannot be reached exits 5', async () => {
    const port = await freePort();
    assertFailed(
      await deploy([...base(), ...range], { env: { SHIPLOG_URL: `http://127.0.0.1:${port}` } }),
      5,
      new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`),
    );
  });

  test('options missing or malformed exit 2 before anything is read or sent', async () => {
    const none = await runCli(['deploy'], { cwd: notARepo, env: NO_SERVER });
    assertFailed(
      none,
      2,
      new RegExp(
        String.raw`missing --product, --env, --version, --since \(or --numbers\), ` +
          String.raw`--url \(or SHIPLOG_URL\), --key \(or SHIPLOG_API_KEY\)`,
      ),
    );
    assertFailed(await deploy([...base(), ...range, '--numbers', '1']), 2, /--since or --numbers, not both/);
    assertFailed(await deploy([...base(), '--until', 'v1.4.0', '--numbers', '1']), 2, /--until needs --since/);
    assertFailed(
      await deploy(['--product', 'twelve', '--env', 'p', '--version', '1', '--numbers', '1']),
      2,
      /--product must be a product id/,
    );
    assertFailed(await deploy([...base(), '--numbers', '1,two']), 2, /"two"/);
    assertFailed(await deploy([...base(), ...range, '--pattern', '#\\d+']), 2, /no capture group/);
    assertFailed(await deploy([...base(), ...range, '--pattern', '#(\\d+']), 2, /not a regular expression/);
    assertFailed(
      await deploy([...base(), ...range, '--notes-file', path.join(root, 'missing.md')]),
      2,
      /cannot read the notes file/,
    );
    assertFailed(
      await deploy([...base(), ...range], { env: { SHIPLOG_URL: 'shiplog.example.com' } }),
      2,
      /the URL must be the server's address/,
    );
    assertFailed(await deploy([...base(), '--since=--output=x']), 2, /"--output=x" is not a revision/);
    assertFailed(await deploy([...base(), ...range, '--colour']), 2, /colour/);
    assert.deepEqual(await deploysOf(id), []);
  });
});

interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  form: URLSearchParams;
}

/** A stand-in server that answers every request with `answer` and keeps what it was sent. */
async function recordingServer(answer: object): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ method: req.method!, path: req.url!, headers: req.headers, form: new URLSearchParams(body) });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(answer));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/shiplog`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('shiplog deploy: what it sends and prints', () => {
  const items = [1, 2, 3, 4, 5].map((number, i) => ({ number, title: TITLES[i] }));

  test('--dry-run sends dry_run=true and prints who would be emailed', async () => {
    const stub = await recordingServer({
      dry_run: true,
      environment: 'production',
      version: 'v1.4.0',
      items,
      unknown_numbers: [],
      recipients: [
        { email: 'bob@example.com', first_name: 'Bob', last_name: 'Builder', numbers: [1, 3] },
        { email: 'cy@example.com', first_name: 'Cy', last_name: 'Clerk', numbers: [5] },
      ],
    });
    try {
      const out = await deployed(
        [
          '--product',
          '12',
          '--env',
          'production',
          '--version',
          'v1.4.0',
          '--since',
          'v1.3.0',
          '--until',
          'v1.4.0',
          '--dry-run',
        ],
        { env: { SHIPLOG_URL: stub.url } },
      );
      const [request] = stub.received;
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/shiplog/api/products/12/deploys.json');
      assert.equal(request.headers['content-type'], 'application/x-www-form-urlencoded');
      assert.equal(request.headers.authorization, `Bearer ${owner.apiKey}`);
      assert.match(String(request.headers['idempotency-key']), /^[0-9a-f]{64}$/);
      assert.deepEqual(Object.fromEntries(request.form), {
        environment: 'production',
        numbers: '1,2,3,4,5',
        version: 'v1.4.0',
        dry_run: 'true',
      });
      assert.match(out, /^Dry run, nothing recorded: would deploy 5 items to production, version v1\.4\.0$/m);
      assert.match(
        out,
        /^Would email 2 people:\n {2}Bob Builder <bob@example\.com>: #1 #3\n {2}Cy Clerk <cy@example\.com>: #5$/m,
      );
    } finally {
      await stub.close();
    }
  });

  test('unknown_numbers and emailed are printed when the server gives them', async () => {
    const stub = await recordingServer({
      id: 41,
      environment: 'production',
      version: '7',
      notes: '',
      items: items.slice(0, 2),
      unknown_numbers: [99],
      emailed: 3,
    });
    try {
      const out = await deployed(
        [
          '--product',
          '12',
          '--env',
          'production',
          '--version',
          '7',
          '--numbers',
          '1,2,99',
          '--email',
          'ci@example.com',
          '--key',
          'k3y',
        ],
        { env: { SHIPLOG_URL: stub.url } },
      );
      assert.equal(
        stub.received[0].headers.authorization,
        `Basic ${Buffer.from('ci@example.com:k3y').toString('base64')}`,
      );
      assert.match(
        out,
        new RegExp(
          String.raw`^Deploy 41 recorded: 2 items to production, version 7\n {2}#1 Fix the login form\n` +
            String.raw` {2}#2 Faster board\nNot items of the product, skipped: #99\nEmailed: 3 people\.$`,
          'm',
        ),
      );
    } finally {
      await stub.close();
    }
  });

  test('the Idempotency-Key comes from the commits of the range (or the numbers), not from their names', async () => {
    const stub = await recordingServer({ id: 1, environment: 'production', version: 'v1.4.0', items: [] });
    try {
      const keyOf = async (args: string[]) => {
        await deployed(['--product', '12', '--env', 'production', ...args], { env: { SHIPLOG_URL: stub.url } });
        return String(stub.received.at(-1)!.headers['idempotency-key']);
      };
      const byTag = await keyOf(['--version', 'v1.4.0', '--since', 'v1.3.0', '--until', 'v1.4.0']);
      assert.equal(
        await keyOf([
          '--version',
          'v1.4.0',
          '--since',
          git(repo, 'rev-parse', 'v1.3.0'),
          '--until',
          git(repo, 'rev-parse', 'v1.4.0'),
        ]),
        byTag,
      );
      assert.notEqual(await keyOf(['--version', 'v1.4.0', '--since', 'v1.3.0']), byTag); // HEAD is a later commit
      assert.notEqual(await keyOf(['--version', 'v1.4.1', '--since', 'v1.3.0', '--until', 'v1.4.0']), byTag);
      const byNumbers = await keyOf(['--version', 'v1.4.0', '--numbers', '1,2,3,4,5']);
      assert.notEqual(byNumbers, byTag);
      assert.equal(await keyOf(['--version', 'v1.4.0', '--numbers', '5,4,3,2,1,1']), byNumbers);
    } finally {
      await stub.close();
    }
  });
});
