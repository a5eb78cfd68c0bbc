import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from './helpers.js';
import { runCli, startServer, stopAll, stopProcess, waitFor, type CliRun } from './processes.js';

// What Shiplog writes (the database and its -wal and -shm, mail written as files, backups) is for
// the account that runs it alone, even under a umask that takes nothing away: the server and the
// commands started here inherit this process's umask of 0.

const root = tempDir('shiplog-private-test-');
const sqliteEnv = (dataDir: string) => ({ DATA_DIR: dataDir, DATABASE_URL: '' });
const shiplog = (dataDir: string, ...args: string[]): Promise<CliRun> =>
  runCli(args, { env: sqliteEnv(dataDir), cwd: root, timeoutMs: 60_000 });
const modeOf = (file: string): string => (fs.statSync(file).mode & 0o777).toString(8).padStart(3, '0');

function assertDone(run: CliRun): void {
  assert.equal(run.code, 0, `stdout: ${run.stdout} stderr: ${run.stderr}`);
}

/** The mode of every file and directory under `dir`, by path from it, `dir` itself as ".". */
function modesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': modeOf(dir) };
  for (const entry of fs.readdirSync(dir, { recursive: true }) as string[]) out[entry] = modeOf(path.join(dir, entry));
  return out;
}

let umask: number;
before(() => {
  umask = process.umask(0o000);
});
after(async () => {
  await stopAll();
  process.umask(umask);
});

describe('files are private whatever the umask', () => {
  test('the server: its data directory, database, -wal, -shm and mail files', { timeout: 60_000 }, async () => {
    const dataDir = path.join(root, 'server', 'data');
    // The first user, made by the command line, which creates the directory and the database.
    assertDone(await shiplog(dataDir, 'user', 'add', 'ada@example.com', '--first', 'Ada', '--last', 'Lovelace'));
    assert.deepEqual(modesUnder(dataDir), { '.': '700', 'shiplog.db': '600' });
    const server = await startServer({
      env: {
        ...sqliteEnv(dataDir),
        LOG_LEVEL: 'error',
        PUBLIC_URL: 'http://shiplog.test',
        MAIL_DOMAIN: 'items.shiplog.test',
      },
      dataDir,
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const asked = await fetch(`http://127.0.0.1:${server.port}/app/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=ada%40example.com',
        signal: AbortSignal.timeout(20_000),
      });
      assert.equal(asked.status, 200, await asked.text());
      const mailDir = path.join(dataDir, 'mail');
      await waitFor(
        'the sign-in link written as a file',
        () => fs.existsSync(mailDir) && fs.readdirSync(mailDir).some((f) => f.endsWith('.eml')),
        30_000,
      );
      const modes = modesUnder(dataDir);
      const eml = Object.keys(modes).find((f) => f.endsWith('.eml'))!;
      assert.match(fs.readFileSync(path.join(dataDir, eml), 'utf8'), /\/app\/sign-in\//);
      assert.deepEqual(modes, {
        '.': '700',
        'shiplog.db': '600',
        'shiplog.db-wal': '600',
        'shiplog.db-shm': '600',
        mail: '700',
        [eml]: '600',
      });
    } finally {
      await stopProcess(server.child);
    }
  });

  test('files an earlier version left readable are made private when the database is next opened', async () => {
    const dataDir = path.join(root, 'earlier');
    assertDone(await shiplog(dataDir, 'user', 'add', 'bob@example.com', '--first', 'Bob', '--last', 'Builder'));
    fs.chmodSync(dataDir, 0o755);
    fs.chmodSync(path.join(dataDir, 'shiplog.db'), 0o644);
    assertDone(await shiplog(dataDir, 'mail', 'status'));
    assert.deepEqual(modesUnder(dataDir), { '.': '700', 'shiplog.db': '600' });
  });

  test('backup writes its copy 0600, restore makes the data directory 0700 and the database 0600', {
    timeout: 60_000,
  }, async () => {
    const dataDir = path.join(root, 'backed-up');
    assertDone(await shiplog(dataDir, 'user', 'add', 'cy@example.com', '--first', 'Cy', '--last', 'Young'));
    const copies = path.join(root, 'copies');
    fs.mkdirSync(copies, { mode: 0o777 });
    const file = path.join(copies, 'shiplog-backup.db');
    assertDone(await shiplog(dataDir, 'backup', file));
    assert.deepEqual(modesUnder(copies), { '.': '777', 'shiplog-backup.db': '600' });
    // Replacing a readable file leaves it private too.
    fs.chmodSync(file, 0o644);
    assertDone(await shiplog(dataDir, 'backup', file, '--force'));
    assert.equal(modeOf(file), '600');

    fs.chmodSync(file, 0o644);
    const restored = path.join(root, 'restored', 'data');
    assertDone(await shiplog(restored, 'restore', file));
    assert.deepEqual(modesUnder(restored), { '.': '700', 'shiplog.db': '600' });
  });
});
