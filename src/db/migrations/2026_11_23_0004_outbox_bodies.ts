import type { Kysely } from 'kysely';

/**
 * Message bodies are rendered when a message is sent, from what its row names; the columns that
 * once held them were written empty and never read.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('outbox').dropColumn('body_text').execute();
  await db.schema.alterTable('outbox').dropColumn('body_html').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('outbox')
    .addColumn('body_text', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('outbox')
    .addColumn('body_html', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
}
