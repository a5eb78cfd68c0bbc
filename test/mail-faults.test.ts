import assert from 'node:assert/strict';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test, type TestContext as NodeTestContext } from 'node:test';
import type { OutboxRow } from '../src/db/schema.js';
import type { WorkerOptions } from '../src/mail/worker.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext } from './helpers.js';
import { ManualClock, until } from './manual-clock.js';
import { runCli } from './processes.js';
import { SmtpSink } from './smtp-sink.js';

const BUILT_CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/**
 * Faults of the mail server, each against a real SMTP sink on loopback and a server-like app
 * whose worker runs on its own timer, as in production. The worker's time is a clock the test
 * moves (deadlines, probes, the stall /health reports), so nothing waits for the wall clock.
 */
const FAST: Partial<WorkerOptions> = {
  intervalMs: 100,
  probeIntervalMs: 1000,
  sendTimeoutMs: 2000,
  stuckRoundMs: 6000,
};

async function serverWithSink(
  sink: SmtpSink,
  clock: ManualClock,
  env: NodeJS.ProcessEnv = {},
  worker: Partial<WorkerOptions> = FAST,
): Promise<TestContext> {
  return makeApp({ file: true, env: { SMTP_URL: sink.url, ...env }, startWorker: true, worker, clock });
}

/**
 * `followers` people each create (and so follow) one item; `deploys` deploys of all those items
 * then queue `followers * deploys` messages, one per follower and deploy (each deploy nudges the worker).
 */
async function queueMessages(t: TestContext, followers: number, deploys: number): Promise<OutboxRow[]> {
  const deployer = await makeUser(t.db);
  const people = [];
  for (let i = 0; i < followers; i++) people.push(await makeUser(t.db));
  const product = await makeProduct(t.db, deployer, people);
  for (const p of people) await makeItem(t.app, p, product.id);
  const numbers = people.map((_, i) => i + 1).join(',');
  const api = client(t.app, deployer);
  for (let d = 0; d < deploys; d++) {
    const res = await api.post(`/api/products/${product.id}/deploys.json`, {
      environment: 'production',
      numbers,
      version: `v${d}`,
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  const rows = await t.db.selectFrom('outbox').selectAll().orderBy('id').execute();
  assert.equal(rows.length, followers * deploys);
  return rows;
}

const allRows = (t: TestContext) => t.db.selectFrom('outbox').selectAll().orderBy('id').execute();
const allSent = async (t: TestContext) => (await allRows(t)).every((r) => r.status === 'sent');

/**
 * Moves the clock `ms` on, in steps of `step`, and waits after each for the rounds it started to
 * end (a step must reach the deadline of any send held meanwhile, or the round never ends).
 */
async function pass(t: TestContext, clock: ManualClock, ms: number, step = ms): Promise<void> {
  for (let moved = 0; moved < ms; moved += step) {
    await clock.tick(Math.min(step, ms - moved));
    await t.app.outbox.settled();
  }
}

/** Every queued message arrived exactly once: none lost, none twice, nothing else. */
function assertEachOnce(sink: SmtpSink, rows: OutboxRow[]): void {
  const counts = sink.counts();
  const lost = rows.filter((r) => !counts.has(r.message_id)).length;
  const duplicated = [...counts.values()].filter((n) => n > 1).length;
  const strangers = [...counts.keys()].filter((id) => !rows.some((r) => r.message_id === id)).length;
  assert.deepEqual(
    { delivered: counts.size, lost, duplicated, strangers },
    { delivered: rows.length, lost: 0, duplicated: 0, strangers: 0 },
  );
}

async function health(t: TestContext) {
  const res = await t.app.inject({ method: 'GET', url: '/health' });
  return { status: res.statusCode, body: res.json() };
}

/** What operators see of a stalled outbox, through `shiplog mail status` (its own process, on the real clock). */
async function assertCliSeesStall(t: TestContext): Promise<void> {
  assert.ok(fs.existsSync(BUILT_CLI), 'the command line is not built: run "npm run build" first');
  const cli = await runCli(['mail', 'status', '--json'], { dataDir: t.dataDir, env: { MAIL_STALL_SECONDS: '2' } });
  assert.equal(cli.code, 0, cli.stderr);
  const status = JSON.parse(cli.stdout);
  assert.equal(status.progressing, false);
  assert.ok(status.oldestDueSeconds >= 2);
  const text = await runCli(['mail', 'status'], { dataDir: t.dataDir, env: { MAIL_STALL_SECONDS: '2' } });
  assert.match(text.stdout, /^oldest due: .*\(waiting \d+ s\)$/m);
  assert.match(text.stdout, /^delivery: +STALLED\. Due mail has not moved/m);
}

test('an outage that queues 200 messages: the worker probes instead of hammering, then delivers all of them once, ' +
  'promptly, with no restart', {
  timeout: 150_000,
}, async (ctx: NodeTestContext) => {
  // An hour ago: the command line, in its own process on the real clock, sees the mail as long due.
  const clock = new ManualClock(Date.now() - 3600_000);
  const sink = await SmtpSink.create({ listening: false });
  // Deadlines long enough that a busy machine never has a slow send missed and sent again: what
  // this test counts is that the outage itself sends nothing twice.
  const t = await serverWithSink(
    sink,
    clock,
    { MAIL_STALL_SECONDS: '2' },
    { ...FAST, sendTimeoutMs: 20_000, stuckRoundMs: 60_000 },
  );
  try {
    const rows = await queueMessages(t, 20, 10);
    await t.app.outbox.settled();
    assert.ok(
      (await allRows(t)).some((r) => r.last_error !== null),
      'the first attempts were refused',
    );
    // Several probe intervals of outage.
    await pass(t, clock, 3500, 1000);

    const waiting = await allRows(t);
    assert.ok(
      waiting.every((r) => r.status === 'pending'),
      'every message still waits',
    );
    const attempts = waiting.reduce((n, r) => n + r.attempts, 0);
    // One window was tried when the outage began, then one message a probe interval: not 200 a second.
    assert.ok(attempts <= 20 + 6, `${attempts} attempts during the outage`);
    assert.ok(attempts > 20, `${attempts} attempts: the server was probed`);
    assert.ok(waiting.filter((r) => r.last_error).every((r) => /ECONNREFUSED/.test(r.last_error!)));
    assert.ok(
      waiting.every((r) => Date.parse(r.next_attempt_at) <= Date.now()),
      'nothing backs off on its own: they wait for the server',
    );

    const down = await health(t);
    assert.equal(down.status, 503, 'due mail has stood still past MAIL_STALL_SECONDS');
    assert.equal(down.body.database, 'reachable');
    assert.equal(down.body.status, 'stalled');
    assert.match(down.body.reason, /has not moved.*unreachable since .* \(ESOCKET\)/s);
    assert.doesNotMatch(JSON.stringify(down.body), /127\.0\.0\.1/, 'no host or address in /health');
    assert.equal(down.body.mail.pending, 200);
    assert.equal(down.body.mail.progressing, false);
    assert.equal(down.body.mail.server, 'unreachable');
    assert.ok(down.body.mail.oldest_due_seconds >= 2, `oldest due for ${down.body.mail.oldest_due_seconds} s`);
    await assertCliSeesStall(t);

    await sink.start();
    const back = performance.now();
    // The next probe goes through, and everything due goes at once.
    await pass(t, clock, 1000);
    assert.ok(await allSent(t), 'every message sent one probe interval after the server came back');
    ctx.diagnostic(`200 messages delivered in ${Math.round(performance.now() - back)} ms once the probe went through`);
    assertEachOnce(sink, rows);
    const after = await health(t);
    assert.equal(after.status, 200);
    assert.equal(after.body.mail.progressing, true);
    assert.equal(after.body.mail.server, 'reachable');
    assert.equal(after.body.mail.oldest_due_at, null);
  } finally {
    await t.close();
    await sink.stop();
    clock.reset();
  }
});

/** Makes every waiting message due now, as if its backoff had passed. */
const makeAllDue = (t: TestContext) =>
  t.db
    .updateTable('outbox')
    .set({ next_attempt_at: '2000-01-01T00:00:00+00:00' })
    .where('status', '=', 'pending')
    .execute();

test('a mail server that accepts a connection and never answers: the deadline fires, that message backs off alone, ' +
  'the others go on', {
  timeout: 60_000,
}, async () => {
  const clock = new ManualClock();
  const sink = await SmtpSink.create();
  const t = await serverWithSink(sink, clock);
  try {
    sink.stayQuiet(1);
    const rows = await queueMessages(t, 12, 1);
    await until('11 messages at the mail server', () => sink.received.length === 11);
    // The deadline of the send on the silent connection.
    await pass(t, clock, 2000);
    const now = await allRows(t);
    assert.equal(now.filter((r) => r.status === 'sent').length, 11);
    const [stuck] = now.filter((r) => r.status === 'pending');
    assert.match(stuck.last_error!, /No answer from the mail server within 2 s/);
    const delay = Date.parse(stuck.next_attempt_at) - Date.now();
    assert.ok(delay > 10_000 && delay <= 46_000, `retried ${delay} ms later, after a backoff of its own`);
    assert.equal((await health(t)).body.mail.server, 'reachable', 'one slow send is no outage');

    await makeAllDue(t);
    t.app.outbox.nudge();
    await t.app.outbox.settled();
    assert.ok(await allSent(t));
    assertEachOnce(sink, rows);
    const retried = (await allRows(t)).filter((r) => r.attempts > 1);
    assert.deepEqual(
      retried.map((r) => r.id),
      [stuck.id],
      'only the message on the silent connection was tried again',
    );
  } finally {
    await t.close();
    await sink.stop();
    clock.reset();
  }
});

test('a mail server slower than the deadline: the message is not sent again and again, it backs off; ' +
  'no outage is declared', {
  timeout: 60_000,
}, async () => {
  const clock = new ManualClock();
  const sink = await SmtpSink.create();
  const t = await serverWithSink(sink, clock);
  try {
    sink.holdNext(1);
    const [row] = await queueMessages(t, 1, 1);
    await until('the message to reach the mail server', () => sink.holding === 1);
    // The deadline passes while the server still holds its answer; then it takes the message.
    await pass(t, clock, 2000);
    sink.release();
    await until('the slow server to take the message', () => sink.received.length === 1);
    // Several probe intervals pass: nothing is sent again meanwhile.
    await pass(t, clock, 3000, 500);
    assert.equal(sink.received.length, 1);
    const [after] = await allRows(t);
    assert.equal(after.id, row.id);
    assert.equal(after.status, 'pending');
    assert.ok(Date.parse(after.next_attempt_at) - Date.now() > 8_000, 'the next try waits for its backoff');
    assert.equal((await health(t)).body.mail.server, 'reachable');
  } finally {
    sink.release();
    await t.close();
    await sink.stop();
    clock.reset();
  }
});

test('an outage that catches only a few messages is reported as a stall all the same', {
  timeout: 60_000,
}, async () => {
  const clock = new ManualClock();
  const sink = await SmtpSink.create({ listening: false });
  const t = await serverWithSink(sink, clock, { MAIL_STALL_SECONDS: '2' });
  try {
    const rows = await queueMessages(t, 2, 1);
    await t.app.outbox.settled();
    assert.equal((await health(t)).status, 200, 'not stalled yet');
    // Past MAIL_STALL_SECONDS, in the whole seconds timestamps have.
    await pass(t, clock, 3500, 1000);
    const down = await health(t);
    assert.equal(down.status, 503);
    assert.equal(down.body.status, 'stalled');
    assert.equal(down.body.mail.server_error, 'ESOCKET', 'a code, no host or address');
    assert.doesNotMatch(JSON.stringify(down.body), /127\.0\.0\.1/);
    await sink.start();
    await pass(t, clock, 1000);
    assert.ok(await allSent(t));
    assertEachOnce(sink, rows);
    assert.equal((await health(t)).status, 200);
  } finally {
    await t.close();
    await sink.stop();
    clock.reset();
  }
});

test('a connection dropped in the middle of DATA: the message is tried again and arrives once, the others once too', {
  timeout: 60_000,
}, async () => {
  const clock = new ManualClock();
  const sink = await SmtpSink.create();
  const t = await serverWithSink(sink, clock);
  try {
    sink.dropDuringData(3);
    const rows = await queueMessages(t, 30, 1);
    // A dropped connection pauses delivery as an outage would: the next probes resume it.
    for (let probes = 0; probes < 10 && !(await allSent(t)); probes++) await pass(t, clock, 1000);
    assert.ok(await allSent(t));
    assertEachOnce(sink, rows);
    assert.ok(
      (await allRows(t)).some((r) => r.attempts > 1),
      'the dropped messages were tried again',
    );
  } finally {
    await t.close();
    await sink.stop();
    clock.reset();
  }
});

test('a transport that never calls back cannot hold the worker: each send misses its deadline and later messages ' +
  'still go out', {
  timeout: 60_000,
}, async () => {
  const clock = new ManualClock();
  let hang = true;
  let resets = 0;
  let calls = 0;
  const delivered = new Map<number, number>();
  const t = await makeApp({
    startWorker: true,
    worker: FAST,
    clock,
    mailTransport: {
      async send(_mail, outboxId) {
        calls += 1;
        if (hang) return new Promise<void>(() => undefined);
        delivered.set(outboxId, (delivered.get(outboxId) ?? 0) + 1);
      },
      reset() {
        resets += 1;
      },
      close() {},
    },
  });
  try {
    const rows = await queueMessages(t, 30, 1);
    // A window of 20 hangs, each until its deadline; then the other 10 do.
    await until('a window of sends', () => calls === 20);
    await clock.tick(2000);
    await until('the other sends', () => calls === 30);
    assert.ok(resets > 0, 'the connections that missed a deadline were replaced');
    await pass(t, clock, 2000);
    const waiting = await allRows(t);
    assert.ok(
      waiting.every((r) => r.status === 'pending' && r.last_error !== null),
      'every message missed its deadline once, and none is held',
    );
    assert.ok(
      waiting.every((r) => Date.parse(r.next_attempt_at) > Date.now()),
      'each backs off on its own',
    );
    assert.ok(waiting.some((r) => /No answer from the mail server within 2 s/.test(r.last_error ?? '')));
    hang = false;
    // The backoff of those that missed their deadline is as for any failed message: skip it.
    await makeAllDue(t);
    t.app.outbox.nudge();
    await t.app.outbox.settled();
    assert.ok(await allSent(t));
    assert.equal(delivered.size, rows.length);
    assert.ok([...delivered.values()].every((n) => n === 1));
  } finally {
    await t.close();
    clock.reset();
  }
});
