/**
 * What counting requests in PostgreSQL costs (RATE_LIMIT_STORE=database): the limiter's one upsert
 * a request (http/repository.ts countInWindow), beside the baseline of the same run, a bare
 * `select 1` on the same pool: one after another, and 8 at once on one key (one user's requests
 * from several instances: they queue on its row) and on 8 keys.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/rate-limit-store.ts
 *
 * Works in a schema of its own, dropped at the end.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase, type Db } from '../src/db/connection.js';
import { countInWindow } from '../src/http/repository.js';

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
  } finally {
    await db.destroy();
    await admin(`drop schema ${schema} cascade`);
  }
}

void main();
