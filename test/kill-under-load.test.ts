import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase, type Db } from '../src/db/connection.js';
import { basic, makeProduct, makeUser, tempDir, type TestUser } from './helpers.js';
import { spawnServer, startServer, stopAll, stopProcess, waitFor, type Server } from './processes.js';
import { SmtpSink } from './smtp-sink.js';
import { databaseOptionsFor, pgBase } from './storage.js';

// The server is killed (SIGKILL) while 24 clients write as fast as it answers: creates, updates,
// resorts and deploys. After a restart on the same data, every write it answered 200 is there.
// Each worker owns the items it updates and resorts, so what must be there is exact: the last
// value it acknowledged, or that of a later request the kill left unanswered.

const WORKERS = 24;
const MEMBERS = 8;
/** The kill comes once this many writes have been acknowledged, and the load has run a second. */
const KILL_AFTER_WRITES = 300;
const MIN_LOAD_MS = 1000;
const SCORES = ['S', 'M', 'L', 'XL', '~'];
const STATUSES = ['in-progress', 'completed', 'accepted', 'backlog'];
const OPS = ['create', 'update', 'resort', 'create', 'deploy', 'update', 'create', 'resort'] as const;

const root = tempDir('shiplog-kill-test-');
let db: Db | undefined;
let sink: SmtpSink | undefined;

after(async () => {
  await stopAll();
  await sink?.stop();
  await db?.destroy();
});

/** Answered 200, or not answered at all (the kill, or a 503 whose transaction may have committed). */
type Outcome = 'acknowledged' | 'unknown';

interface Fields {
  title: string;
  description: string;
  score: string;
  status: string;
}

/** Everything one worker sent, in order, with its outcome. */
interface WorkerLog {
  index: number;
  user: TestUser;
  fieldItem: number;
  /** Two items of the worker's own in one status; `first` is the one that stands above the other. */
  pair: [number, number];
  creates: { title: string; number?: number; outcome: Outcome }[];
  updates: { value: Fields; outcome: Outcome }[];
  resorts: { first: number; outcome: Outcome }[];
  deploys: { version: string; numbers: number[]; id?: number; outcome: Outcome }[];
  /** Answers other than 200 (503s only are expected): status and body. */
  refused: string[];
}

class Unanswered extends Error {}

function clientFor(port: () => number) {
  return async (
    who: TestUser,
    method: string,
    url: string,
    form?: Record<string, string>,
  ): Promise<{ status: number; json: any }> => {
    let res: Response;
    let text: string;
    try {
      res = await fetch(`http://127.0.0.1:${port()}${url}`, {
        method,
        headers: {
          authorization: basic(who.email, who.apiKey),
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: form ? new URLSearchParams(form).toString() : undefined,
        signal: AbortSignal.timeout(30_000),
      });
      text = await res.text();
    } catch (err) {
      throw new Unanswered((err as Error).message);
    }
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
}

/**
 * What the state of one target (an item's fields, a pair's order) may be after the kill: the
 * last acknowledged value (or the first one, before any), or the value of any request sent
 * after it that got no answer.
 */
function possible<T>(initial: T, history: { outcome: Outcome }[], valueAt: (i: number) => T): T[] {
  let last = -1;
  history.forEach((h, i) => {
    if (h.outcome === 'acknowledged') last = i;
  });
  const base = last >= 0 ? valueAt(last) : initial;
  return [base, ...history.flatMap((h, i) => (i > last && h.outcome === 'unknown' ? [valueAt(i)] : []))];
}

async function mailState(database: Db): Promise<Record<string, number>> {
  const rows = await database.selectFrom('outbox').select(['status']).execute();
  const counts: Record<string, number> = {};
  for (const r of rows) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

test(`SIGKILL under load from ${WORKERS} clients: after a restart every acknowledged write is there`, {
  timeout: 300_000,
}, async (t) => {
  const dataDir = fs.mkdtempSync(path.join(root, 'data-'));
  db = await openDatabase(await databaseOptionsFor(dataDir));
  const owner = await makeUser(db, { firstName: 'Owen' });
  const members: TestUser[] = [];
  for (let i = 0; i < MEMBERS; i++) members.push(await makeUser(db, { firstName: `Member${i}` }));
  const product = await makeProduct(db, owner, members, 'Under load');
  const everyone = [owner, ...members];
  const api = (rest: string) => `/api/products/${product.id}${rest}`;

  sink = await SmtpSink.create();
  const env = {
    SMTP_URL: sink.url,
    MAIL_LEASE_SECONDS: '6',
    MAIL_SEND_TIMEOUT_SECONDS: '5',
    LOG_LEVEL: 'warn',
    PUBLIC_URL: 'http://shiplog.test',
  };
  let server: Server = await startServer({ env, dataDir, cwd: root });
  const call = clientFor(() => server.port);
  const ok = async (who: TestUser, method: string, url: string, form?: Record<string, string>) => {
    const res = await call(who, method, url, form);
    assert.equal(res.status, 200, `${method} ${url}: ${JSON.stringify(res.json)}`);
    return res.json;
  };

  // Two items every user follows: each deploy names them, so it mails everyone but its deployer.
  const shared: number[] = [];
  for (const title of ['Shared one', 'Shared two'])
    shared.push((await ok(owner, 'POST', api('/items.json'), { type: 'task', title })).number);
  for (const m of members) for (const n of shared) await ok(m, 'POST', api(`/items/${n}/follow.json`));

  const logs: WorkerLog[] = [];
  for (let w = 0; w < WORKERS; w++) {
    const user = members[w % MEMBERS];
    const make = async (title: string) =>
      (await ok(user, 'POST', api('/items.json'), { type: 'task', title })).number as number;
    const fieldItem = await make(`w${w} fields`);
    const pair: [number, number] = [await make(`w${w} pair a`), await make(`w${w} pair b`)];
    logs.push({ index: w, user, fieldItem, pair, creates: [], updates: [], resorts: [], deploys: [], refused: [] });
  }
  const seeded = shared.length + 3 * WORKERS;

  let acknowledged = 0;
  const loadStarted = Date.now();

  /** One worker: its own requests one after another until one gets no answer (the kill). */
  async function work(log: WorkerLog): Promise<void> {
    const { index: w, user } = log;
    for (let seq = 0; ; seq++) {
      const op = OPS[(seq + w) % OPS.length];
      let form: Record<string, string>;
      let url: string;
      let record: (outcome: Outcome, json?: any) => void;
      if (op === 'create') {
        const title = `w${w} c${seq}`;
        [url, form] = [api('/items.json'), { type: 'task', title }];
        record = (outcome, json) => {
          if (json) assert.equal(json.title, title);
          log.creates.push({ title, number: json?.number, outcome });
        };
      } else if (op === 'update') {
        const value = {
          title: `w${w} t${seq}`,
          description: `w${w} d${seq}`,
          score: SCORES[seq % SCORES.length],
          status: STATUSES[seq % STATUSES.length],
        };
        [url, form] = [api(`/items/${log.fieldItem}.json`), value];
        record = (outcome, json) => {
          if (json)
            assert.deepEqual(
              { title: json.title, description: json.description, score: json.score, status: json.status },
              value,
            );
          log.updates.push({ value, outcome });
        };
      } else if (op === 'resort') {
        // Alternately each of the pair moves right above the other.
        const [first, other] = log.resorts.length % 2 === 0 ? [log.pair[1], log.pair[0]] : log.pair;
        [url, form] = [api(`/items/${first}/resort.json`), { after: String(other) }];
        record = (outcome) => log.resorts.push({ first, outcome });
      } else {
        const own = log.creates.filter((c) => c.outcome === 'acknowledged').at(-1)?.number;
        const numbers = [...shared, ...(own ? [own] : [])];
        const version = `w${w} v${seq}`;
        [url, form] = [api('/deploys.json'), { environment: `env-${w}`, numbers: numbers.join(','), version }];
        record = (outcome, json) => {
          if (json)
            assert.deepEqual(
              json.items.map((i: { number: number }) => i.number),
              numbers,
            );
          log.deploys.push({ version, numbers, id: json?.id, outcome });
        };
      }
      let res: { status: number; json: any };
      try {
        res = await call(user, 'POST', url, form);
      } catch (err) {
        if (!(err instanceof Unanswered)) throw err;
        record('unknown');
        return;
      }
      if (res.status === 200) {
        record('acknowledged', res.json);
        acknowledged += 1;
      } else {
        record('unknown');
        log.refused.push(`${res.status} ${JSON.stringify(res.json)}`);
      }
    }
  }

  // Handled from the start: a worker that fails fails the test, never as an unhandled rejection.
  const workers = Promise.all(logs.map(work));
  let killedAt = 0;
  try {
    await waitFor(
      `${KILL_AFTER_WRITES} acknowledged writes`,
      () => acknowledged >= KILL_AFTER_WRITES && Date.now() - loadStarted >= MIN_LOAD_MS,
      120_000,
    );
    process.kill(server.child.pid!, 'SIGKILL');
    killedAt = Date.now();
    await server.exited;
  } finally {
    await stopProcess(server.child);
  }
  await workers;

  const restartedAt = Date.now();
  server = await spawnServer({ env, dataDir, cwd: root });
  await waitFor(
    'the first 200 after the restart',
    async () => {
      try {
        return (await call(owner, 'GET', api(`/items/${shared[0]}.json`))).status === 200;
      } catch (err) {
        if (err instanceof Unanswered) return false;
        throw err;
      }
    },
    60_000,
  );
  const recoveredAt = Date.now();

  try {
    for (const log of logs) {
      for (const refusal of log.refused) assert.match(refusal, /^503 /, `worker ${log.index} was answered ${refusal}`);
    }
    const allCreates = logs.flatMap((l) => l.creates);
    const allDeploys = logs.flatMap((l) => l.deploys);
    const acked = (list: { outcome: Outcome }[]) => list.filter((x) => x.outcome === 'acknowledged').length;
    for (const [kind, list] of [
      ['creates', allCreates],
      ['updates', logs.flatMap((l) => l.updates)],
      ['resorts', logs.flatMap((l) => l.resorts)],
      ['deploys', allDeploys],
    ] as const) {
      assert.ok(acked(list) > 0, `some ${kind} were acknowledged before the kill`);
    }

    // Numbers 1..n without holes or repeats, and the product's counter at n.
    const items = await db
      .selectFrom('items')
      .select(['id', 'number', 'title', 'status', 'sort'])
      .where('product_id', '=', product.id)
      .orderBy('number')
      .execute();
    assert.deepEqual(
      items.map((i) => i.number),
      Array.from({ length: items.length }, (_, i) => i + 1),
      'item numbers run 1..n',
    );
    const counter = await db
      .selectFrom('products')
      .select('last_number')
      .where('id', '=', product.id)
      .executeTakeFirstOrThrow();
    assert.equal(counter.last_number, items.length);
    const byNumber = new Map(items.map((i) => [i.number, i]));
    const byTitle = new Map<string, number>();
    for (const i of items) byTitle.set(i.title, (byTitle.get(i.title) ?? 0) + 1);

    // Every acknowledged create under its number; an unanswered one at most once.
    let createsFound = 0;
    for (const c of allCreates) {
      if (c.outcome === 'acknowledged') {
        assert.equal(byNumber.get(c.number!)?.title, c.title, `acknowledged item ${c.number}`);
        createsFound += 1;
      }
      assert.ok((byTitle.get(c.title) ?? 0) <= 1, `${c.title} stored once at most`);
    }
    const unknownCreatesStored = allCreates.filter((c) => c.outcome === 'unknown' && byTitle.has(c.title)).length;
    assert.equal(items.length, seeded + createsFound + unknownCreatesStored, 'no item but those created');

    // Positions distinct within each status.
    const positions = new Set<string>();
    for (const i of items) {
      const key = `${i.status}:${i.sort}`;
      assert.ok(!positions.has(key), `two items at position ${i.sort} of status ${i.status}`);
      positions.add(key);
    }

    // Each worker's field item holds its last acknowledged values (or those of its unanswered
    // request); each pair stands in the order of its last acknowledged resort.
    let updatesFound = 0;
    let resortsFound = 0;
    for (const log of logs) {
      const item = await ok(owner, 'GET', api(`/items/${log.fieldItem}.json`));
      const now: Fields = { title: item.title, description: item.description, score: item.score, status: item.status };
      const fieldChoices = possible<Fields>(
        { title: `w${log.index} fields`, description: '', score: '~', status: 'backlog' },
        log.updates,
        (i) => log.updates[i].value,
      );
      assert.ok(
        fieldChoices.some((v) => JSON.stringify(v) === JSON.stringify(now)),
        `worker ${log.index}: ${JSON.stringify(now)} is not one of ${JSON.stringify(fieldChoices)}`,
      );
      if (
        log.updates.some((u) => u.outcome === 'acknowledged') &&
        JSON.stringify(fieldChoices[0]) === JSON.stringify(now)
      )
        updatesFound += 1;

      const [a, b] = await Promise.all(log.pair.map((n) => ok(owner, 'GET', api(`/items/${n}.json`))));
      assert.equal(a.status, b.status);
      const first = a.sort < b.sort ? a.number : b.number;
      const orderChoices = possible(log.pair[0], log.resorts, (i) => log.resorts[i].first);
      assert.ok(
        orderChoices.includes(first),
        `worker ${log.index}: item ${first} above, expected one of ${orderChoices}`,
      );
      if (log.resorts.some((r) => r.outcome === 'acknowledged') && orderChoices[0] === first) resortsFound += 1;
    }

    // Every acknowledged deploy with exactly its items; every stored deploy with one message for
    // each user but its deployer.
    const deploys = await db
      .selectFrom('deploys')
      .select(['id', 'user_id', 'version'])
      .where('product_id', '=', product.id)
      .execute();
    const deployById = new Map(deploys.map((d) => [d.id, d]));
    const deployItems = await db
      .selectFrom('deploy_items')
      .innerJoin('items', 'items.id', 'deploy_items.item_id')
      .select(['deploy_items.deploy_id', 'items.number'])
      .where('items.product_id', '=', product.id)
      .execute();
    const outbox = await db
      .selectFrom('outbox')
      .select(['deploy_id', 'user_id', 'message_id'])
      .where('kind', '=', 'deploy')
      .execute();
    let deploysFound = 0;
    for (const d of allDeploys.filter((x) => x.outcome === 'acknowledged')) {
      assert.equal(deployById.get(d.id!)?.version, d.version, `acknowledged deploy ${d.id}`);
      const numbers = deployItems
        .filter((x) => x.deploy_id === d.id)
        .map((x) => x.number)
        .sort((x, y) => x - y);
      assert.deepEqual(
        numbers,
        [...d.numbers].sort((x, y) => x - y),
        `items of deploy ${d.id}`,
      );
      deploysFound += 1;
    }
    for (const d of deploys) {
      const recipients = outbox
        .filter((o) => o.deploy_id === d.id)
        .map((o) => o.user_id)
        .sort((x, y) => x! - y!);
      const expected = everyone
        .filter((u) => u.user.id !== d.user_id)
        .map((u) => u.user.id)
        .sort((x, y) => x - y);
      assert.deepEqual(recipients, expected, `messages of deploy ${d.id}`);
    }
    assert.equal(new Set(deploys.map((d) => d.version)).size, deploys.length, 'no deploy stored twice');
    assert.equal(outbox.length, deploys.length * MEMBERS, 'no message but those of stored deploys');

    // After the restart, every message goes out (those the kill caught in flight once their lease ends).
    let counts: Record<string, number> = {};
    await waitFor(
      `all ${outbox.length} deploy messages sent and at the mail server`,
      async () => {
        counts = await mailState(db!);
        const received = sink!.counts();
        return counts.sent === outbox.length && outbox.every((o) => received.has(o.message_id));
      },
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; outbox: ${JSON.stringify(counts)}; sink: ${sink!.counts().size} distinct`);
    });

    const unknown = [...allCreates, ...logs.flatMap((l) => [...l.updates, ...l.resorts]), ...allDeploys].filter(
      (x) => x.outcome === 'unknown',
    ).length;
    const figures = [
      `database: ${pgBase ? 'PostgreSQL' : 'SQLite'}; ` +
        `${WORKERS} workers for ${killedAt - loadStarted} ms until the SIGKILL`,
      `writes acknowledged: ${acknowledged} (creates ${acked(allCreates)}, ` +
        `updates ${acked(logs.flatMap((l) => l.updates))}, ` +
        `resorts ${acked(logs.flatMap((l) => l.resorts))}, deploys ${acked(allDeploys)}); unanswered: ${unknown}, ` +
        `of them creates stored: ${unknownCreatesStored}; ` +
        `refused (503): ${logs.reduce((n, l) => n + l.refused.length, 0)}`,
      `found after the restart: creates ${createsFound}, deploys ${deploysFound} with their items ` +
        `and ${outbox.length} messages for ${deploys.length} stored deploys, ` +
        `last acknowledged update of ${updatesFound} field items and last resort of ${resortsFound} pairs ` +
        'as acknowledged (the others as a later unanswered request left them)',
      `time from restart to first 200: ${recoveredAt - restartedAt} ms; ` +
        `mail after the restart: ${JSON.stringify(counts)}, ` +
        `${sink.received.length} deliveries of ${sink.counts().size} messages`,
    ];
    for (const line of figures) {
      t.diagnostic(line);
      console.log(`kill test: ${line}`);
    }
  } finally {
    await stopProcess(server.child);
  }
});
