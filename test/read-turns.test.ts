import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { registerReadTurns } from '../src/http/read-turns.js';

/** A bare app whose routes note when each request's handler starts, and in which turn of the event loop. */
async function turnsApp(perTurn: number) {
  const app = Fastify();
  const line = registerReadTurns(app, perTurn);
  const started: { name: string; turn: number }[] = [];
  let turn = 0;
  let counting = true;
  const count = () => {
    turn++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  app.get('/read/:n', async (request) => {
    started.push({ name: `read ${(request.params as { n: string }).n}`, turn });
    return { ok: true };
  });
  app.get('/health', async () => {
    started.push({ name: 'health', turn });
    return { ok: true };
  });
  app.post('/write', async () => {
    started.push({ name: 'write', turn });
    return { ok: true };
  });
  await app.ready();
  return {
    app,
    started,
    line,
    turn: () => turn,
    stop: async () => {
      counting = false;
      await app.close();
    },
  };
}

test('reads start a few per turn of the event loop, in order; changes and health checks never wait', async () => {
  const { app, started, stop } = await turnsApp(2);
  try {
    const reads = Array.from({ length: 6 }, (_, n) => app.inject({ method: 'GET', url: `/read/${n}` }));
    const write = app.inject({ method: 'POST', url: '/write' });
    const health = app.inject({ method: 'GET', url: '/health' });
    const answers = await Promise.all([...reads, write, health]);
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      Array(8).fill(200),
    );
    const order = started.map((s) => s.name);
    // Reads in the order they came; the change and the health check did not wait for the parked ones.
    assert.deepEqual(
      order.filter((name) => name.startsWith('read')),
      ['read 0', 'read 1', 'read 2', 'read 3', 'read 4', 'read 5'],
    );
    assert.ok(order.indexOf('write') < order.indexOf('read 2'), order.join(', '));
    assert.ok(order.indexOf('health') < order.indexOf('read 2'), order.join(', '));
    // At most two reads in any one turn, and the parked ones in the turns after.
    const perTurn = new Map<number, number>();
    for (const s of started.filter((s) => s.name.startsWith('read')))
      perTurn.set(s.turn, (perTurn.get(s.turn) ?? 0) + 1);
    assert.ok(
      [...perTurn.values()].every((n) => n <= 2),
      JSON.stringify([...perTurn]),
    );
    assert.ok(perTurn.size >= 3, JSON.stringify([...perTurn]));
  } finally {
    await stop();
  }
});

test('reads that go on after a shared read take their turns in the same share as the reads that start', async () => {
  const { app, started, line, turn, stop } = await turnsApp(2);
  try {
    const reads = Array.from({ length: 2 }, (_, n) => app.inject({ method: 'GET', url: `/read/${n}` }));
    const resumed = Array.from(
      { length: 4 },
      (_, n) =>
        new Promise<void>((resolve) => line(() => resolve(void started.push({ name: `resumed ${n}`, turn: turn() })))),
    );
    await Promise.all([...reads, ...resumed]);
    const perTurn = new Map<number, string[]>();
    for (const s of started) perTurn.set(s.turn, [...(perTurn.get(s.turn) ?? []), s.name]);
    assert.ok(
      [...perTurn.values()].every((names) => names.length <= 2),
      JSON.stringify([...perTurn]),
    );
    assert.deepEqual(
      started.filter((s) => s.name.startsWith('resumed')).map((s) => s.name),
      ['resumed 0', 'resumed 1', 'resumed 2', 'resumed 3'],
      'in the order they asked',
    );
  } finally {
    await stop();
  }
});
