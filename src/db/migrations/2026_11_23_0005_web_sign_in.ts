import type { Kysely } from 'kysely';
import { idColumn } from '../dialect.js';

// Frozen once released: later changes go into new migrations.
//
// Signing in to the web pages: one-time links (only a hash of each token is kept), every request
// for one (what the rate limits count, whether or not the address has an account), and the
// sessions a link starts (only a hash of each session id is kept).
export async function up(db: Kysely<any>): Promise<void> {
  await idColumn(db, db.schema.createTable('signin_links'))
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    // With the service's sign-in key, what the mailed token is made from when the message is sent.
    .addColumn('token_salt', 'text', (c) => c.notNull())
    // The outbox message that carries the link (none for links printed by the command line).
    .addColumn('message_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('signin_links_message').on('signin_links').column('message_id').execute();

  await idColumn(db, db.schema.createTable('signin_requests'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('client_ip', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('signin_requests_email').on('signin_requests').columns(['email', 'created_at']).execute();
  await db.schema
    .createIndex('signin_requests_client')
    .on('signin_requests')
    .columns(['client_ip', 'created_at'])
    .execute();

  await db.schema
    .createTable('web_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('web_sessions_last_seen').on('web_sessions').column('last_seen_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('web_sessions').execute();
  await db.schema.dropTable('signin_requests').execute();
  await db.schema.dropTable('signin_links').execute();
}
