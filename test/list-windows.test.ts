import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListWindows } from '../src/items/counts.js';
import type { ItemStamp } from '../src/items/repository.js';

const stamps = (n: number): ItemStamp[] =>
  Array.from({ length: n }, (_, i) => ({
    id: i + 1,
    version: 1,
    parent_id: null,
    created_by_id: 1,
    assigned_to_id: null,
  }));

test('pages of a revision: cut from one read of its leading stamps, shared by the pages asked meanwhile', async () => {
  const windows = new ListWindows(undefined, 0);
  const sizes: number[] = [];
  const read = async (size: number) => {
    sizes.push(size);
    return stamps(Math.min(size, 300));
  };
  const pages = await Promise.all(
    [0, 20, 40].map((offset) => windows.page(1, 7, 'recent', { offset, limit: 20 }, read)),
  );
  assert.deepEqual(
    pages.map((p) => p!.map((s) => s.id)),
    [0, 20, 40].map((offset) => Array.from({ length: 20 }, (_, i) => offset + i + 1)),
  );
  assert.deepEqual(sizes, [64]);
  // Deeper: a window of the next power of two; past the list's end, what there is.
  assert.deepEqual(
    (await windows.page(1, 7, 'recent', { offset: 280, limit: 40 }, read))!.map((s) => s.id).at(-1),
    300,
  );
  assert.deepEqual(sizes, [64, 512]);
  // Another revision, another question: read again.
  await windows.page(1, 8, 'recent', { offset: 0, limit: 20 }, read);
  await windows.page(1, 8, 'stale', { offset: 0, limit: 20 }, read);
  assert.deepEqual(sizes, [64, 512, 64, 64]);
});

test('a page deeper than the deepest window is not cut from one, and a failed read is not kept', async () => {
  const windows = new ListWindows(undefined, 0);
  assert.equal(await windows.page(1, 1, 'recent', { offset: 1010, limit: 20 }, async () => stamps(2000)), undefined);
  await assert.rejects(
    windows.page(1, 1, 'recent', { offset: 0, limit: 20 }, async () => {
      throw new Error('unavailable');
    }),
    /unavailable/,
  );
  assert.equal((await windows.page(1, 1, 'recent', { offset: 0, limit: 20 }, async () => stamps(5)))!.length, 5);
});

test('a list gets windows once its pages are asked often between revisions, loses them when they are not', async () => {
  const windows = new ListWindows(undefined, 4);
  const read = async (size: number) => stamps(size);
  const asks = async (revision: number, pages: number) => {
    const got = [];
    for (let i = 0; i < pages; i++) got.push(await windows.page(1, revision, 'recent', { offset: 0, limit: 20 }, read));
    return got.map((p) => p !== undefined);
  };
  // Nothing known of the list yet: pages are read as they are asked.
  assert.deepEqual(await asks(1, 10), Array(10).fill(false));
  // Ten pages at the last revision: this one has windows.
  assert.deepEqual(await asks(2, 2), [true, true]);
  // Revisions moving faster than pages are asked: (5 + 2 / 10) / 2 pages a revision, under four.
  assert.deepEqual(await asks(12, 1), [false]);
  assert.deepEqual(await asks(30, 1), [false]);
});
