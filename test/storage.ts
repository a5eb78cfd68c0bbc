import crypto from 'node:crypto';
import pg from 'pg';
import { DEFAULT_PG_POOL_MAX, poolSizes } from '../src/config.js';
import type { DatabaseOptions } from '../src/db/connection.js';

/**
 * Where a test's data lives. By default the embedded SQLite under its data directory; with
 * TEST_DATABASE_URL set (the suite's PostgreSQL run), a fresh schema of that database for each
 * data directory, so test files never see each other's rows.
 */
export const pgBase = process.env.TEST_DATABASE_URL || undefined;

const schemas = new Map<string, Promise<string>>();

async function createSchema(): Promise<string> {
  const name = `t_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: pgBase });
  await client.connect();
  try {
    await client.query(`create schema ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(pgBase!);
  url.searchParams.set('options', `-c search_path=${name}`);
  return url.toString();
}

/** The PostgreSQL URL of a data directory's schema (made on first use), or undefined on SQLite. */
export async function databaseUrlFor(dataDir: string): Promise<string | undefined> {
  if (!pgBase) return undefined;
  if (!schemas.has(dataDir)) schemas.set(dataDir, createSchema());
  return schemas.get(dataDir)!;
}

/** openDatabase options for a data directory; `memory` keeps SQLite in memory. */
export async function databaseOptionsFor(dataDir: string, memory = false): Promise<DatabaseOptions> {
  const databaseUrl = await databaseUrlFor(dataDir);
  if (!databaseUrl) return { dataDir, filename: memory ? ':memory:' : undefined };
  // Connections shared as a server shares PG_POOL_MAX's default: transactions on their own.
  const { reads, changes } = poolSizes(DEFAULT_PG_POOL_MAX);
  return { dataDir, databaseUrl, poolMax: reads, transactionPoolMax: changes };
}

/** The environment a server or command-line process needs to use a data directory's storage. */
export async function storageEnv(dataDir: string): Promise<Record<string, string>> {
  const databaseUrl = await databaseUrlFor(dataDir);
  return databaseUrl ? { DATA_DIR: dataDir, DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir };
}
