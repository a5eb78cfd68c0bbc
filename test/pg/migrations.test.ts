import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/db/connection.js';
import { tempDir } from '../helpers.js';
import { databaseUrlFor } from '../storage.js';

// Test files share one PostgreSQL database, each in schemas of its own, and migrate them side by
// side: a migration that drops a column in one schema must never fail another schema's.
test('a schema migrates while another schema of the database adds and drops columns', async () => {
  const churnUrl = (await databaseUrlFor(tempDir('shiplog-churn-')))!;
  const churn = new pg.Client({ connectionString: churnUrl });
  await churn.connect();
  let churning = true;
  let rounds = 0;
  const columns = Array.from({ length: 40 }, (_, i) => `c${i}`);
  const create = `create table churned (${columns.map((c) => `${c} text`).join(', ')})`;
  await churn.query(create);
  const churned = (async () => {
    while (churning) {
      for (const c of columns) await churn.query(`alter table churned drop column ${c}`);
      for (const c of columns) await churn.query(`alter table churned add column ${c} text`);
      rounds += 1;
      // A dropped column still counts against a table's 1,600: the table is made anew before that.
      if (rounds % 30 === 0) await churn.query(`drop table churned; ${create}`);
    }
  })();
  try {
    for (let i = 0; i < 8; i++) {
      const db = await openDatabase({
        dataDir: '',
        databaseUrl: (await databaseUrlFor(tempDir('shiplog-migrated-')))!,
      });
      await db.destroy();
    }
  } finally {
    churning = false;
    try {
      await churned;
    } finally {
      await churn.end();
    }
  }
  assert.ok(rounds > 0);
});
