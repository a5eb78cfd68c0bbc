import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import MarkdownIt from 'markdown-it';
import pg from 'pg';
import { Kysely, SqliteDialect } from 'kysely';
import { openDatabase } from '../src/db/connection.js';
import * as searchIndex from '../src/db/migrations/2026_11_28_0100_search.js';
import * as searchAtCommit from '../src/db/migrations/2026_11_29_0100_search_at_commit.js';
import { SCORES, SORT_STEP, STATUSES, storyTitle } from '../src/items/model.js';
import { formatTimestamp } from '../src/time.js';
import { hashApiKey } from '../src/users/keys.js';
import { DATA_ROOT, ROOT } from './config.js';

/** A seeded user and the API key that authenticates as them. */
export interface BenchUser {
  id: number;
  email: string;
  apiKey: string;
}

/** What the runner needs to know about a seeded dataset beyond what it can query. */
export interface DatasetInfo {
  size: number;
  productId: number;
  users: BenchUser[];
  /** The user every request authenticates as (an admin member). */
  caller: BenchUser;
  /** Groups of 50 item numbers that every user follows: a deploy of one mails 19 people. */
  deployGroups: number[][];
  environments: string[];
  deploys: number;
  seedSeconds: number;
}

/**
 * Descriptions and notes as the server keeps them, rendered on write (src/markdown.ts, same
 * options): a dataset without them would have the server render them all when it starts. The
 * seed's texts are few and repeat, so each is rendered once.
 */
const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true });
const renderedTexts = new Map<string, string>();
const rendered = (text: string): string => {
  let html = renderedTexts.get(text);
  if (html === undefined) {
    html = markdown.render(text);
    renderedTexts.set(text, html);
  }
  return html;
};

const USER_COUNT = 20;
const DEPLOY_COUNT = 1000;
const DEPLOY_GROUP_SIZE = 50;
const DEPLOY_GROUPS = 10;
const ENVIRONMENTS = ['staging', 'production'];
const PRODUCT_ID = 1;
/** The item people talk about most: it has CHATTY_COMMENTS comments. */
export const CHATTY_ITEM = 1;
const CHATTY_COMMENTS = 10_000;
/** One item in FAVORITE_EVERY has favorites, from 1 to 5 people, so that order_by=favorites has something to sort. */
const FAVORITE_EVERY = 50;
const DAY = 86_400_000;
const END = Date.UTC(2026, 10, 1);
const START = END - 3 * 365 * DAY;

// Status mix of a long-lived product: most work is accepted; backlog holds ~10% (100,000 at 1M),
// the status the resort scenario moves items in.
const STATUS_WEIGHTS = [0.05, 0.1, 0.05, 0.1, 0.7];
const TYPES = ['story', 'task', 'defect', 'test'];
const TYPE_WEIGHTS = [0.3, 0.3, 0.3, 0.1];
const SUB_ITEM_SHARE = 0.05;
const ASSIGNED_SHARE = 0.85;
const TAGS = [
  'api',
  'ui',
  'backend',
  'frontend',
  'mobile',
  'billing',
  'search',
  'auth',
  'performance',
  'docs',
  'infra',
  'onboarding',
];
const CLOSE_REASONS = ['fixed', 'invalid', 'duplicate', 'incomplete', 'wont-fix', 'works-for-me'];

const VERBS = [
  'Fix',
  'Add',
  'Improve',
  'Remove',
  'Refactor',
  'Document',
  'Speed up',
  'Test',
  'Polish',
  'Migrate',
  'Rework',
  'Log',
];
const OBJECTS = [
  'the login form',
  'search results paging',
  'the CSV export',
  'the billing page',
  'email digests',
  'the deploy hook',
  'API rate limits',
  'the mobile menu',
  'image uploads',
  'the admin dashboard',
  'webhook retries',
  'password reset',
  'the activity feed',
  'tag suggestions',
  'the onboarding checklist',
  'invoice numbering',
  'timezone handling',
];
const WHO = ['user', 'admin', 'editor', 'owner', 'guest', 'operator', 'developer', 'account manager', 'support agent'];
const WHAT = [
  'to export my items',
  'to see what was deployed',
  'to filter by tag',
  'to reorder the backlog',
  'to invite a colleague',
  'to get fewer emails',
  'to search old items',
  'to see who follows an item',
  'to archive finished work',
];
const WHY = [
  'I can share progress',
  'I save time every week',
  'nothing falls through the cracks',
  'the team knows what is next',
  'customers get answers sooner',
  'reports are accurate',
  'I am not interrupted',
];
const SENTENCES = [
  'Steps to reproduce are in the support ticket linked below.',
  'This only happens when the list has more than one page of results.',
  'The current behaviour confuses new users during their first week.',
  'We agreed in planning to keep the change small and ship it behind a flag.',
  'See the screenshot in the thread for the expected layout on small screens.',
  'Make sure the old endpoint keeps working until every client has moved.',
  'Measure before and after; the last attempt made things slower on large accounts.',
  'Acceptance: the page loads in under a second with the production dataset.',
];

interface Column {
  name: string;
  /** PostgreSQL element type for the bulk insert through unnest(). */
  pgType: 'int4' | 'int8' | 'text';
}

const cols = (spec: string): Column[] =>
  spec
    .split(/\s+/)
    .filter(Boolean)
    .map((c) => {
      const [name, pgType = 'text'] = c.split(':');
      return { name, pgType: pgType as Column['pgType'] };
    });

/** The columns the seed writes, in the order rows list them; the rest keep their defaults. */
const TABLES = {
  users: cols('id:int4 email first_name last_name api_key_hash created_at last_login'),
  products: cols('id:int4 name archived:int4 created_at last_number:int4'),
  memberships: cols('product_id:int4 user_id:int4 admin:int4 created_at'),
  items: cols(
    'id:int4 product_id:int4 number:int4 type status:int4 title who what why description score archived:int4 ' +
      'created_by_id:int4 assigned_to_id:int4 parent_id:int4 sort:int8 close_reason started_at closed_at accepted_at ' +
      'created_at last_modified last_activity description_html comments_count:int4 favorites_count:int4',
  ),
  item_tags: cols('item_id:int4 position:int4 tag'),
  followers: cols('item_id:int4 user_id:int4 created_at'),
  deploys: cols(
    'id:int4 product_id:int4 user_id:int4 environment version notes created_at idempotency_key request_hash notes_html',
  ),
  deploy_items: cols('deploy_id:int4 item_id:int4'),
  item_deployments: cols('item_id:int4 environment deploy_id:int4 version deployed_at product_id:int4 status:int4'),
  comments: cols('item_id:int4 user_id:int4 body created_at last_modified'),
  favorites: cols('item_id:int4 user_id:int4 created_at'),
} as const;
type TableName = keyof typeof TABLES;
/** Parents before children, so foreign keys hold after every flush. */
const TABLE_ORDER = Object.keys(TABLES) as TableName[];

type Row = (string | number | null)[];

/** Where generated rows go; SQLite and PostgreSQL each batch them their own way. */
interface RowWriter {
  add(table: TableName, row: Row): void;
  /** Called between batches of items: a point where everything added so far may be written. */
  checkpoint(): Promise<void>;
  finish(): Promise<void>;
}

/** mulberry32: a small seeded generator, so every run builds the same dataset. */
function randomSource(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** API keys are derived from the email, so they are known without storing them anywhere. */
function apiKeyFor(email: string): string {
  const digest = crypto
    .createHash('sha256')
    .update(`shiplog-bench:${email}`)
    .digest('base64')
    .replace(/[^A-Za-z0-9]/g, '');
  return digest.slice(0, 32).padEnd(32, 'x');
}

export function benchUsers(): BenchUser[] {
  return Array.from({ length: USER_COUNT }, (_, i) => {
    const email = `bench${String(i + 1).padStart(2, '0')}@example.com`;
    return { id: i + 1, email, apiKey: apiKeyFor(email) };
  });
}

/** Seconds-precision ISO text, as the service stores it. */
const ts = (ms: number): string => formatTimestamp(new Date(Math.min(ms, END)));

/**
 * The dataset, decided by a generator seeded with the size: the same rows on every machine, so
 * figures of two runs describe the same data.
 */
class Generator {
  private readonly random: () => number;
  readonly type: Uint8Array;
  readonly status: Uint8Array;
  readonly parent: Int32Array;
  readonly lastDeploy: Float64Array;
  readonly fixture: Uint8Array;
  readonly deployGroups: number[][] = [];
  /** item_deployments rows, known once deploys are planned, written after the items. */
  private latestDeployments: Row[] = [];

  constructor(readonly size: number) {
    this.random = randomSource(size);
    this.type = new Uint8Array(size + 1);
    this.status = new Uint8Array(size + 1);
    this.parent = new Int32Array(size + 1);
    this.lastDeploy = new Float64Array(size + 1);
    this.fixture = new Uint8Array(size + 1);
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)];
  }

  private weighted(weights: number[]): number {
    let r = this.random();
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  private user(): number {
    return 1 + Math.floor(this.random() * USER_COUNT);
  }

  private createdAt(n: number): number {
    return Math.floor((START + ((END - START) * (n - 0.5)) / this.size) / 1000) * 1000;
  }

  /**
   * Decides type, status and parent of every item first, so deploys can pick closed items and
   * items can know their latest deploy when they are written.
   */
  planItems(): void {
    const recentStories: number[] = [];
    const subShareOfNonStories = SUB_ITEM_SHARE / (1 - TYPE_WEIGHTS[0]);
    for (let n = 1; n <= this.size; n++) {
      const type = this.weighted(TYPE_WEIGHTS);
      this.type[n] = type;
      this.status[n] = this.weighted(STATUS_WEIGHTS);
      if (type === 0) {
        recentStories.push(n);
        if (recentStories.length > 200) recentStories.shift();
      } else if (recentStories.length && this.random() < subShareOfNonStories) {
        this.parent[n] = this.pick(recentStories);
      }
    }
    this.planFixtures();
  }

  /** The newest completed (then accepted) items, in groups of 50, followed by every user. */
  private planFixtures(): void {
    const chosen: number[] = [];
    for (const status of [3, 4]) {
      for (let n = this.size; n >= 1 && chosen.length < DEPLOY_GROUPS * DEPLOY_GROUP_SIZE; n--) {
        if (this.status[n] === status) chosen.push(n);
      }
    }
    chosen.sort((a, b) => a - b);
    for (let g = 0; g + DEPLOY_GROUP_SIZE <= chosen.length; g += DEPLOY_GROUP_SIZE) {
      this.deployGroups.push(chosen.slice(g, g + DEPLOY_GROUP_SIZE));
    }
    for (const n of chosen) this.fixture[n] = 1;
  }

  writeUsers(out: RowWriter): void {
    const created = ts(START - 30 * DAY);
    for (const u of benchUsers()) {
      const [first, last] = [`Bench${u.id}`, `User${u.id}`];
      out.add('users', [u.id, u.email, first, last, hashApiKey(u.apiKey), created, null]);
    }
    out.add('products', [PRODUCT_ID, 'Bench product', 0, created, this.size]);
    for (const u of benchUsers()) out.add('memberships', [PRODUCT_ID, u.id, u.id === 1 ? 1 : 0, created]);
  }

  /**
   * 1,000 deploys over the product's life, alternating environments, each of closed items created
   * before it; remembers each item's latest deploy per environment for item_deployments.
   */
  writeDeploys(out: RowWriter): void {
    const latest = new Map<number, number>();
    const deployTimes: number[] = [0];
    for (let d = 1; d <= DEPLOY_COUNT; d++) {
      const at = START + (END - START) * (0.1 + (0.9 * (d - 0.5)) / DEPLOY_COUNT);
      const env = d % 2;
      deployTimes.push(at);
      const notes = `Release ${d}: fixes and small features.`;
      out.add('deploys', [
        d,
        PRODUCT_ID,
        this.user(),
        ENVIRONMENTS[env],
        `v1.${d}.0`,
        notes,
        ts(at),
        null,
        null,
        rendered(notes),
      ]);
      const cap = Math.max(1, Math.floor((this.size * (at - START)) / (END - START)));
      const wanted = 5 + Math.floor(this.random() * 36);
      const numbers = new Set<number>();
      for (let tries = 0; numbers.size < wanted && tries < wanted * 50; tries++) {
        const n = 1 + Math.floor(this.random() * cap);
        if (this.status[n] >= 3) numbers.add(n);
      }
      for (const n of numbers) {
        out.add('deploy_items', [d, n]);
        latest.set(n * 2 + env, d);
        this.lastDeploy[n] = at;
      }
    }
    this.latestDeployments = [...latest].map(([key, d]) => {
      const n = Math.floor(key / 2);
      return [n, ENVIRONMENTS[key % 2], d, `v1.${d}.0`, ts(deployTimes[d]), PRODUCT_ID, this.status[n]] as Row;
    });
  }

  /** The talked-about item's comments, a minute apart, by everyone in turn. */
  writeComments(out: RowWriter): void {
    const first = this.createdAt(CHATTY_ITEM);
    for (let c = 0; c < CHATTY_COMMENTS; c++) {
      const at = ts(first + c * 60_000);
      out.add('comments', [CHATTY_ITEM, 1 + (c % USER_COUNT), `${this.pick(SENTENCES)} (${c + 1})`, at, at]);
    }
  }

  writeItemDeployments(out: RowWriter): void {
    for (const row of this.latestDeployments) out.add('item_deployments', row);
  }

  private description(): string {
    if (this.random() < 0.2) return '';
    const sentences = new Set<string>();
    const count = 1 + Math.floor(this.random() * 3);
    while (sentences.size < count) sentences.add(this.pick(SENTENCES));
    return [...sentences].join(' ');
  }

  /** Writes item n with its tags and followers (creator, assignee, and everyone on fixtures). */
  writeItem(out: RowWriter, n: number, sorts: number[]): void {
    const r = () => this.random();
    const status = this.status[n];
    const type = TYPES[this.type[n]];
    const created = this.createdAt(n);
    const started = status >= 2 ? created + (0.5 + r() * 10) * DAY : null;
    const closed = status >= 3 ? started! + (0.5 + r() * 20) * DAY : null;
    const accepted = status === 4 ? closed! + r() * 5 * DAY : null;
    const modified = Math.max(created, started ?? 0, closed ?? 0, accepted ?? 0) + r() * 2 * DAY;
    const activity = Math.max(modified, this.lastDeploy[n]);
    const story = type === 'story';
    const [who, what, why] = story ? [this.pick(WHO), this.pick(WHAT), this.pick(WHY)] : [null, null, null];
    const title = story ? storyTitle(who!, what!, why!) : `${this.pick(VERBS)} ${this.pick(OBJECTS)}`;
    const creator = this.user();
    const assignee = r() < ASSIGNED_SHARE ? this.user() : null;
    sorts[status] += SORT_STEP;
    const closeReason = status >= 3 ? (r() < 0.9 ? 'fixed' : this.pick(CLOSE_REASONS)) : null;
    const description = this.description();
    const favorites = n % FAVORITE_EVERY === 0 ? 1 + ((n / FAVORITE_EVERY) % 5) : 0;
    out.add('items', [
      n,
      PRODUCT_ID,
      n,
      type,
      status,
      title,
      who,
      what,
      why,
      description,
      this.pick(SCORES),
      0,
      creator,
      assignee,
      this.parent[n] || null,
      sorts[status],
      closeReason,
      started === null ? null : ts(started),
      closed === null ? null : ts(closed),
      accepted === null ? null : ts(accepted),
      ts(created),
      ts(modified),
      ts(activity),
      rendered(description),
      n === CHATTY_ITEM ? CHATTY_COMMENTS : 0,
      favorites,
    ]);
    for (let u = 1; u <= favorites; u++) out.add('favorites', [n, u, ts(modified)]);
    const tagCount = Math.floor(r() * 4);
    const tags = new Set<string>();
    while (tags.size < tagCount) tags.add(this.pick(TAGS));
    for (const [position, tag] of [...tags].entries()) out.add('item_tags', [n, position, tag]);
    const followedAt = ts(created);
    const followers = new Set([creator]);
    if (assignee) followers.add(assignee);
    if (this.fixture[n]) for (let u = 1; u <= USER_COUNT; u++) followers.add(u);
    for (const u of followers) out.add('followers', [n, u, followedAt]);
  }
}

/** Generates the whole dataset into `out`: users, product, items with relations, deploys. */
async function generate(
  size: number,
  out: RowWriter,
  progress: (done: number) => void,
): Promise<Pick<DatasetInfo, 'deployGroups'>> {
  const gen = new Generator(size);
  gen.planItems();
  gen.writeUsers(out);
  // Deploys are decided before items (items carry their latest deploy in last_activity) but
  // written after them: deploy_items refer to items.
  const deployRows = new CollectingWriter();
  gen.writeDeploys(deployRows);
  const sorts = STATUSES.map(() => 0);
  for (let n = 1; n <= size; n++) {
    gen.writeItem(out, n, sorts);
    if (n % 10_000 === 0) {
      await out.checkpoint();
      progress(n);
    }
  }
  for (const [table, row] of deployRows.rows) out.add(table, row);
  gen.writeItemDeployments(out);
  gen.writeComments(out);
  await out.finish();
  return { deployGroups: gen.deployGroups };
}

/** Holds rows decided early but written later, once the rows they refer to exist. */
class CollectingWriter implements RowWriter {
  readonly rows: [TableName, Row][] = [];
  add(table: TableName, row: Row): void {
    this.rows.push([table, row]);
  }
  async checkpoint(): Promise<void> {}
  async finish(): Promise<void> {}
}

/** Rows go straight into prepared statements; one transaction per ~100,000 items. */
class SqliteWriter implements RowWriter {
  private readonly statements = new Map<TableName, SQLite.Statement>();
  private sinceCommit = 0;

  constructor(private readonly db: SQLite.Database) {
    for (const table of TABLE_ORDER) {
      const names = TABLES[table].map((c) => c.name);
      this.statements.set(
        table,
        db.prepare(`insert into ${table} (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`),
      );
    }
    db.exec('begin');
  }

  add(table: TableName, row: Row): void {
    this.statements.get(table)!.run(row);
  }

  async checkpoint(): Promise<void> {
    if (++this.sinceCommit < 10) return;
    this.sinceCommit = 0;
    this.db.exec('commit; begin');
  }

  async finish(): Promise<void> {
    this.db.exec('commit');
  }
}

/** Rows are buffered per table and sent as one INSERT ... SELECT FROM unnest(arrays) per table. */
class PostgresWriter implements RowWriter {
  private readonly buffers = new Map<TableName, Row[]>(TABLE_ORDER.map((t) => [t, []]));

  constructor(private readonly client: pg.Client) {}

  add(table: TableName, row: Row): void {
    this.buffers.get(table)!.push(row);
  }

  private async flush(table: TableName): Promise<void> {
    const rows = this.buffers.get(table)!;
    if (!rows.length) return;
    this.buffers.set(table, []);
    const columns = TABLES[table];
    for (let start = 0; start < rows.length; start += 20_000) {
      const chunk = rows.slice(start, start + 20_000);
      const arrays = columns.map((_, i) => chunk.map((row) => row[i]));
      const names = columns.map((c) => c.name).join(', ');
      const casts = columns.map((c, i) => `$${i + 1}::${c.pgType}[]`).join(', ');
      await this.client.query(`insert into ${table} (${names}) select * from unnest(${casts})`, arrays);
    }
  }

  async checkpoint(): Promise<void> {
    for (const table of TABLE_ORDER) await this.flush(table);
  }

  async finish(): Promise<void> {
    await this.checkpoint();
  }
}

/**
 * Names a dataset by the schema it was built for: the migrations and this generator. A change to
 * either builds afresh instead of measuring a stale file.
 */
function datasetKey(): string {
  const hash = crypto.createHash('sha256');
  const migrations = path.join(ROOT, 'src', 'db', 'migrations');
  for (const file of fs.readdirSync(migrations).sort()) hash.update(fs.readFileSync(path.join(migrations, file)));
  hash.update(fs.readFileSync(path.join(ROOT, 'src', 'db', 'migrate.ts')));
  hash.update(fs.readFileSync(new URL(import.meta.url)));
  return hash.digest('hex').slice(0, 12);
}

/** What the runner needs beyond the database: users and keys, deploy groups, counts. */
function info(size: number, generated: Pick<DatasetInfo, 'deployGroups'>, seedSeconds: number): DatasetInfo {
  const users = benchUsers();
  return {
    size,
    productId: PRODUCT_ID,
    users,
    caller: users[0],
    deployGroups: generated.deployGroups,
    environments: ENVIRONMENTS,
    deploys: DEPLOY_COUNT,
    seedSeconds,
  };
}

/** A line per tenth of the items, so a long seeding shows it is moving. */
function logProgress(label: string, size: number): (done: number) => void {
  let last = 0;
  return (done) => {
    if (done - last >= size / 10 || done === size) {
      last = done;
      process.stderr.write(
        `  seeding ${label}: ${done.toLocaleString('en-US')} / ${size.toLocaleString('en-US')} items\n`,
      );
    }
  };
}

/** The cached SQLite file of a dataset, built now if missing (`built` then). */
export async function ensureSqliteDataset(size: number): Promise<{ file: string; info: DatasetInfo; built: boolean }> {
  const key = datasetKey();
  const dir = path.join(DATA_ROOT, `sqlite-${size}-${key}`);
  const file = path.join(dir, 'shiplog.db');
  const metaFile = path.join(dir, 'dataset.json');
  if (fs.existsSync(metaFile))
    return { file, info: JSON.parse(fs.readFileSync(metaFile, 'utf8')) as DatasetInfo, built: false };

  fs.mkdirSync(DATA_ROOT, { recursive: true });
  for (const stale of fs.readdirSync(DATA_ROOT).filter((d) => d.startsWith(`sqlite-${size}-`))) {
    fs.rmSync(path.join(DATA_ROOT, stale), { recursive: true, force: true });
  }
  const tmp = `${dir}.building`;
  fs.rmSync(tmp, { recursive: true, force: true });
  const started = Date.now();
  const schema = await openDatabase({ dataDir: tmp });
  // Rows are written without the search index's triggers (one document per row written would take
  // most of the seeding), then the migration makes the index of them all at once, as it does on
  // an existing database.
  await searchAtCommit.down(schema);
  await searchIndex.down(schema);
  await schema.destroy();

  const db = new SQLite(path.join(tmp, 'shiplog.db'));
  try {
    // Nothing reads this file until it is complete; a crash leaves only the .building folder.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -1048576');
    db.pragma('temp_store = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    const generated = await generate(size, new SqliteWriter(db), logProgress('SQLite', size));
    const raw = new Kysely({ dialect: new SqliteDialect({ database: db }) });
    await searchIndex.up(raw);
    await searchAtCommit.up(raw);
    // The search index as a running server keeps it, its segments merged in the background.
    db.exec(`INSERT INTO item_search (item_search) VALUES ('optimize')`);
    db.exec(`INSERT INTO item_search_titles (item_search_titles) VALUES ('optimize')`);
    // A plain rollback-journal file: the server turns on WAL in its own copy.
    db.pragma('journal_mode = DELETE');
    db.close();
    const dataset = info(size, generated, (Date.now() - started) / 1000);
    fs.writeFileSync(path.join(tmp, 'dataset.json'), JSON.stringify(dataset));
    fs.renameSync(tmp, dir);
    return { file, info: dataset, built: true };
  } catch (err) {
    if (db.open) db.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

const BENCH_MARKER = 'bench_dataset';

/**
 * Empties the schema of DATABASE_URL for a new dataset. Only an empty schema or one the benchmark
 * filled earlier (it leaves a marker in settings) is touched: real data is never dropped.
 */
async function resetPostgres(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ table_name: string }>(
    `select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'`,
  );
  if (!rows.length) return;
  const names = rows.map((r) => r.table_name);
  const marked =
    names.includes('settings') &&
    (await client.query(`select 1 from settings where name = $1`, [BENCH_MARKER])).rowCount === 1;
  if (!marked) {
    throw new Error(
      'DATABASE_URL names a schema that already holds tables not made by the benchmark; ' +
        'give an empty database or a fresh schema.',
    );
  }
  await client.query(`drop table ${names.map((n) => `"${n}"`).join(', ')} cascade`);
}

/**
 * Whether DATABASE_URL already holds a dataset of `size` items that an earlier run seeded (with
 * whatever that run wrote since: descriptions, new items, deploys).
 */
export async function postgresSeededWith(url: string, size: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ value: string }>(
      `select value from settings where name = $1 and exists (select 1 from items limit 1)`,
      [BENCH_MARKER],
    );
    return rows[0]?.value === String(size);
  } catch {
    // No settings table: nothing was seeded.
    return false;
  } finally {
    await client.end();
  }
}

/** Seeds DATABASE_URL with a fresh dataset of `size` items (PostgreSQL runs are not cached). */
export async function seedPostgres(url: string, size: number): Promise<DatasetInfo> {
  const started = Date.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await resetPostgres(client);
    const schema = await openDatabase({ dataDir: DATA_ROOT, databaseUrl: url });
    await schema.destroy();
    const generated = await generate(size, new PostgresWriter(client), logProgress('PostgreSQL', size));
    for (const table of ['users', 'products', 'items', 'deploys']) {
      await client.query(`select setval(pg_get_serial_sequence('${table}', 'id'), (select max(id) from ${table}))`);
    }
    await client.query(`insert into settings (name, value) values ($1, $2)`, [BENCH_MARKER, String(size)]);
    // Autovacuum would analyze the fresh tables within a minute of a real load; do it now so the
    // first scenarios are not planned without statistics.
    await client.query('analyze');
    return info(size, generated, (Date.now() - started) / 1000);
  } finally {
    await client.end();
  }
}
