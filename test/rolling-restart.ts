/**
 * The production layout under load, on PostgreSQL (TEST_DATABASE_URL): HAProxy with the
 * repository's configuration (deploy/haproxy.cfg, its ports replaced) in front of three built
 * server processes, a mixed load of reads, item writes, resorts and deploys through HAProxy for the
 * whole run, with mail to an SMTP sink and webhook deliveries to a receiver.
 *
 * 1. Throughput of the mixed load through HAProxy with 1, 2 and 3 instances.
 * 2. A rolling restart: each instance in turn gets SIGTERM, is waited for, started again and waited
 *    for until ready. No client may see a failed request (no 5xx, no connection error); every
 *    acknowledged write is there afterwards; every message and every webhook delivery arrives once.
 * 3. The same with one instance killed (SIGKILL) while it holds claimed mail and deliveries: its
 *    requests in flight may fail, nothing acknowledged is lost, and its claims are delivered by the
 *    others once their lease runs out.
 *
 * Not part of `npm test` (it runs for a minute or two): `npm run test:rolling` starts a throwaway
 * cluster and runs it; `.ci/run` does. Everything listens on 127.0.0.1; every process it starts is
 * stopped by its pid. Prints the figures as JSON at the end; exits 1 on any failed check.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Db } from '../src/db/connection.js';
import { createProduct } from '../src/products/service.js';
import { insertMembership } from '../src/products/repository.js';
import { createUser } from '../src/users/service.js';
import { basic, tempDir } from './helpers.js';
import { canConnect, cleanEnv, freePort, waitFor } from './processes.js';
import { SmtpSink } from './smtp-sink.js';
import { databaseOptionsFor, pgBase, storageEnv } from './storage.js';
import { Receiver } from './webhook-receiver.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVER = path.join(ROOT, 'dist/bundle/server.js');
const HAPROXY_CONFIG = path.join(ROOT, 'deploy/haproxy.cfg');
const HAPROXY = process.env.HAPROXY ?? '/usr/sbin/haproxy';
const CLIENTS = Number(process.env.ROLLING_CLIENTS ?? 8);
const MEASURE_MS = Number(process.env.ROLLING_MEASURE_MS ?? 8_000);

if (!pgBase) {
  process.stderr.write('rolling-restart: set TEST_DATABASE_URL (npm run test:rolling starts a cluster)\n');
  process.exit(2);
}

const dir = tempDir('shiplog-rolling-');
const children = new Set<ChildProcess>();
const stopChildren = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};
process.on('exit', stopChildren);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    stopChildren();
    process.exit(1);
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Instance {
  name: string;
  port: number;
  child?: ChildProcess;
  exited?: Promise<number | string>;
  log: string;
}

async function main(): Promise<void> {
  const sink = await SmtpSink.create();
  const receiver = await Receiver.start();
  const seed = await seedData(receiver.url('/hook'));
  const instances: Instance[] = [];
  for (const name of ['a', 'b', 'c']) instances.push({ name, port: await freePort(), log: '' });
  const env = {
    ...(await storageEnv(seed.dataDir)),
    SMTP_URL: sink.url,
    LOG_LEVEL: 'warn',
    PUBLIC_URL: 'http://shiplog.test',
    WEBHOOKS_ALLOW_PRIVATE: '1',
    // The kill: claims lapse after a few seconds, so the others take them over within the run.
    MAIL_LEASE_SECONDS: '6',
    MAIL_SEND_TIMEOUT_SECONDS: '3',
    WEBHOOK_LEASE_SECONDS: '6',
    WEBHOOK_TIMEOUT_SECONDS: '3',
    // Counted in the database as in production, with limits no client of the load reaches (they
    // all come from HAProxy's address).
    RATE_LIMIT_PER_ADDRESS: '100000000',
    RATE_LIMIT_PER_KEY: '100000000',
    // HAProxy checks every 250 ms here: a second of failing readiness is four checks.
    DRAIN_DELAY_MS: '1000',
    DRAIN_TIMEOUT_MS: '10000',
    PG_POOL_MAX: '5',
  };

  const start = async (instance: Instance): Promise<void> => {
    const child = spawn(process.execPath, [SERVER], {
      cwd: dir,
      env: cleanEnv({ ...env, HOST: '127.0.0.1', PORT: String(instance.port) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    child.stdout?.setEncoding('utf8').on('data', (c: string) => (instance.log = (instance.log + c).slice(-20_000)));
    child.stderr?.setEncoding('utf8').on('data', (c: string) => (instance.log = (instance.log + c).slice(-20_000)));
    instance.child = child;
    instance.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        children.delete(child);
        resolve(code ?? signal ?? 'unknown');
      }),
    );
    await waitFor(
      `instance ${instance.name} to be ready`,
      async () => {
        if (child.exitCode !== null) throw new Error(`instance ${instance.name} exited: ${instance.log}`);
        return (await ready(instance.port)) === 200;
      },
      30_000,
    );
  };

  const frontPort = await freePort();
  const haproxy = await startHaproxy(frontPort, instances);
  const front = `http://127.0.0.1:${frontPort}`;
  const figures: Record<string, unknown> = { clients: CLIENTS, measure_ms: MEASURE_MS };
  const db = await openDatabase(await databaseOptionsFor(seed.dataDir));
  try {
    // 1. Throughput with 1, 2, 3 instances (those not started are down in HAProxy: it skips them),
    // after the baseline of the same run: the same load straight to one instance, no HAProxy.
    const throughput: Record<string, unknown> = {};
    const measure = async (label: string, target: string) => {
      const before = cpuSnapshot(instances, haproxy.child.pid!);
      const load = startLoad(target, seed);
      await sleep(MEASURE_MS);
      const result = await load.stop();
      const cpu = cpuSince(before, cpuSnapshot(instances, haproxy.child.pid!), MEASURE_MS);
      assert.equal(result.failures.length, 0, `failures (${label}): ${result.failures.slice(0, 5)}`);
      const rate = Math.round(result.completed / (MEASURE_MS / 1000));
      throughput[label] = { requests_per_second: rate, longest_request_ms: result.longestMs, cpu_cores_used: cpu };
      process.stdout.write(
        `${label}: ${rate} requests/s, longest ${result.longestMs} ms; cores used ${JSON.stringify(cpu)}\n`,
      );
    };
    await start(instances[0]);
    await measure('baseline: 1 instance, no HAProxy', `http://127.0.0.1:${instances[0].port}`);
    for (const [i, instance] of instances.entries()) {
      if (i > 0) await start(instance);
      await waitUntilUp(front, haproxy.statsPort, i + 1);
      await measure(`${i + 1} instance(s) through HAProxy`, front);
    }
    figures.throughput = throughput;

    // 2. A rolling restart under load.
    const load = startLoad(front, seed);
    await sleep(2_000);
    const drains: number[] = [];
    for (const instance of instances) {
      const signalled = Date.now();
      instance.child!.kill('SIGTERM');
      const code = await instance.exited!;
      drains.push(Date.now() - signalled);
      assert.equal(code, 0, `instance ${instance.name} exit after SIGTERM: ${code}\n${instance.log}`);
      await start(instance);
      await waitUntilUp(front, haproxy.statsPort, 3);
      await sleep(1_000);
    }
    await sleep(1_000);
    const rolling = await load.stop();
    process.stdout.write(
      `rolling restart: ${rolling.completed} requests, ${rolling.failures.length} failed, ` +
        `longest ${rolling.longestMs} ms; SIGTERM to exit ${drains.join(', ')} ms\n`,
    );
    assert.deepEqual(rolling.failures, [], 'no client saw a failed request during the rolling restart');
    await checkWrites(front, seed, rolling);
    await settleJobs(db);
    checkMailOnce(sink, await sentMessageIds(db), 'rolling restart');
    await checkDeliveriesOnce(db, receiver, 'rolling restart');
    figures.rolling = {
      requests: rolling.completed,
      failed: 0,
      longest_request_ms: rolling.longestMs,
      sigterm_to_exit_ms: drains,
      writes_checked: rolling.writes.length,
    };

    // 3. One instance killed while it holds claims: the receiver and the mail server are slow now.
    receiver.delayMs = 1_500;
    sink.delayMs = 1_000;
    const before = { mail: sink.received.length, hooks: receiver.received.length };
    const killLoad = startLoad(front, seed);
    await sleep(3_000);
    const victim = instances[1];
    const held = await db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'sending')
      .executeTakeFirstOrThrow();
    victim.child!.kill('SIGKILL');
    await victim.exited;
    await sleep(3_000);
    await start(victim);
    await sleep(2_000);
    const killed = await killLoad.stop();
    receiver.delayMs = 0;
    sink.delayMs = 0;
    process.stdout.write(
      `kill -9: ${killed.completed} requests, ${killed.failures.length} failed (in flight on the killed ` +
        `instance), longest ${killed.longestMs} ms\n`,
    );
    await checkWrites(front, seed, killed);
    await settleJobs(db, 60_000);
    const ids = await sentMessageIds(db);
    const mailTwice = checkMailAtLeastOnce(sink, ids);
    const hooksTwice = await checkDeliveriesAtLeastOnce(db, receiver);
    const retaken = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('attempts', '>', 1)
      .executeTakeFirstOrThrow();
    figures.kill = {
      requests: killed.completed,
      failed_in_flight: killed.failures.length,
      failures: killed.failures.slice(0, 10),
      longest_request_ms: killed.longestMs,
      mail_sending_when_killed: Number(held.n),
      mail_received: sink.received.length - before.mail,
      mail_sent_twice: mailTwice,
      deliveries_received: receiver.received.length - before.hooks,
      deliveries_sent_twice: hooksTwice,
      deliveries_attempted_more_than_once: Number(retaken.n),
    };
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await db.destroy();
    for (const instance of instances) {
      if (instance.child && instance.child.exitCode === null) {
        instance.child.kill('SIGTERM');
        await instance.exited;
      }
    }
    haproxy.child.kill('SIGTERM');
    await haproxy.exited;
    await sink.stop();
    await receiver.stop();
  }
}

/** CPU time (s) so far of the instances, HAProxy, the PostgreSQL cluster, this process, and the whole machine. */
interface CpuSnapshot {
  [part: string]: number;
}

const CLOCK_TICKS = 100;

function processCpu(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** The postmaster listening on the test cluster's port, and its children (the connections). */
function postgresPids(): number[] {
  const port = new URL(pgBase!).port;
  const pids: number[] = [];
  let postmaster: number | undefined;
  const all = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  for (const pid of all) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmdline[0].endsWith('/postgres') && cmdline.includes('-p') && cmdline[cmdline.indexOf('-p') + 1] === port)
        postmaster = Number(pid);
    } catch {}
  }
  if (postmaster === undefined) return [];
  pids.push(postmaster);
  for (const pid of all) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(pid));
    } catch {}
  }
  return pids;
}

function cpuSnapshot(instances: Instance[], haproxyPid: number): CpuSnapshot {
  const own = process.cpuUsage();
  const machine = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = machine[3] + machine[4];
  const total = machine.reduce((a, b) => a + b, 0);
  return {
    instances: instances.reduce((sum, i) => sum + processCpu(i.child?.pid), 0),
    haproxy: processCpu(haproxyPid),
    postgres: postgresPids().reduce((sum, pid) => sum + processCpu(pid), 0),
    load_generator: (own.user + own.system) / 1e6,
    machine_busy: (total - idle) / CLOCK_TICKS,
  };
}

/** Cores used by each part over `ms` (the machine's includes other people's work on it). */
function cpuSince(before: CpuSnapshot, after: CpuSnapshot, ms: number): CpuSnapshot {
  const used: CpuSnapshot = {};
  for (const part of Object.keys(after))
    used[part] = Math.round(((after[part] - before[part]) / (ms / 1000)) * 100) / 100;
  return used;
}

/** A product with six members who write, the owner who deploys, and a webhook for item.created. */
async function seedData(hookUrl: string) {
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  const db = await openDatabase(await databaseOptionsFor(dataDir));
  try {
    const at = '2026-01-01T00:00:00+00:00';
    const made = await db
      .transaction()
      .execute((trx) => createUser(trx, { email: 'owner@example.com', firstName: 'Owen', lastName: 'Owner' }));
    const product = await db.transaction().execute((trx) => createProduct(trx, made.user, 'Rolling'));
    const writers: { email: string; auth: string }[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const w = await db
        .transaction()
        .execute((trx) => createUser(trx, { email: `w${i}@example.com`, firstName: 'W', lastName: String(i) }));
      await db.transaction().execute((trx) => insertMembership(trx, product.id, w.user.id, false, at));
      writers.push({ email: w.user.email, auth: basic(w.user.email, w.apiKey) });
    }
    const owner = basic(made.user.email, made.apiKey);
    const res = await createHook(db, product.id, made.user.id, hookUrl);
    return { dataDir, productId: product.id, owner, writers, webhookId: res };
  } finally {
    await db.destroy();
  }
}

/** The webhook, made through its service as an admin would. */
async function createHook(db: Db, productId: number, userId: number, url: string): Promise<number> {
  const { createWebhook, parseCreateWebhook } = await import('../src/webhooks/index.js');
  const user = await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow();
  const product = await db.selectFrom('products').selectAll().where('id', '=', productId).executeTakeFirstOrThrow();
  const input = parseCreateWebhook({ url, events: 'item.created', secret: 'rolling-secret-0123456789' });
  const { webhook } = await db
    .transaction()
    .execute((trx) => createWebhook(trx, { user, product, admin: true } as never, input));
  return webhook.id;
}

type Seed = Awaited<ReturnType<typeof seedData>>;

interface Write {
  kind: 'create' | 'update' | 'deploy';
  number?: number;
  title?: string;
  version?: string;
}

interface LoadResult {
  completed: number;
  failures: string[];
  longestMs: number;
  writes: Write[];
}

/**
 * CLIENTS clients, each as one writer, one request at a time until stopped: of every 20 requests,
 * 11 reads (the list, an item, the deploys), 4 creates, 2 edits, 2 resorts, and 1 deploy (the last
 * client's, as the owner, of recent items: mail to the writers). Every answer other than 2xx and
 * every connection error is a failure.
 */
function startLoad(front: string, seed: Seed) {
  let stopping = false;
  const result: LoadResult = { completed: 0, failures: [], longestMs: 0, writes: [] };
  const base = `${front}/api/products/${seed.productId}`;
  const clients = seed.writers.map(async (writer, c) => {
    const mine: number[] = [];
    let step = 0;
    while (!stopping) {
      step++;
      const kind = step % 20;
      const started = Date.now();
      let label = '';
      try {
        let res: Response;
        const form = (body: Record<string, string>, auth = writer.auth) => ({
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(body).toString(),
          signal: AbortSignal.timeout(30_000),
        });
        if (kind < 4 || mine.length < 2) {
          const title = `c${c} item ${step} ${started}`;
          label = 'create';
          res = await fetch(`${base}/items.json`, form({ type: 'task', title }));
          if (res.ok) {
            const item = (await res.json()) as { number: number };
            mine.push(item.number);
            result.writes.push({ kind: 'create', number: item.number, title });
          }
        } else if (kind < 6) {
          const number = mine[step % mine.length];
          const title = `c${c} edit ${step} ${started}`;
          label = 'update';
          res = await fetch(`${base}/items/${number}.json`, form({ title }));
          if (res.ok) result.writes.push({ kind: 'update', number, title });
        } else if (kind < 8) {
          const moved = mine[mine.length - 1];
          label = 'resort';
          res = await fetch(`${base}/items/${moved}/resort.json`, form({ after: String(mine[0]) }));
        } else if (kind === 8 && c === 0) {
          const version = `v${step}.${started}`;
          const numbers = result.writes
            .filter((w) => w.kind === 'create')
            .slice(-5)
            .map((w) => String(w.number));
          label = 'deploy';
          res = await fetch(
            `${base}/deploys.json`,
            form({ environment: 'production', version, numbers: numbers.join(',') }, seed.owner),
          );
          if (res.ok) result.writes.push({ kind: 'deploy', version });
        } else {
          const read = kind % 3;
          label = 'read';
          const url =
            read === 0
              ? `${base}/items.json?limit=20`
              : read === 1
                ? `${base}/items/${mine[step % mine.length]}.json`
                : `${base}/deploys.json?limit=5`;
          res = await fetch(url, { headers: { authorization: writer.auth }, signal: AbortSignal.timeout(30_000) });
        }
        if (!res.bodyUsed) await res.arrayBuffer();
        if (!res.ok) result.failures.push(`${label} ${res.status}`);
        else result.completed++;
      } catch (err) {
        result.failures.push(`${label} ${(err as Error).cause ?? (err as Error).message}`);
      }
      result.longestMs = Math.max(result.longestMs, Date.now() - started);
    }
  });
  return {
    async stop(): Promise<LoadResult> {
      stopping = true;
      await Promise.all(clients);
      return result;
    },
  };
}

/** Every acknowledged create and edit is there (the last acknowledged title of each item), and every deploy. */
async function checkWrites(front: string, seed: Seed, load: LoadResult): Promise<void> {
  const base = `${front}/api/products/${seed.productId}`;
  const auth = { authorization: seed.owner };
  const titles = new Map<number, string>();
  for (const w of load.writes) if (w.number !== undefined && w.title) titles.set(w.number, w.title);
  const items = new Map<number, string>();
  for (let offset = 0; ; offset += 500) {
    const res = await fetch(`${base}/items.json?limit=500&offset=${offset}&status=backlog`, { headers: auth });
    assert.equal(res.status, 200);
    const page = (await res.json()) as { number: number; title: string }[];
    for (const item of page) items.set(item.number, item.title);
    if (page.length < 500) break;
  }
  for (const [number, title] of titles) assert.equal(items.get(number), title, `item ${number} as last acknowledged`);
  const versions = new Set<string>();
  for (let offset = 0; ; offset += 100) {
    const res = await fetch(`${base}/deploys.json?limit=100&offset=${offset}`, { headers: auth });
    assert.equal(res.status, 200);
    const page = (await res.json()) as { version: string }[];
    for (const d of page) versions.add(d.version);
    if (page.length < 100) break;
  }
  for (const w of load.writes) if (w.kind === 'deploy') assert.ok(versions.has(w.version!), `deploy ${w.version}`);
}

/** Waits until no message and no delivery is pending or claimed. */
async function settleJobs(db: Db, ms = 30_000): Promise<void> {
  await waitFor(
    'mail and webhook deliveries to settle',
    async () => {
      const mail = await db
        .selectFrom('outbox')
        .select('status')
        .where('status', 'in', ['pending', 'sending'])
        .execute();
      const hooks = await db
        .selectFrom('webhook_deliveries')
        .select('status')
        .where('status', 'in', ['pending', 'sending'])
        .execute();
      return mail.length === 0 && hooks.length === 0;
    },
    ms,
  );
  const failed = await db.selectFrom('outbox').select('id').where('status', '!=', 'sent').execute();
  assert.equal(failed.length, 0, 'every message sent');
}

const bare = (id: string) => id.replace(/^<|>$/g, '');

async function sentMessageIds(db: Db): Promise<string[]> {
  return (await db.selectFrom('outbox').select('message_id').execute()).map((r) => bare(r.message_id));
}

function checkMailOnce(sink: SmtpSink, ids: string[], when: string): void {
  const counts = new Map([...sink.counts()].map(([id, n]) => [bare(id), n]));
  assert.ok(ids.length > 0, 'deploys queued mail');
  for (const id of ids) assert.equal(counts.get(id), 1, `${when}: message ${id} delivered once`);
  assert.equal(counts.size, ids.length, `${when}: nothing else delivered`);
}

/** After a kill: every message arrived; returns how many arrived twice (claims of the killed one). */
function checkMailAtLeastOnce(sink: SmtpSink, ids: string[]): number {
  const counts = new Map([...sink.counts()].map(([id, n]) => [bare(id), n]));
  for (const id of ids) assert.ok((counts.get(id) ?? 0) >= 1, `message ${id} delivered`);
  return [...counts.values()].filter((n) => n > 1).length;
}

async function deliveryUids(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('webhook_deliveries').select(['uid', 'status']).execute();
  for (const r of rows) assert.equal(r.status, 'delivered', `delivery ${r.uid}`);
  return rows.map((r) => r.uid);
}

async function checkDeliveriesOnce(db: Db, receiver: Receiver, when: string): Promise<void> {
  const uids = await deliveryUids(db);
  const got = receiver.to('/hook').map((r) => String(r.headers['shiplog-delivery']));
  assert.ok(uids.length > 0, 'item creations queued deliveries');
  assert.equal(got.length, uids.length, `${when}: each delivery once`);
  assert.deepEqual(new Set(got), new Set(uids), `${when}: every delivery`);
}

async function checkDeliveriesAtLeastOnce(db: Db, receiver: Receiver): Promise<number> {
  const uids = await deliveryUids(db);
  const got = receiver.to('/hook').map((r) => String(r.headers['shiplog-delivery']));
  const have = new Set(got);
  for (const uid of uids) assert.ok(have.has(uid), `delivery ${uid} arrived`);
  return got.length - have.size;
}

async function ready(port: number): Promise<number | undefined> {
  if (!(await canConnect(port))) return undefined;
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(2_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined;
  }
}

/** HAProxy with the repository's configuration, its ports replaced by the run's, and a stats page. */
async function startHaproxy(frontPort: number, instances: Instance[]) {
  const statsPort = await freePort();
  let config = fs.readFileSync(HAPROXY_CONFIG, 'utf8');
  config = config.replace(/bind 127\.0\.0\.1:8080/, `bind 127.0.0.1:${frontPort}`);
  instances.forEach((instance, i) => {
    config = config.replace(
      `server ${instance.name} 127.0.0.1:${3001 + i}`,
      `server ${instance.name} 127.0.0.1:${instance.port}`,
    );
  });
  // Checks four times a second here, so that the run is short (the shipped file checks every 500 ms).
  config = config.replace(/ inter \S+/, ' inter 250ms');
  assert.ok(!/127\.0\.0\.1:300[123]$/m.test(config), 'every server line given its port');
  config += `\nfrontend stats\n    bind 127.0.0.1:${statsPort}\n    stats enable\n    stats uri /stats\n`;
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, config);
  const child = spawn(HAPROXY, ['-db', '-f', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let log = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (log += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (log += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor('HAProxy to listen', async () => {
    if (child.exitCode !== null) throw new Error(`haproxy exited: ${log}`);
    return canConnect(frontPort);
  });
  return { child, exited, statsPort, log: () => log };
}

/** Waits until HAProxy's stats show `count` instances UP. */
async function waitUntilUp(_front: string, statsPort: number, count: number): Promise<void> {
  await waitFor(
    `${count} instance(s) up in HAProxy`,
    async () => {
      const res = await fetch(`http://127.0.0.1:${statsPort}/stats;csv`);
      const csv = await res.text();
      const up = csv.split('\n').filter((line) => line.startsWith('instances,') && /,UP,/.test(line));
      return up.filter((line) => !line.startsWith('instances,BACKEND')).length === count;
    },
    30_000,
  );
}

main().then(
  () => {
    stopChildren();
    process.exit(0);
  },
  (err) => {
    process.stderr.write(`rolling-restart: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    stopChildren();
    process.exit(1);
  },
);
