import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeasedCounts } from '../src/http/leases.js';
import type { Window } from '../src/http/repository.js';

// Rate limits shared by several instances are claimed from the database a block of counts at a
// time (http/leases.ts). Here the shared store is a map, as the upsert keeps it, with each claim
// answered after a turn of the event loop, as a statement is.

const WINDOW_MS = 60_000;

/** A shared store of windows and the claims made of it. */
function store() {
  const windows = new Map<string, Window>();
  const claims: number[] = [];
  const told: boolean[] = [];
  let attempts = 0;
  let aloneCounted = 0;
  let failing = false;
  const claim = async (key: string, amount: number, now: number): Promise<Window> => {
    attempts += 1;
    await new Promise((resolve) => setImmediate(resolve));
    if (failing) throw new Error('the database cannot count');
    claims.push(amount);
    const held = windows.get(key);
    const window =
      held === undefined || held.endsAt <= now
        ? { count: amount, endsAt: now + WINDOW_MS }
        : { count: held.count + amount, endsAt: held.endsAt };
    windows.set(key, window);
    return { ...window };
  };
  const outage = {
    alone: (_key: string, now: number): Window => ({ count: ++aloneCounted, endsAt: now + WINDOW_MS }),
    told: (failing: boolean) => told.push(failing),
    retryMs: 1000,
  };
  return {
    windows,
    claims,
    told,
    attempts: () => attempts,
    aloneCounted: () => aloneCounted,
    instance: () => new LeasedCounts(claim, 1000, WINDOW_MS, outage),
    fail: (on: boolean) => {
      failing = on;
    },
  };
}

const counted = (counts: LeasedCounts, key: string, max: number, now: number) =>
  Promise.resolve(counts.count(key, max, now));

test('three instances counting at once never allow more than the limit, nor give a count twice', async () => {
  const shared = store();
  const instances = [shared.instance(), shared.instance(), shared.instance()];
  const now = 1_000_000;
  for (const max of [1, 7, 40, 300, 1200]) {
    const key = `address ${max}`;
    // Twice the limit, sent at once, unevenly spread: instance 0 gets half.
    const windows = await Promise.all(
      Array.from({ length: 2 * max }, (_, i) => counted(instances[i % 4 === 3 ? 1 : i % 3], key, max, now)),
    );
    const allowed = windows.filter((w) => w.count <= max).map((w) => w.count);
    assert.ok(allowed.length <= max, `at most ${max} allowed`);
    assert.equal(new Set(allowed).size, allowed.length, 'no count given twice');
    // What the instances claimed but left unused is all they may under-allow: a sixteenth of what was left.
    assert.ok(allowed.length >= max - 3 * Math.ceil(max / 16), `${allowed.length} of ${max} allowed`);
  }
});

test('one claim serves many requests far from the limit; near it each request is claimed alone', async () => {
  const shared = store();
  const counts = shared.instance();
  const now = 1_000_000;
  for (let i = 0; i < 1000; i++) await counted(counts, 'user 1', 1_000_000_000, now);
  assert.equal(shared.claims.length, Math.ceil(1000 / 64), 'blocks of 64');
  // What the instance holds is given without a statement: a synchronous answer.
  assert.ok(!(counts.count('user 1', 1_000_000_000, now) instanceof Promise));

  shared.claims.length = 0;
  for (let i = 0; i < 20; i++) await counted(counts, 'user 2', 20, now);
  assert.deepEqual(shared.claims, Array(20).fill(1), 'a limit of 20: every request claims one');
  const refused = await counted(counts, 'user 2', 20, now);
  assert.equal(refused.count, 21);
});

test('a used-up window is refused without a statement until it ends, then starts again', async () => {
  const shared = store();
  const [a, b] = [shared.instance(), shared.instance()];
  const now = 1_000_000;
  for (let i = 0; i < 5; i++) assert.ok((await counted(a, 'address x', 5, now)).count <= 5);
  const claimsBefore = shared.claims.length;
  assert.ok((await counted(b, 'address x', 5, now)).count > 5, 'the other instance sees the shared count');
  const refusedByA = a.count('address x', 5, now);
  assert.ok(!(refusedByA instanceof Promise) && refusedByA.count > 5, 'an instance that used the last count knows');
  const refusedAgain = b.count('address x', 5, now + 1000);
  assert.ok(!(refusedAgain instanceof Promise) && refusedAgain.count > 5, 'refused from memory');
  assert.equal(shared.claims.length, claimsBefore + 1, 'one claim: the one that found the window used up');

  const later = now + WINDOW_MS;
  const fresh = await counted(b, 'address x', 5, later);
  assert.equal(fresh.count, 1);
  assert.equal(fresh.endsAt, later + WINDOW_MS);
});

test('while claims fail, requests are counted alone and one claim is tried a second later', async () => {
  const shared = store();
  const counts = shared.instance();
  const now = 1_000_000;
  shared.fail(true);
  const waiting = await Promise.all(Array.from({ length: 5 }, () => counted(counts, 'user 3', 100, now)));
  assert.equal(shared.attempts(), 1, 'the requests that waited share the one failed claim');
  assert.deepEqual(
    waiting.map((w) => w.count),
    [1, 2, 3, 4, 5],
    'each counted by the process',
  );
  assert.deepEqual(shared.told, [true]);
  // Within the second, no claim is tried: answered at once, from the process's count.
  const meanwhile = counts.count('user 4', 100, now + 999);
  assert.ok(!(meanwhile instanceof Promise));
  assert.equal(shared.attempts(), 1);
  // A second later one claim is tried, and only one: another key's request meanwhile counts alone.
  const probe = counted(counts, 'user 3', 100, now + 1000);
  assert.ok(!(counts.count('user 5', 100, now + 1000) instanceof Promise));
  await probe;
  assert.equal(shared.attempts(), 2);
  shared.fail(false);
  assert.ok(!(counts.count('user 3', 100, now + 1500) instanceof Promise));
  assert.equal(shared.attempts(), 2);
  // The store answers again: claims resume, counted from the shared window, and it is told once.
  const window = await counted(counts, 'user 3', 100, now + 2000);
  assert.equal(window.count, 1);
  assert.equal(shared.claims.length, 1);
  assert.deepEqual(shared.told, [true, false]);
  assert.equal(shared.aloneCounted(), 9);
});
