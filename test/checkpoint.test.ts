import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/connection.js';
import { tempDir } from './helpers.js';

// SQLite only: the background checkpointer belongs to the embedded database.
const onSqlite = !process.env.TEST_DATABASE_URL;

/** Waits for `check` to hold, polling; false when it never did within `ms`. */
async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(20)) if (check()) return true;
  return check();
}

test('committed writes reach the database file while it stays open, from the background thread', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dataDir = tempDir();
  const file = path.join(dataDir, 'shiplog.db');
  const db = await openDatabase({ dataDir });
  try {
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
    assert.equal(rows[0].wal_autocheckpoint, 0, 'commits no longer checkpoint on their own');

    const size = () => fs.statSync(file).size;
    assert.ok(
      await eventually(() => fs.statSync(`${file}-wal`).size > 0 && size() > 0),
      'the migrated schema is in the file',
    );
    const before = size();
    // Well below the thousand pages after which a commit would checkpoint by itself.
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 50; i++) {
        await trx
          .insertInto('users')
          .values({
            email: `u${i}@example.com`,
            first_name: 'U',
            last_name: `${i}`.repeat(200),
            api_key_hash: `h${i}`,
            created_at: '2026-01-01T00:00:00+00:00',
          })
          .execute();
      }
    });
    assert.ok(await eventually(() => size() > before), `the database file stayed at ${before} bytes`);
  } finally {
    await db.destroy();
  }
  // Closing checkpointed everything and removed the WAL.
  assert.equal(fs.existsSync(`${file}-wal`), false);
});

test('the background thread never keeps a process alive', { skip: !onSqlite && 'SQLite only' }, async () => {
  const dataDir = tempDir();
  const checkpointer = fileURLToPath(new URL('../src/db/checkpointer.ts', import.meta.url));
  const file = path.join(dataDir, 'shiplog.db');
  // Starts the thread and ends at once, closing nothing: the process must still exit on its own.
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const program = [
    `const { default: SQLite } = await import(${JSON.stringify(sqlite)});`,
    `const { BackgroundCheckpointer } = await import(${JSON.stringify(checkpointer)});`,
    `const db = new SQLite(${JSON.stringify(file)});`,
    `db.pragma('journal_mode = WAL');`,
    `new BackgroundCheckpointer(db, ${JSON.stringify(file)});`,
  ].join('\n');
  const started = Date.now();
  const code = await new Promise<number | null>((resolve) => {
    const script = path.join(dataDir, 'open-and-end.mjs');
    fs.writeFileSync(script, program);
    const child = execFile(process.execPath, ['--import', 'tsx', script], { timeout: 20_000 }, () => undefined);
    child.on('exit', (exitCode) => resolve(exitCode));
  });
  assert.equal(code, 0, `the process ended with ${code} after ${Date.now() - started} ms`);
});

test('under writes that never pause, the WAL is started anew instead of growing without end', {
  skip: !onSqlite && 'SQLite only',
}, async () => {
  const dataDir = tempDir();
  const file = path.join(dataDir, 'shiplog.db');
  // Started anew past 256 frames (1 MiB of 4 KiB pages).
  const db = await openDatabase({ dataDir, walRestartFrames: 256 });
  const body = 'x'.repeat(6000);
  let written = 0;
  try {
    await sql`create table t (id integer primary key, body text not null)`.execute(db);
    // The thread is running once the first commits reach the database file.
    const empty = fs.statSync(file).size;
    while (fs.statSync(file).size === empty) {
      await sql`insert into t (body) values (${body})`.execute(db);
      await sleep(5);
    }
    // 72 MB of rows from 20 writers that never pause: a transaction always waits for the next
    // commit, and the copying thread never finds the WAL all copied. Left alone, the WAL ends at
    // some 80 MB here; started anew, at about 12 MB (the limit, and what is written in the 100 ms
    // before the thread looks again), and up to 37 MB seen on a machine busy with other tests (the
    // thread then looks less often): the bound sits between that and growing without end.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < 600; i++) {
          await db.transaction().execute((trx) => sql`insert into t (body) values (${body})`.execute(trx));
          written += body.length;
        }
      }),
    );
    const wal = fs.statSync(`${file}-wal`).size;
    assert.equal(written, 72_000_000);
    assert.ok(wal < 48 * 1024 * 1024, `the WAL grew to ${wal} bytes for ${written} bytes written`);
  } finally {
    await db.destroy();
  }
});
