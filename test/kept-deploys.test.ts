import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { KeptDeploys } from '../src/deploys/index.js';
import { keptSummaries } from '../src/deploys/summaries.js';
import { forgetProfile } from '../src/users/profiles.js';
import type { DeployOfPage, ListedDeployRow } from '../src/deploys/repository.js';
import type { ListedDeployJson } from '../src/deploys/present.js';
import {
  client,
  keptAndFresh,
  type KeptAndFresh,
  makeItem,
  makeProduct,
  renameProduct,
  type TestContext,
  type TestUser,
} from './helpers.js';

// Each deploy's JSON as pages of deploys.json show it is kept whole, by what may change in it
// (src/deploys/listed.ts): a later rollback, the deployer as the viewer sees them, the product.
let t: TestContext;
let fresh: FastifyInstance;
let ada: TestUser;
let bob: TestUser;
let cy: TestUser;

let setup: KeptAndFresh;
before(async () => {
  setup = await keptAndFresh();
  ({ t, fresh, ada, bob, cy } = setup);
});
after(() => setup.close());

/**
 * A page asked afresh (`no-cache`: whole answers are not kept, each deploy's JSON is) is byte for
 * byte what an instance keeping nothing renders; the parsed page is returned.
 */
async function compare(url: string, viewer: TestUser): Promise<ListedDeployJson[]> {
  const headers = { authorization: viewer.auth, 'cache-control': 'no-cache' };
  const got = await t.app.inject({ url, headers });
  // Profiles are remembered for a while by each instance (users/profiles.ts): the reference reads them.
  for (const user of [ada, bob]) forgetProfile(fresh.db, user.user.id);
  const expected = await fresh.inject({ url, headers });
  assert.equal(got.statusCode, 200, got.body);
  assert.equal(got.body, expected.body, url);
  assert.equal(got.headers.etag, expected.headers.etag, url);
  return got.json();
}

test('deploys from kept JSON are what a fresh render gives after a rollback, a renamed product or user', async () => {
  const product = await makeProduct(t.db, ada, [bob]);
  const base = `/api/products/${product.id}`;
  for (const title of ['One', 'Two', 'Three']) await makeItem(t.app, ada, product.id, { title });
  const deploy = (by: TestUser, params: Record<string, string>) =>
    client(t.app, by).post(`${base}/deploys.json`, { environment: 'production', ...params });
  assert.equal((await deploy(ada, { version: 'v1', numbers: '1,2' })).statusCode, 200);
  assert.equal((await deploy(bob, { version: 'v2', numbers: '3' })).statusCode, 200);
  const url = `${base}/deploys.json?environment=production`;
  for (const viewer of [ada, bob]) await compare(url, viewer);
  assert.ok(t.app.keptDeploys.held > 0);
  assert.equal(fresh.keptDeploys.held, 0, 'the reference keeps nothing');

  // A rollback to v1 reverts v2, kept already.
  assert.equal((await deploy(ada, { version: 'v1', rollback: 'true' })).statusCode, 200);
  for (const viewer of [ada, bob]) {
    const [, v2] = await compare(url, viewer);
    assert.equal(v2.reverted, true);
  }

  // Every item embeds the product.
  await renameProduct(t.db, product.id, 'Renamed');
  for (const viewer of [ada, bob]) {
    const [v1] = await compare(url, viewer);
    assert.equal((v1.items[0] as { product: { name: string } }).product.name, 'Renamed');
  }

  // Ada's profile changes (her name; her last login, which only she sees): profiles are
  // remembered for a while (users/profiles.ts), so both instances forget hers.
  const at = '2026-03-01T00:00:00+00:00';
  await t.db
    .updateTable('users')
    .set({ first_name: 'Adelaide', last_login: at })
    .where('id', '=', ada.user.id)
    .execute();
  forgetProfile(t.db, ada.user.id);
  const [mine] = await compare(url, ada);
  assert.equal(mine.user.first_name, 'Adelaide');
  const [theirs] = await compare(url, bob);
  assert.equal(theirs.user.first_name, 'Adelaide');
  assert.equal(theirs.user.last_login, undefined);
  assert.equal(theirs.user.created_at, undefined);
});

/** A product and a viewer for KeptDeploys.page, and deploys of it made up (no rows are read but the users'). */
function pageOf(
  kept: KeptDeploys,
  viewer: TestUser,
  deploys: DeployOfPage[],
  reads: number[][],
  o: { budget?: number; deleted?: number } = {},
) {
  const product = { id: 1, name: 'P', archived: 0 } as never;
  const read = async (wanted: DeployOfPage[]): Promise<ListedDeployRow[]> => {
    reads.push(wanted.map((d) => d.id));
    return wanted
      .filter((d) => d.id !== o.deleted)
      .map((d) => ({
        ...d,
        product_id: 1,
        environment: 'production',
        version: `v${d.id}`,
        notes: '',
        created_at: '2026-01-01T00:00:00+00:00',
        idempotency_key: null,
        request_hash: null,
        rollback: 0,
        unknown_numbers: '[]',
        emailed: 0,
        blocked_items: '[]',
        ...keptSummaries(
          Array.from({ length: d.item_count ?? 1 }, (_, k) => ({
            product_id: 1,
            number: k === 0 ? d.id : d.id * 1000 + k,
            title: `Item ${d.id}`,
            type: 'task',
            status: 0,
          })),
        ),
      }));
  };
  return kept.page(t.db, {
    scope: { product, user: viewer.user } as never,
    deploys,
    read,
    serialize: (d) => JSON.stringify(d),
    publicUrl: 'http://shiplog.test',
    budget: o.budget ?? 1e6,
  });
}

/** A deploy of `items` items (made up by pageOf's read), by `by`, reverted when `reverted` says. */
const deployOf = (id: number, by: TestUser, reverted: string | null = null, items = 1): DeployOfPage => ({
  id,
  user_id: by.user.id,
  reverted_at: reverted,
  reverted_by: reverted ? 99 : null,
  item_count: items,
});

test('a page reads again only the deploys whose JSON is not kept or has changed, within its budget', async () => {
  const kept = new KeptDeploys(1e6);
  const reads: number[][] = [];
  const deploys = [deployOf(1, ada), deployOf(2, bob), deployOf(3, bob)];
  const first = await pageOf(kept, bob, deploys, reads);
  const again = await pageOf(kept, bob, deploys, reads);
  assert.deepEqual(reads, [[1, 2, 3]]);
  assert.deepEqual(again, first);
  assert.equal(first.count, 3);
  assert.deepEqual(
    JSON.parse(first.body.toString()).map((d: ListedDeployJson) => d.id),
    [1, 2, 3],
  );
  // Reverted since: read again, and the page (and its fingerprint) changes.
  const reverted = await pageOf(
    kept,
    bob,
    [deploys[0], deployOf(2, bob, '2026-02-01T00:00:00+00:00'), deploys[2]],
    reads,
  );
  assert.deepEqual(reads.at(-1), [2]);
  assert.notEqual(reverted.fingerprint, first.fingerprint);
  assert.equal(JSON.parse(reverted.body.toString())[1].reverted_at, '2026-02-01T00:00:00+00:00');
  // A deployer sees their own dates, others do not: Bob's view of his deploys is kept apart from
  // everyone else's, and Ada's of hers.
  const now = [deploys[0], deployOf(2, bob, '2026-02-01T00:00:00+00:00'), deploys[2]];
  const asAda = await pageOf(kept, ada, now, reads);
  assert.deepEqual(reads.at(-1), [1, 2, 3]);
  const [hers, his] = JSON.parse(asAda.body.toString());
  assert.ok(hers.user.created_at);
  assert.equal(his.user.created_at, undefined);
  assert.equal(JSON.parse(first.body.toString())[0].user.created_at, undefined);
  assert.ok(JSON.parse(first.body.toString())[1].user.created_at);
  // A third viewer sees Bob's deploys as Ada does, and Ada's as Bob does: nothing is read.
  const before = reads.length;
  const asCy = await pageOf(kept, cy, now, reads);
  assert.equal(reads.length, before);
  const shownTo = (page: { body: Buffer }, k: number) => JSON.stringify(JSON.parse(page.body.toString())[k]);
  assert.equal(shownTo(asCy, 0), shownTo(reverted, 0));
  assert.equal(shownTo(asCy, 2), shownTo(asAda, 2));
  // A deploy deleted since its page was read is left out.
  const gone = await pageOf(kept, bob, [deployOf(4, bob), deploys[2]], reads, { deleted: 4 });
  assert.deepEqual(reads.at(-1), [4]);
  assert.equal(gone.count, 1);
  assert.deepEqual(
    JSON.parse(gone.body.toString()).map((d: ListedDeployJson) => d.id),
    [3],
  );
  // Bob's profile changes: his deploys are made again, Ada's are not.
  await t.db.updateTable('users').set({ last_name: 'Renamed' }).where('id', '=', bob.user.id).execute();
  forgetProfile(t.db, bob.user.id);
  const renamed = await pageOf(kept, cy, now, reads);
  assert.deepEqual(reads.at(-1), [2, 3]);
  assert.equal(JSON.parse(renamed.body.toString())[2].user.last_name, 'Renamed');
});

test('kept deploys stay within their budget; with none, nothing is kept', async () => {
  const reads: number[][] = [];
  const small = new KeptDeploys(8_000);
  for (let id = 1; id <= 30; id++) await pageOf(small, bob, [deployOf(id, bob)], reads);
  assert.ok(small.held > 4_000 && small.held <= 8_000, `held ${small.held}`);
  // A deploy bigger than an eighth of the budget is not kept, and pushes out none of the others.
  const kept = new KeptDeploys(16_000);
  await pageOf(kept, bob, [deployOf(1, bob)], reads);
  const held = kept.held;
  assert.ok(held > 0 && held <= 2_000, `held ${held}`);
  await pageOf(kept, bob, [deployOf(2, bob, null, 40)], reads);
  assert.equal(kept.held, held);
  await pageOf(kept, bob, [deployOf(1, bob)], reads);
  assert.deepEqual(reads.at(-1), [2]);
  const none = new KeptDeploys(0);
  await pageOf(none, bob, [deployOf(1, bob)], reads);
  await pageOf(none, bob, [deployOf(1, bob)], reads);
  assert.equal(none.held, 0);
  assert.deepEqual(reads.slice(-2), [[1], [1]]);
});

test('a first deploy too big for the answer is cut to fit; the next page shows it whole again', async () => {
  const kept = new KeptDeploys(1e6);
  const whole = await pageOf(kept, bob, [deployOf(1, bob), deployOf(2, bob)], []);
  const size = JSON.stringify(JSON.parse(whole.body.toString())[0]).length;
  const cut = await pageOf(kept, bob, [deployOf(1, bob), deployOf(2, bob)], [], { budget: size });
  assert.equal(cut.count, 1);
  const [shown] = JSON.parse(cut.body.toString());
  assert.deepEqual(shown.items, []);
  assert.deepEqual(shown.omitted_numbers, [1]);
  assert.ok(cut.body.length <= size);
  assert.deepEqual(await pageOf(kept, bob, [deployOf(1, bob), deployOf(2, bob)], []), whole);
});
