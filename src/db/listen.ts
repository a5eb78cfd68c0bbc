import { sql, type RawBuilder } from 'kysely';
import type pg from 'pg';
import type { Trx } from './connection.js';
import { dialectOf } from './dialect.js';

/** The one channel of PostgreSQL notifications Shiplog sends and listens on. */
export const CHANGES_CHANNEL = 'shiplog_changes';

/**
 * Tells the other instances that a product's revision moved (PostgreSQL only: on SQLite they share
 * the file and read the revision). `pg_notify` in the writing transaction is delivered at its
 * commit, and not at all when it rolls back; the same payload twice in one transaction is sent once.
 * The payload names the schema, so installations that share a database in schemas of their own
 * ignore each other's changes.
 */
export async function notifyProductChanged(trx: Trx, productId: number): Promise<void> {
  if (dialectOf(trx) !== 'postgres') return;
  await sql`select ${productChangedNotification(productId)}`.execute(trx);
}

/** notifyProductChanged as an expression, for a statement of the change to carry (PostgreSQL). */
export const productChangedNotification = (productId: number): RawBuilder<unknown> =>
  sql`pg_notify(${CHANGES_CHANNEL}, current_schema() || ' ' || ${String(productId)})`;

/** The application_name of the listening connections. */
export const LISTENER_NAME = 'shiplog_listen';

/** Waits between attempts to connect again: doubling from the first, up to the last. */
const RECONNECT_MS = [500, 1000, 2000, 5000, 10_000];

export interface ChangeListenerOptions {
  /** Told of each product whose revision moved in this schema. */
  onChange: (productId: number) => void;
  /** Told when the listener starts listening (a change may have been missed before) and when it stops. */
  onListening: (listening: boolean) => void;
}

/**
 * One dedicated PostgreSQL connection (outside the pool: a pooled one is handed to others, and
 * LISTEN belongs to a session) listening on CHANGES_CHANNEL. When it drops it connects again,
 * waiting longer each time; while it is down the caller keeps reading revisions by itself.
 */
export class ChangeListener {
  private client?: pg.Client;
  private retry?: NodeJS.Timeout;
  private attempts = 0;
  private stopped = false;
  private schema = '';

  constructor(
    private readonly databaseUrl: string,
    private readonly o: ChangeListenerOptions,
  ) {}

  /** Starts connecting; returns at once. */
  start(): void {
    void this.connect();
  }

  /** Ends the connection and any attempt to make it again. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const { default: pg } = await import('pg');
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      connectionTimeoutMillis: 5000,
      // How an operator (and a test) tells it from the pool's connections in pg_stat_activity.
      application_name: LISTENER_NAME,
      // A connection that silently went away is found by TCP keepalive instead of never.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.stopped) return;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      this.o.onListening(false);
      this.again();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (n) => {
      if (n.channel !== CHANGES_CHANNEL || !n.payload) return;
      const space = n.payload.lastIndexOf(' ');
      if (n.payload.slice(0, space) !== this.schema) return;
      const id = Number(n.payload.slice(space + 1));
      if (Number.isSafeInteger(id)) this.o.onChange(id);
    });
    try {
      await client.connect();
      const [{ schema }] = (await client.query<{ schema: string }>('select current_schema() as schema')).rows;
      this.schema = schema;
      await client.query(`listen ${CHANGES_CHANNEL}`);
    } catch {
      onLost();
      return;
    }
    if (this.stopped || lost) {
      if (!lost) await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempts = 0;
    this.o.onListening(true);
  }

  private again(): void {
    if (this.stopped) return;
    const wait = RECONNECT_MS[Math.min(this.attempts++, RECONNECT_MS.length - 1)];
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), wait);
    this.retry.unref();
  }
}
