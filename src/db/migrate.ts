import { Migrator, type Kysely, type Migration } from 'kysely';
import * as initial from './migrations/2026_11_22_0001_initial.js';

/** Every migration, by name; names sort in the order they apply. */
const migrations: Record<string, Migration> = {
  '2026_11_22_0001_initial': initial,
};

/** Brings the schema up to date; throws with the failing migration's error. */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}
