import { sql, type Kysely } from 'kysely';
import { dialectOf, idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// People added to a product through the API are invited first: an invitation row, and one
// outbox message of kind `invitation`, sent to an address that may have no user yet (so the
// outbox's user_id becomes optional).
export async function up(db: Kysely<any>): Promise<void> {
  await idColumn(db, db.schema.createTable('invitations'))
    .addColumn('product_id', 'integer', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('invited_by_id', 'integer', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'text')
    .addUniqueConstraint('invitations_product_email', ['product_id', 'email'])
    .execute();
  // Rate limits count the invitations sent in the last hour per product and per inviter.
  await db.schema
    .createIndex('invitations_product_sent')
    .on('invitations')
    .columns(['product_id', 'sent_at'])
    .execute();
  await db.schema
    .createIndex('invitations_inviter_sent')
    .on('invitations')
    .columns(['invited_by_id', 'sent_at'])
    .execute();

  await outboxUserOptional(db);
  await db.schema
    .alterTable('outbox')
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('deploy'))
    .execute();
  await db.schema
    .alterTable('outbox')
    .addColumn('invitation_id', 'integer', (c) => c.references('invitations.id').onDelete('set null'))
    .execute();
}

/**
 * Drops NOT NULL from outbox.user_id. SQLite cannot alter a column, so the table is rebuilt from
 * its own stored definition (whatever columns it has by now), rows, indexes and id sequence kept.
 */
async function outboxUserOptional(db: Kysely<any>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`alter table outbox alter column user_id drop not null`.execute(db);
    return;
  }
  const schema = (
    await sql<{
      type: string;
      sql: string | null;
    }>`select type, sql from sqlite_master where tbl_name = 'outbox'`.execute(db)
  ).rows;
  const table = schema.find((s) => s.type === 'table')!.sql!;
  const rebuilt = table
    .replace(/^CREATE TABLE "outbox"/, 'CREATE TABLE "outbox_rebuilt"')
    .replace(/"user_id" integer not null/, '"user_id" integer');
  if (
    rebuilt === table ||
    !rebuilt.startsWith('CREATE TABLE "outbox_rebuilt"') ||
    /"user_id" integer not null/.test(rebuilt)
  ) {
    throw new Error('Unexpected definition of the outbox table.');
  }
  const indexes = schema.filter((s) => s.type === 'index' && s.sql).map((s) => s.sql!);
  const seq = (await sql<{ seq: number }>`select seq from sqlite_sequence where name = 'outbox'`.execute(db)).rows[0]
    ?.seq;
  await sql.raw(rebuilt).execute(db);
  await sql`insert into outbox_rebuilt select * from outbox`.execute(db);
  await sql`drop table outbox`.execute(db);
  await sql`alter table outbox_rebuilt rename to outbox`.execute(db);
  for (const index of indexes) await sql.raw(index).execute(db);
  if (seq !== undefined) await sql`update sqlite_sequence set seq = ${seq} where name = 'outbox'`.execute(db);
}
