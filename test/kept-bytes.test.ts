import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeptItems } from '../src/items/kept-items.js';
import { keptBytes } from '../src/kept-bytes.js';
import { RenderedPages } from '../src/web/rendered-pages.js';
import { html } from '../src/web/views/html.js';

/** Whether `b` is all of the memory it is in (not a piece of Node's shared slab). */
const ownsItsMemory = (b: Buffer) => b.byteOffset === 0 && b.buffer.byteLength === b.length;

test('short text kept is copied out of the shared slab; what owns its memory is kept as it is', () => {
  // A short Buffer.from is a piece of an 8 KiB slab: the case keptBytes is for.
  const pooled = Buffer.from('{"number":1}');
  assert.ok(!ownsItsMemory(pooled));
  const copied = keptBytes(pooled);
  assert.ok(ownsItsMemory(copied));
  assert.equal(copied.toString(), '{"number":1}');
  assert.notEqual(copied.buffer, pooled.buffer);
  const fromText = keptBytes('{"title":"Café ☕"}');
  assert.ok(ownsItsMemory(fromText));
  assert.equal(fromText.toString(), '{"title":"Café ☕"}');
  assert.equal(keptBytes('').length, 0);
  // Long text is in memory of its own already: not copied again.
  const long = Buffer.from('x'.repeat(100_000));
  assert.equal(keptBytes(long), long);
  // A view of part of a big buffer is copied too: keeping it would keep all of the big one.
  const part = long.subarray(10, 20);
  assert.ok(ownsItsMemory(keptBytes(part)));
  assert.equal(keptBytes(part).toString(), 'x'.repeat(10));
});

test("an item's kept JSON owns its memory", () => {
  const piece = new KeptItems().keep('k', '{"number":7}');
  assert.ok(ownsItsMemory(piece.json));
  assert.equal(piece.json.toString(), '{"number":7}');
});

test('kept pages are bounded in bytes, least recently used first, each viewer with their own slots', async () => {
  const pages = new RenderedPages(1000);
  let made = 0;
  const page = (key: string, viewer = { email: 'ada@example.com', csrfToken: 't1' }) =>
    pages.render(key, viewer, async (anybody) => {
      made++;
      return html`<p>${anybody.email}</p>${'x'.repeat(400)}<input value="${anybody.csrfToken}">`;
    });
  await page('a');
  await page('b');
  assert.equal(made, 2);
  // Two pages of ~430 bytes fit in 1,000; a third pushes out the least recently used.
  await page('a');
  assert.equal(made, 2);
  await page('c');
  await page('a');
  assert.equal(made, 3);
  await page('b');
  assert.equal(made, 4);
  const bob = await page('b', { email: 'bob@example.com', csrfToken: 't2' });
  assert.equal(made, 4);
  assert.match(bob.toString(), /^<p>bob@example\.com<\/p>x+<input value="t2">$/);
});
