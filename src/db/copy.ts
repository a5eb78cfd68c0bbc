import { sql } from 'kysely';
import type { Db } from './connection.js';
import type { Database } from './schema.js';

/**
 * Tables, with their keys, in an order that satisfies their foreign keys. Items refer to their parent items, which
 * may have been created after them, and deploys to the later rollbacks that undid them: those columns
 * (SELF_REFERENCES) are linked in a second pass.
 */
const TABLES: Partial<Record<keyof Database, string[]>> = {
  users: ['id'],
  products: ['id'],
  memberships: ['product_id', 'user_id'],
  items: ['id'],
  item_tags: ['item_id', 'tag'],
  followers: ['item_id', 'user_id'],
  deploys: ['id'],
  deploy_items: ['deploy_id', 'item_id'],
  item_deployments: ['item_id', 'environment'],
  invitations: ['id'],
  outbox: ['id'],
  notification_environments: ['product_id', 'user_id', 'environment'],
  settings: ['name'],
  webhooks: ['id'],
  webhook_events: ['id'],
  webhook_deliveries: ['id'],
  attachments: ['id'],
  activities: ['id'],
  activity_counts: ['product_id', 'item_id'],
  comments: ['id'],
  favorites: ['id'],
  blocks: ['id'],
  annotations: ['id'],
  comment_mail_off: ['product_id', 'user_id'],
  inbound_senders: ['address'],
  inbound_refusals: ['id'],
  inbound_messages: ['item_id', 'message_id'],
};
const SELF_REFERENCES = { items: 'parent_id', deploys: 'reverted_by' } as const;
const SERIAL_TABLES: (keyof Database)[] = [
  'users',
  'products',
  'items',
  'deploys',
  'invitations',
  'outbox',
  'webhooks',
  'webhook_events',
  'webhook_deliveries',
  'attachments',
  'activities',
  'comments',
  'favorites',
  'blocks',
  'annotations',
  'inbound_refusals',
];
const BATCH = 500;
/** Rows of files are copied a few at a time: each can be ATTACHMENT_MAX_MB. */
const BATCHES: Partial<Record<keyof Database, number>> = { attachments: 4 };

export interface CopyReport {
  table: string;
  source: number;
  target: number;
}

async function count(db: Db, table: keyof Database): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export class CopyError extends Error {}

/**
 * Copies every row of a Shiplog database into another, empty one (SQLite to PostgreSQL), keeping
 * ids, in one transaction on the target; then moves the target's id sequences past the copied
 * ids and compares the counts of every table. Throws CopyError if the target is not empty.
 */
export async function copyDatabase(
  source: Db,
  target: Db,
  onTable: (table: string, rows: number) => void = () => undefined,
): Promise<CopyReport[]> {
  const tables = Object.keys(TABLES) as (keyof Database)[];
  for (const table of tables) {
    if ((await count(target, table)) > 0)
      throw new CopyError(`The target database is not empty (table ${table} has rows).`);
  }
  await target.transaction().execute(async (trx) => {
    for (const table of tables) {
      let copied = 0;
      const batch = BATCHES[table] ?? BATCH;
      for (let offset = 0; ; offset += batch) {
        // Ordered by the whole key, so that pages neither skip nor repeat a row.
        let page = source.selectFrom(table).selectAll();
        for (const column of TABLES[table]!) page = page.orderBy(sql.ref(column));
        const rows = (await page.limit(batch).offset(offset).execute()) as Record<string, unknown>[];
        if (rows.length === 0) break;
        const self = SELF_REFERENCES[table as keyof typeof SELF_REFERENCES];
        const values = self ? rows.map((r) => ({ ...r, [self]: null })) : rows;
        await trx
          .insertInto(table)
          .values(values as never)
          .execute();
        copied += rows.length;
      }
      onTable(table, copied);
    }
    const children = await source
      .selectFrom('items')
      .select(['id', 'parent_id'])
      .where('parent_id', 'is not', null)
      .execute();
    for (const child of children) {
      await trx.updateTable('items').set({ parent_id: child.parent_id }).where('id', '=', child.id).execute();
    }
    const undone = await source
      .selectFrom('deploys')
      .select(['id', 'reverted_by'])
      .where('reverted_by', 'is not', null)
      .execute();
    for (const deploy of undone) {
      await trx.updateTable('deploys').set({ reverted_by: deploy.reverted_by }).where('id', '=', deploy.id).execute();
    }
    for (const table of SERIAL_TABLES) {
      await sql`select setval(pg_get_serial_sequence(${table}, 'id'), coalesce(max(id), 1), max(id) is not null)
        from ${sql.table(table)}`.execute(trx);
    }
  });
  const report: CopyReport[] = [];
  for (const table of tables)
    report.push({ table, source: await count(source, table), target: await count(target, table) });
  return report;
}
