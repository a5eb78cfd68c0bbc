import crypto from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { formatTimestamp } from '../src/time.js';

/**
 * The harness's own access to the database the service runs on: to pick realistic request
 * targets before a run, and to queue mail in bulk. Never used while a scenario is measured.
 */
export interface BenchStore {
  /** Item numbers in the backlog (status rank 1) among the first `size` items. */
  backlogNumbers(size: number): Promise<number[]>;
  /** Numbers of items whose title can change (anything but stories) among the first `size`. */
  titledNumbers(size: number): Promise<number[]>;
  /**
   * Queues `count` pending copies of the messages of `deployId`, in one transaction.
   */
  queueCopies(deployId: number, count: number): Promise<void>;
  close(): Promise<void>;
}

const COPIED = ['deploy_id', 'user_id', 'to_address', 'subject', 'item_ids'] as const;
type Template = Record<(typeof COPIED)[number], string | number | null>;

interface Copy {
  template: Template;
  messageId: string;
  now: string;
  retryUntil: string;
}

/** Fresh outbox rows from templates: new Message-IDs, due now, never tried. */
function copies(templates: Template[], count: number): Copy[] {
  if (!templates.length) throw new Error('no messages to copy: the priming deploy queued none');
  const now = formatTimestamp(new Date());
  const retryUntil = formatTimestamp(new Date(Date.now() + 86_400_000));
  const run = crypto.randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => ({
    template: templates[i % templates.length],
    messageId: `<bench-${run}-${i}@bench.localhost>`,
    now,
    retryUntil,
  }));
}

/** The outbox columns a copy fills, with their PostgreSQL types (for unnest). */
const OUTBOX_TYPES = {
  deploy_id: 'int4',
  user_id: 'int4',
  to_address: 'text',
  subject: 'text',
  item_ids: 'text',
  message_id: 'text',
  status: 'text',
  attempts: 'int4',
  next_attempt_at: 'text',
  retry_until: 'text',
  created_at: 'text',
};
const OUTBOX_COLUMNS = Object.keys(OUTBOX_TYPES);
const rowOf = (c: Copy) => [...COPIED.map((k) => c.template[k]), c.messageId, 'pending', 0, c.now, c.retryUntil, c.now];

export function sqliteStore(file: string): BenchStore {
  const db = new SQLite(file, { fileMustExist: true });
  db.pragma('busy_timeout = 30000');
  const numbers = (where: string, size: number) =>
    db
      .prepare(`select number from items where product_id = 1 and number <= ? and ${where} order by number`)
      .pluck()
      .all(size) as number[];
  return {
    backlogNumbers: async (size) => numbers('status = 1', size),
    titledNumbers: async (size) => numbers(`type <> 'story'`, size),
    async queueCopies(deployId, count) {
      const templates = db
        .prepare(`select ${COPIED.join(', ')} from outbox where deploy_id = ?`)
        .all(deployId) as Template[];
      const insert = db.prepare(
        `insert into outbox (${OUTBOX_COLUMNS.join(', ')}) values (${OUTBOX_COLUMNS.map(() => '?').join(', ')})`,
      );
      // IMMEDIATE: take the write lock up front, waiting for the service's writes like its own do.
      db.transaction((rows: Copy[]) => {
        for (const row of rows) insert.run(rowOf(row));
      }).immediate(copies(templates, count));
    },
    async close() {
      db.close();
    },
  };
}

export function postgresStore(url: string): BenchStore {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const numbers = async (where: string, size: number) =>
    (
      await pool.query<{ number: number }>(
        `select number from items where product_id = 1 and number <= $1 and ${where} order by number`,
        [size],
      )
    ).rows.map((r) => r.number);
  return {
    backlogNumbers: (size) => numbers('status = 1', size),
    titledNumbers: (size) => numbers(`type <> 'story'`, size),
    async queueCopies(deployId, count) {
      const templates = (
        await pool.query<Template>(`select ${COPIED.join(', ')} from outbox where deploy_id = $1`, [deployId])
      ).rows;
      const rows = copies(templates, count).map(rowOf);
      const types = Object.values(OUTBOX_TYPES);
      const arrays = OUTBOX_COLUMNS.map((_, i) => rows.map((r) => r[i]));
      const unnested = types.map((t, i) => `$${i + 1}::${t}[]`).join(', ');
      await pool.query(`insert into outbox (${OUTBOX_COLUMNS.join(', ')}) select * from unnest(${unnested})`, arrays);
    },
    async close() {
      await pool.end();
    },
  };
}
