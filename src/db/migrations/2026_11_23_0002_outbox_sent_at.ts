import type { Kysely } from 'kysely';

/**
 * The time of the latest delivery, read by every health check to tell whether mail is moving, is
 * one step down this index instead of a walk over the whole history of sent messages.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('outbox_sent_at').on('outbox').column('sent_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('outbox_sent_at').execute();
}
