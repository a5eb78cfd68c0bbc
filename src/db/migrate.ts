import { Migrator, sql, type DatabaseIntrospector, type Kysely, type Migration, type TableMetadata } from 'kysely';
import { dialectOf } from './dialect.js';
import * as initial from './migrations/2026_11_22_0001_initial.js';
import * as invitations from './migrations/2026_11_23_0001_invitations.js';
import * as outboxSentAt from './migrations/2026_11_23_0002_outbox_sent_at.js';
import * as boundedLists from './migrations/2026_11_23_0003_bounded_lists.js';
import * as outboxBodies from './migrations/2026_11_23_0004_outbox_bodies.js';
import * as webSignIn from './migrations/2026_11_23_0005_web_sign_in.js';
import * as deployedWhere from './migrations/2026_11_23_0010_deployed_where.js';
import * as notificationEnvironments from './migrations/2026_11_23_0020_notification_environments.js';
import * as productRevision from './migrations/2026_11_23_0030_product_revision.js';
import * as webhooks from './migrations/2026_11_23_0050_webhooks.js';
import * as deployedStatus from './migrations/2026_11_23_0070_deployed_status.js';
import * as itemDeploysInOrder from './migrations/2026_11_23_0080_item_deploys_in_order.js';
import * as coveringItemLookups from './migrations/2026_11_23_0090_covering_item_lookups.js';
import * as itemVersion from './migrations/2026_11_26_0010_item_version.js';
import * as webhookBodies from './migrations/2026_11_26_0030_webhook_bodies.js';
import * as renderedMarkdown from './migrations/2026_11_26_0050_rendered_markdown.js';
import * as sessions from './migrations/2026_11_26_0060_sessions.js';
import * as signinClients from './migrations/2026_11_26_0070_signin_clients.js';
import * as openLists from './migrations/2026_11_26_0090_open_lists.js';
import * as deployPages from './migrations/2026_11_26_0100_deploy_pages.js';
import * as conversation from './migrations/2026_11_27_0010_conversation.js';
import * as deployBlockers from './migrations/2026_11_27_0015_deploy_blockers.js';
import * as attachments from './migrations/2026_11_27_0030_attachments.js';
import * as activities from './migrations/2026_11_27_0020_activities.js';
import * as inboundMail from './migrations/2026_11_27_0040_inbound_mail.js';
import * as inboundReceived from './migrations/2026_11_27_0045_inbound_received.js';
import * as search from './migrations/2026_11_28_0100_search.js';
import * as tagFilterCase from './migrations/2026_11_28_0200_tag_filter_case.js';
import * as rateLimitWindows from './migrations/2026_11_28_0300_rate_limit_windows.js';
import * as searchAtCommit from './migrations/2026_11_29_0100_search_at_commit.js';
import * as searchAtCommitPostgres from './migrations/2026_11_29_0200_search_at_commit_postgres.js';

/** Every migration, by name; names sort in the order they apply. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '2026_11_22_0001_initial': initial,
  '2026_11_23_0001_invitations': invitations,
  '2026_11_23_0002_outbox_sent_at': outboxSentAt,
  '2026_11_23_0003_bounded_lists': boundedLists,
  '2026_11_23_0004_outbox_bodies': outboxBodies,
  '2026_11_23_0005_web_sign_in': webSignIn,
  '2026_11_23_0010_deployed_where': deployedWhere,
  '2026_11_23_0020_notification_environments': notificationEnvironments,
  '2026_11_23_0030_product_revision': productRevision,
  '2026_11_23_0050_webhooks': webhooks,
  '2026_11_23_0070_deployed_status': deployedStatus,
  '2026_11_23_0080_item_deploys_in_order': itemDeploysInOrder,
  '2026_11_23_0090_covering_item_lookups': coveringItemLookups,
  '2026_11_26_0010_item_version': itemVersion,
  '2026_11_26_0030_webhook_bodies': webhookBodies,
  '2026_11_26_0050_rendered_markdown': renderedMarkdown,
  '2026_11_26_0060_sessions': sessions,
  '2026_11_26_0070_signin_clients': signinClients,
  '2026_11_26_0090_open_lists': openLists,
  '2026_11_26_0100_deploy_pages': deployPages,
  '2026_11_27_0010_conversation': conversation,
  '2026_11_27_0015_deploy_blockers': deployBlockers,
  '2026_11_27_0030_attachments': attachments,
  '2026_11_27_0020_activities': activities,
  '2026_11_27_0040_inbound_mail': inboundMail,
  '2026_11_27_0045_inbound_received': inboundReceived,
  '2026_11_28_0100_search': search,
  '2026_11_28_0200_tag_filter_case': tagFilterCase,
  '2026_11_28_0300_rate_limit_windows': rateLimitWindows,
  '2026_11_29_0100_search_at_commit': searchAtCommit,
  '2026_11_29_0200_search_at_commit_postgres': searchAtCommitPostgres,
};

/** The names of every migration, in the order they apply. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS).sort();

/**
 * Brings the schema up to date; throws with the failing migration's error. Safe when several
 * instances start at once: Kysely's migrator holds a lock while it migrates (an advisory lock on
 * PostgreSQL, the single writer on SQLite).
 */
export async function migrateToLatest<DB>(db: Kysely<DB>): Promise<void> {
  // On PostgreSQL the bookkeeping tables live in the connection's own schema (search_path), not
  // wherever a table of that name happens to exist.
  const migrationTableSchema =
    dialectOf(db) === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0].schema
      : undefined;
  // Changes made side by side are numbered apart and may be released in another order: a database
  // that has 0020 already still takes a 0010 that came later (each touches its own columns).
  const migrator = new Migrator({
    db: migrationTableSchema ? withOwnSchemaIntrospection(db, migrationTableSchema) : db,
    provider: { getMigrations: async () => MIGRATIONS },
    migrationTableSchema,
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/**
 * The migrator asks whether its tables exist by listing every table of the database with Kysely's
 * PostgreSQL introspector, which resolves each column again by name (pg_get_serial_sequence): while
 * another schema of the same database drops a column, that listing fails with "column ... does not
 * exist". The migrator only needs the names of schemas and of its own schema's tables, read here
 * from the catalog with nothing resolved by name.
 */
function withOwnSchemaIntrospection<DB>(db: Kysely<DB>, schema: string): Kysely<DB> {
  const introspection: DatabaseIntrospector = {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(db);
      return rows;
    },
    async getTables() {
      const { rows } = await sql<{ name: string; schema: string; isView: boolean }>`
        select c.relname as name, n.nspname as schema, c.relkind = 'v' as "isView"
        from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v')`.execute(db);
      return rows.map((row): TableMetadata => ({ ...row, columns: [] }));
    },
    async getMetadata() {
      return { tables: await this.getTables() };
    },
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === 'introspection') return introspection;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
