import type { Kysely } from 'kysely';

// Frozen once released: later changes go into new migrations.
//
// Page sessions end for good reasons other than idleness: all of a person's at once (a new API
// key, "sign out everywhere"), found by user, and every one a fixed time after it began, found by
// when it was created.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('web_sessions_user').on('web_sessions').column('user_id').execute();
  await db.schema.createIndex('web_sessions_created').on('web_sessions').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('web_sessions_created').execute();
  await db.schema.dropIndex('web_sessions_user').execute();
}
