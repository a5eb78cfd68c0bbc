/**
 * What counting requests in PostgreSQL costs (RATE_LIMIT_STORE=database): the limiter's upsert,
 * one per claimed block of counts (http/repository.ts countInWindow, http/leases.ts), beside the
 * baseline of the same run, a bare `select 1` on the same pool: one after another, and 8 at once
 * on one key (one user's requests from several instances: they queue on its row) and on 8 keys. Then the whole server
 * at saturation (h2load, 50 connections, one member's first page of items, a kept answer): counted in
 * the process and in the database, in turn, twice.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/rate-limit-store.ts
 *
 * Works in a schema of its own, dropped at the end.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase, type Db } from '../src/db/connection.js';
import { countInWindow } from '../src/http/repository.js';
import { createProduct } from '../src/products/service.js';
import { createUser } from '../src/users/service.js';
import { ROOT, SERVER_SCRIPT } from './config.js';
import { freePort, spawnServer, stopChild } from './processes.js';

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('rate-limit-store: set DATABASE_URL\n');
  process.exit(2);
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4000);
const schema = `bench_${crypto.randomBytes(4).toString('hex')}`;

async function admin(query: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

interface Figures {
  per_second: number;
  p50_ms: number;
  p99_ms: number;
}

/** `rounds` calls of `once`, `parallel` at a time; latency of each and calls per second overall. */
async function measure(parallel: number, rounds: number, once: (i: number) => Promise<unknown>): Promise<Figures> {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < rounds) {
        const i = next++;
        const t = performance.now();
        await once(i);
        times.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - started;
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 1000) / 1000;
  return { per_second: Math.round((rounds / elapsed) * 1000), p50_ms: at(0.5), p99_ms: at(0.99) };
}

async function main(): Promise<void> {
  await admin(`create schema ${schema}`);
  const scoped = new URL(url!);
  scoped.searchParams.set('options', `-c search_path=${schema}`);
  const db: Db = await openDatabase({ dataDir: '/nonexistent-unused', databaseUrl: scoped.toString() });
  try {
    const selectOne = () => sql`select 1`.execute(db);
    const count = (key: string) => countInWindow(db, key, Date.now(), 60_000);
    // Warm the pool and the plans first.
    await measure(8, 500, selectOne);
    await measure(8, 500, (i) => count(`user ${i % 8}`));
    const mean = (f: Figures, parallel: number) => Math.round((parallel / f.per_second) * 1e6) / 1000;
    const results = {
      'baseline: select 1, one at a time': await measure(1, ROUNDS, selectOne),
      'count, one at a time': await measure(1, ROUNDS, () => count('user 1')),
      'baseline: select 1, 8 at once': await measure(8, ROUNDS, selectOne),
      'count, 8 at once on one key': await measure(8, ROUNDS, () => count('user 2')),
      'count, 8 at once on 8 keys': await measure(8, ROUNDS, (i) => count(`address 10.0.0.${i % 8}`)),
    };
    process.stdout.write(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}\n`,
    );
    for (const [name, f] of Object.entries(results))
      process.stdout.write(
        `${name}: ${f.per_second}/s, mean ${mean(f, name.includes('8 at once') ? 8 : 1)} ms, ` +
          `p50 ${f.p50_ms} ms, p99 ${f.p99_ms} ms\n`,
      );
    await serverAtSaturation(db, scoped.toString());
  } finally {
    await db.destroy();
    await admin(`drop schema ${schema} cascade`);
  }
}

/** h2load's requests per second for the built server, with each store in turn. */
async function serverAtSaturation(db: Db, databaseUrl: string): Promise<void> {
  const made = await db
    .transaction()
    .execute((trx) => createUser(trx, { email: 'bench@example.com', firstName: 'B', lastName: 'Ench' }));
  const product = await db.transaction().execute((trx) => createProduct(trx, made.user, 'Counted'));
  const auth = `Basic ${Buffer.from(`${made.user.email}:${made.apiKey}`).toString('base64')}`;
  const seconds = Number(process.env.BENCH_SECONDS ?? 6);
  for (const store of ['process', 'database', 'process', 'database']) {
    const port = await freePort();
    const server = spawnServer(
      SERVER_SCRIPT,
      {
        PATH: process.env.PATH,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: path.join(ROOT, 'bench', '.data'),
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_STORE: store,
        RATE_LIMIT_PER_KEY: '1000000000',
        RATE_LIMIT_PER_ADDRESS: '1000000000',
        DRAIN_DELAY_MS: '0',
      },
      path.join(os.tmpdir(), `shiplog-rate-limit-store-${store}.log`),
    );
    try {
      const base = `http://127.0.0.1:${port}`;
      for (let tries = 0; ; tries++) {
        const ok = await fetch(`${base}/health/ready`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) break;
        if (tries > 200) throw new Error(`the server did not start: ${server.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      for (let i = 0; i < 20; i++) {
        await fetch(`${base}/api/products/${product.id}/items.json`, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ type: 'task', title: `Item ${i}` }).toString(),
        });
      }
      const h2load = (duration: number) =>
        execFileSync(
          'h2load',
          [
            '--h1',
            '-c',
            '50',
            '-t',
            '1',
            '-D',
            String(duration),
            '-H',
            `authorization: ${auth}`,
            `${base}/api/products/${product.id}/items.json`,
          ],
          { encoding: 'utf8' },
        );
      h2load(2);
      const out = h2load(seconds);
      const rate = /finished in [^,]+, ([\d.]+) req\/s/.exec(out)?.[1];
      const failed = /(\d+) failed/.exec(out)?.[1];
      process.stdout.write(`server, counted in the ${store}: ${Math.round(Number(rate))} req/s (${failed} failed)\n`);
    } finally {
      await stopChild(server);
    }
  }
}

void main();
