import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// The client addresses (grouped as the sign-in limits group them) from which each person used a
// sign-in link, and when last: asking for links from one of them is not held back by what
// strangers asked for the same address. Old ones are pruned by when they were last used.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signin_clients')
    .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_ip', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('signin_clients_pkey', ['user_id', 'client_ip'])
    .execute();
  await db.schema.createIndex('signin_clients_used').on('signin_clients').column('used_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('signin_clients').execute();
}
