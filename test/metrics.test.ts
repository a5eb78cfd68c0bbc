import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { SentCount, summarize } from '../src/mail/index.js';
import { formatTimestamp } from '../src/time.js';
import { assertError, basic, client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';

const TOKEN = 'metrics-token-0123456789abcdef';
const bearer = { authorization: `Bearer ${TOKEN}` };

let t: TestContext;
before(async () => {
  t = await makeApp({ env: { METRICS_TOKEN: TOKEN } });
});
after(() => t.close());

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Reads Prometheus' text format strictly: every line a HELP, a TYPE (once per family, before its
 * samples) or a sample of a declared family with well-formed labels and a number.
 */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      assert.match(line, new RegExp(`^# HELP ${NAME} \\S`), line);
      continue;
    }
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      assert.ok(!types.has(type[1]), `TYPE ${type[1]} declared twice`);
      types.set(type[1], type[2]);
      continue;
    }
    const sample = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    assert.ok(sample, `not a sample line: ${line}`);
    const [, name, labelText = '', valueText] = sample;
    const labels: Record<string, string> = {};
    const rest = labelText.replace(
      /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g,
      (_m, key: string, value: string) => {
        labels[key] = value;
        return '';
      },
    );
    assert.equal(rest, '', `malformed labels: ${line}`);
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    // Values are read as Go floats, which take NaN in any case (prom-client writes `Nan`).
    assert.ok(/^nan$/i.test(valueText) || !Number.isNaN(value), `not a number: ${line}`);
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(family), `sample before its TYPE: ${line}`);
    samples.push({ name, labels, value });
  }
  return { types, samples };
}

async function scrape(headers: Record<string, string> = bearer) {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
  assert.equal(res.statusCode, 200, res.body);
  return { body: res.body, ...parseExposition(res.body) };
}

/** The value of the one sample with this name whose labels include `labels`; 0 when there is none. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(found.length <= 1, `${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

describe('metrics: off, and the token', () => {
  test('without METRICS_TOKEN there is no /metrics', async () => {
    const off = await makeApp();
    try {
      assertError(await off.app.inject({ method: 'GET', url: '/metrics' }), 404);
      assertError(await off.app.inject({ method: 'GET', url: '/metrics', headers: bearer }), 404);
    } finally {
      await off.close();
    }
  });

  test('a missing, wrong or non-bearer credential is 401 with a Bearer challenge', async () => {
    const user = await makeUser(t.db);
    const refused = [
      {},
      { authorization: 'Bearer wrong-token-0123456789abcdef' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: basic(user.email, user.apiKey) },
      { authorization: `Basic ${TOKEN}` },
      { authorization: `Bearer ${user.apiKey}` },
    ];
    for (const headers of refused) {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
      assertError(res, 401, { label: JSON.stringify(headers) });
      assert.match(String(res.headers['www-authenticate']), /^Bearer /);
      assert.doesNotMatch(res.body, /http_request|process_/);
    }
    assert.equal((await t.app.inject({ method: 'HEAD', url: '/metrics' })).statusCode, 401);
    const ok = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `bearer ${TOKEN}` } });
    assert.equal(ok.statusCode, 200, 'the scheme is case-insensitive');
    assert.match(String(ok.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  });

  test('METRICS_TOKEN must be long and printable; the message never shows it', () => {
    for (const bad of ['short-token', 'has a space 0123456789', 'tab\there-0123456789', 'snowman-☃-0123456789']) {
      assert.throws(
        () => loadConfig({ METRICS_TOKEN: bad }),
        (err: Error) => err instanceof ConfigError && /METRICS_TOKEN/.test(err.message) && !err.message.includes(bad),
        bad,
      );
    }
    assert.equal(loadConfig({ METRICS_TOKEN: TOKEN }).metricsToken, TOKEN);
    assert.equal(loadConfig({}).metricsToken, undefined);
  });
});

describe('metrics: contents', () => {
  test('the text format parses, with default process metrics and both histograms', async () => {
    const { types, samples } = await scrape();
    assert.equal(types.get('http_request_duration_seconds'), 'histogram');
    assert.equal(types.get('shiplog_db_query_duration_seconds'), 'histogram');
    assert.equal(types.get('shiplog_outbox_messages'), 'gauge');
    assert.equal(types.get('shiplog_outbox_oldest_due_seconds'), 'gauge');
    for (const name of [
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      assert.equal(types.get(name), 'gauge', name);
    }
    assert.ok(sampleValue(samples, 'process_resident_memory_bytes') > 0);
    assert.ok(sampleValue(samples, 'nodejs_heap_size_used_bytes') > 0);
  });

  test('requests are counted by route pattern and status code, and the output names no one', async () => {
    const owner = await makeUser(t.db, { firstName: 'Grace', lastName: 'Hopper' });
    const product = await makeProduct(t.db, owner, [], 'Secret Project');
    await makeItem(t.app, owner, product.id, { title: 'Confidential launch plan' });
    const api = client(t.app, owner);
    const base = `/api/products/${product.id}`;
    const list = { method: 'GET', route: '/api/products/:product_id/items.json' };
    const item = { method: 'GET', route: '/api/products/:product_id/items/:item_number.json' };
    const unmatched = { method: 'GET', route: 'unmatched' };
    const before = (await scrape()).samples;
    const count = (samples: Sample[], labels: Record<string, string>) =>
      sampleValue(samples, 'http_request_duration_seconds_count', labels);

    for (let i = 0; i < 3; i++) assert.equal((await api.get(`${base}/items.json`)).statusCode, 200);
    assertError(await api.get(`${base}/items.json`, { limit: 'lots' }), 400);
    assertError(await api.get(`${base}/items/4711.json`), 404);
    assertError(await api.get(`/no/such/page/${owner.email}/${product.id}`), 404);
    assertError(await api.get(`/no/such/page/${product.id}/${owner.apiKey}`), 404);

    const { body, samples } = await scrape();
    assert.equal(count(samples, { ...list, status_code: '200' }) - count(before, { ...list, status_code: '200' }), 3);
    assert.equal(count(samples, { ...list, status_code: '400' }) - count(before, { ...list, status_code: '400' }), 1);
    assert.equal(count(samples, { ...item, status_code: '404' }) - count(before, { ...item, status_code: '404' }), 1);
    assert.equal(
      count(samples, { ...unmatched, status_code: '404' }) - count(before, { ...unmatched, status_code: '404' }),
      2,
    );
    assert.ok(
      count(samples, { method: 'GET', route: '/metrics', status_code: '200' }) >= 1,
      'the scrape before this one',
    );
    // Each series' buckets end at +Inf with its count.
    for (const s of samples.filter(
      (x) => x.name === 'http_request_duration_seconds_bucket' && x.labels.le === '+Inf',
    )) {
      const { le: _le, ...labels } = s.labels;
      assert.equal(s.value, count(samples, labels));
    }
    for (const s of samples.filter((x) => x.name.startsWith('http_request_duration_seconds'))) {
      assert.ok(
        s.labels.route === 'unmatched' || /^\/[a-z0-9_/.:*-]*$/i.test(s.labels.route),
        `route label ${s.labels.route}`,
      );
      assert.match(s.labels.status_code, /^[1-5]\d\d$/);
    }
    for (const secret of [
      owner.email,
      owner.apiKey,
      'Grace',
      'Hopper',
      'Secret Project',
      'Confidential',
      `/api/products/${product.id}/`,
      '@',
    ]) {
      assert.ok(!body.includes(secret), `the output contains ${secret}`);
    }
  });

  test('database statements are timed', async () => {
    const owner = await makeUser(t.db);
    const product = await makeProduct(t.db, owner);
    const before = sampleValue((await scrape()).samples, 'shiplog_db_query_duration_seconds_count');
    assert.ok(before > 0);
    assert.equal((await client(t.app, owner).get(`/api/products/${product.id}/items.json`)).statusCode, 200);
    const { samples } = await scrape();
    // The list (credentials, membership, the page) and the scrape's outbox figures.
    assert.ok(sampleValue(samples, 'shiplog_db_query_duration_seconds_count') >= before + 3);
    assert.equal(
      sampleValue(samples, 'shiplog_db_query_duration_seconds_bucket', { le: '+Inf' }),
      sampleValue(samples, 'shiplog_db_query_duration_seconds_count'),
    );
    assert.ok(sampleValue(samples, 'shiplog_db_query_duration_seconds_sum') > 0);
  });

  test('each app has its own registry', async () => {
    const other = await makeApp({ env: { METRICS_TOKEN: TOKEN } });
    try {
      for (let i = 0; i < 5; i++) await other.app.inject({ method: 'GET', url: '/health' });
      const res = await other.app.inject({ method: 'GET', url: '/metrics', headers: bearer });
      const theirs = parseExposition(res.body).samples;
      assert.equal(sampleValue(theirs, 'http_request_duration_seconds_count', { route: '/health' }), 5);
      assert.equal(
        sampleValue((await scrape()).samples, 'http_request_duration_seconds_count', { route: '/health' }),
        0,
      );
    } finally {
      await other.close();
    }
  });
});

describe('metrics: the outbox', () => {
  /** The outbox's rows counted by state, straight from the table. */
  async function tableCounts(db = t.db): Promise<Record<string, number>> {
    const counts: Record<string, number> = { pending: 0, sending: 0, sent: 0, failed: 0 };
    for (const row of await db.selectFrom('outbox').select('status').execute()) counts[row.status] += 1;
    return counts;
  }
  /** A deploy of one item of each of `count` followers, which queues a message to each. */
  async function deployToFollowers(ctx: TestContext, count: number): Promise<void> {
    const deployer = await makeUser(ctx.db);
    const followers = [];
    for (let i = 0; i < count; i++) followers.push(await makeUser(ctx.db));
    const product = await makeProduct(ctx.db, deployer, followers);
    for (const f of followers) await makeItem(ctx.app, f, product.id);
    const numbers = followers.map((_, i) => i + 1).join(',');
    const deploy = await client(ctx.app, deployer).post(`/api/products/${product.id}/deploys.json`, {
      environment: 'production',
      numbers,
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
  }
  const gauges = (samples: Sample[]) =>
    Object.fromEntries(
      ['pending', 'sending', 'sent', 'failed'].map((state) => [
        state,
        sampleValue(samples, 'shiplog_outbox_messages', { state }),
      ]),
    );

  test('the gauges follow a deploy that queues mail, and its delivery', async () => {
    await deployToFollowers(t, 3);

    const queued = (await scrape()).samples;
    const table = await tableCounts();
    assert.ok(table.pending >= 3);
    assert.deepEqual(gauges(queued), table);

    // One message has been due for ten minutes (its retry time came and went).
    const late = await t.db
      .selectFrom('outbox')
      .select('id')
      .where('status', '=', 'pending')
      .orderBy('id')
      .executeTakeFirstOrThrow();
    await t.db
      .updateTable('outbox')
      .set({ next_attempt_at: formatTimestamp(new Date(Date.now() - 600_000)) })
      .where('id', '=', late.id)
      .execute();
    const oldest = sampleValue((await scrape()).samples, 'shiplog_outbox_oldest_due_seconds');
    assert.ok(oldest >= 600 && oldest < 900, `oldest due ${oldest}`);

    await t.app.outbox.deliverDue();
    const delivered = (await scrape()).samples;
    assert.deepEqual(gauges(delivered), await tableCounts());
    assert.equal(sampleValue(delivered, 'shiplog_outbox_messages', { state: 'pending' }), 0);
    assert.equal(sampleValue(delivered, 'shiplog_outbox_messages', { state: 'sent' }), table.sent + table.pending);
    assert.equal(sampleValue(delivered, 'shiplog_outbox_oldest_due_seconds'), 0);
  });

  test('while the outbox cannot be read, its figures are left out and the rest still come', async () => {
    const sentCount = t.app.sentCount;
    t.app.sentCount = {
      settled: async () => {
        throw new Error('database unreachable');
      },
    } as unknown as SentCount;
    try {
      const { body, types } = await scrape();
      assert.doesNotMatch(body, /shiplog_outbox/);
      assert.ok(types.has('http_request_duration_seconds'));
      assert.ok(types.has('process_resident_memory_bytes'));
    } finally {
      t.app.sentCount = sentCount;
    }
    assert.ok((await scrape()).types.has('shiplog_outbox_messages'));
  });

  test('the sent count remembers settled deliveries and counts only the recent ones again', async () => {
    const own = await makeApp();
    try {
      await deployToFollowers(own, 4);
      const ids = (await own.db.selectFrom('outbox').select('id').orderBy('id').execute()).map((r) => r.id);
      assert.equal(ids.length, 4);
      const at = (ms: number) => formatTimestamp(new Date(Date.UTC(2030, 0, 1, 12) + ms));
      const markSent = (id: number, sentAt: string) =>
        own.db.updateTable('outbox').set({ status: 'sent', sent_at: sentAt }).where('id', '=', id).execute();
      const HOUR = 3_600_000;
      await markSent(ids[0], at(-3 * HOUR));
      await markSent(ids[1], at(-10 * 60_000));

      const counter = new SentCount();
      assert.equal((await summarize(own.db, at(0), counter)).counts.sent, 2);
      await markSent(ids[2], at(-60_000));
      assert.equal((await summarize(own.db, at(0), counter)).counts.sent, 3, 'a recent delivery is counted');
      // Two hours on, the recent ones have settled: each is counted once.
      assert.equal((await summarize(own.db, at(2 * HOUR), counter)).counts.sent, 3);
      await markSent(ids[3], at(2 * HOUR - 1000));
      const later = await summarize(own.db, at(2 * HOUR), counter);
      assert.deepEqual(later.counts, { pending: 0, sending: 0, sent: 4, failed: 0 });
      assert.deepEqual((await summarize(own.db, at(5 * HOUR), counter)).counts, later.counts);
      assert.deepEqual((await summarize(own.db, at(5 * HOUR))).counts, later.counts, 'a fresh count agrees');
    } finally {
      await own.close();
    }
  });
});
