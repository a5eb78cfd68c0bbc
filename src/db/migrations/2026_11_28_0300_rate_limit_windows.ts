import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// The rate limiter's windows on PostgreSQL, where instances share them (http/rate-limit.ts): one
// row per user or client address, its count and when its window ends (ms since the epoch).
// Unlogged there: a counter is written by every request, and losing the counts in a crash only
// starts every window afresh. On SQLite the one process counts in memory; the table stays empty.
export async function up(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`create unlogged table rate_limit_windows (
      key text primary key,
      count integer not null,
      ends_at bigint not null
    )`.execute(db);
  } else {
    await db.schema
      .createTable('rate_limit_windows')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('ends_at', 'integer', (c) => c.notNull())
      .execute();
  }
  await db.schema.createIndex('rate_limit_windows_ends_at').on('rate_limit_windows').column('ends_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('rate_limit_windows').execute();
}
