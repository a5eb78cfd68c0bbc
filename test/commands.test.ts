import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Trx } from '../src/db/connection.js';
import type { DeployInput } from '../src/deploys/input.js';
import { recordDeploy } from '../src/deploys/service.js';
import { AppError } from '../src/errors.js';
import { resortItem } from '../src/items/service.js';
import { SORT_STEP } from '../src/items/model.js';
import { findProduct } from '../src/products/repository.js';
import type { ProductScope, Urls } from '../src/scope.js';
import { client, makeApp, makeItem, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

// The two named commands called as functions, each in a transaction of its own as a route runs
// them: what they guarantee without HTTP in between.

let t: TestContext;
let urls: Urls;
before(async () => {
  t = await makeApp();
  urls = { publicUrl: t.config.publicUrl, mailDomain: t.config.mailDomain };
});
after(() => t.close());

/** The scope a product route establishes for `user`, with the product as it is now. */
async function scopeOf(user: TestUser, productId: number): Promise<ProductScope> {
  const product = await findProduct(t.db, productId);
  assert.ok(product);
  return { user: user.user, product, admin: true };
}

function inTransaction<R>(run: (trx: Trx) => Promise<R>): Promise<R> {
  return t.db.transaction().execute(run);
}

/** Passes when `promise` rejects with the service's error of that status (and `errors` naming exactly those). */
async function rejectsWith(promise: Promise<unknown>, status: number, errors?: string[]): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof AppError, `not a service error: ${String(err)}`);
    assert.equal(err.statusCode, status, err.message);
    if (errors) assert.deepEqual(Object.keys(err.errors ?? {}).sort(), [...errors].sort(), err.message);
    return true;
  });
}

const deploy = (overrides: Partial<DeployInput> = {}): DeployInput => ({
  environment: 'production',
  numbers: [1],
  version: '1.0',
  notes: '',
  rollback: false,
  dryRun: false,
  ...overrides,
});

describe('recordDeploy', () => {
  async function setup() {
    const deployer = await makeUser(t.db);
    const alice = await makeUser(t.db);
    const bob = await makeUser(t.db);
    const carol = await makeUser(t.db);
    const dave = await makeUser(t.db);
    const product = await makeProduct(t.db, deployer, [alice, bob, carol, dave]);
    await makeItem(t.app, deployer, product.id, { assigned_to: bob.user.id }); // 1: deployer, bob
    await makeItem(t.app, alice, product.id); // 2: alice
    await makeItem(t.app, dave, product.id); // 3: dave, who then leaves
    await client(t.app, bob).post(`/api/products/${product.id}/items/2/follow.json`); // 2: + bob
    await t.db
      .deleteFrom('memberships')
      .where('product_id', '=', product.id)
      .where('user_id', '=', dave.user.id)
      .execute();
    const scope = await scopeOf(deployer, product.id);
    // Outbox rows name items by their internal id, which the interface does not show.
    const ids = (
      await t.db.selectFrom('items').select('id').where('product_id', '=', product.id).orderBy('number').execute()
    ).map((r) => r.id);
    const outboxOf = (deployId: number) =>
      t.db
        .selectFrom('outbox')
        .select(['user_id', 'item_ids'])
        .where('deploy_id', '=', deployId)
        .orderBy('user_id')
        .execute();
    const deploysOf = () => t.db.selectFrom('deploys').select('id').where('product_id', '=', product.id).execute();
    return { deployer, alice, bob, carol, dave, product, scope, ids, outboxOf, deploysOf };
  }

  test('records the known numbers and skips the others', async () => {
    const { scope, ids } = await setup();
    const result = await inTransaction((trx) =>
      recordDeploy(trx, scope, deploy({ numbers: [1, 3, 99] }), undefined, urls),
    );
    assert.equal(result.created, true);
    assert.deepEqual(result.created && result.items.map((i) => i.number), [1, 3]);
    const linked = await t.db
      .selectFrom('item_deployments')
      .select('item_id')
      .where('deploy_id', '=', result.deploy.id)
      .orderBy('item_id')
      .execute();
    assert.deepEqual(
      linked.map((r) => r.item_id),
      [ids[0], ids[2]],
    );
  });

  test('no known number: a 400 is thrown and nothing is written', async () => {
    const { scope, deploysOf, alice } = await setup();
    await rejectsWith(
      inTransaction((trx) => recordDeploy(trx, scope, deploy({ numbers: [77, 78] }), undefined, urls)),
      400,
    );
    assert.deepEqual(await deploysOf(), []);
    assert.deepEqual(await t.db.selectFrom('outbox').select('id').where('user_id', '=', alice.user.id).execute(), []);
  });

  test('one outbox row per following member, with their items; none for the deployer, others, ex-members', async () => {
    const { scope, alice, bob, ids, outboxOf } = await setup();
    const result = await inTransaction((trx) =>
      recordDeploy(trx, scope, deploy({ numbers: [1, 2, 3] }), undefined, urls),
    );
    const expected = [
      { user_id: alice.user.id, item_ids: JSON.stringify([ids[1]]) },
      { user_id: bob.user.id, item_ids: JSON.stringify([ids[0], ids[1]]) },
    ].sort((a, b) => a.user_id - b.user_id);
    assert.deepEqual(await outboxOf(result.deploy.id), expected);
  });

  test('an Idempotency-Key repeat returns the first deploy and queues nothing', async () => {
    const { scope, outboxOf, deploysOf } = await setup();
    const input = deploy({ numbers: [1, 2] });
    const first = await inTransaction((trx) => recordDeploy(trx, scope, input, 'release-42', urls));
    assert.equal(first.created, true);
    const queued = await outboxOf(first.deploy.id);
    assert.equal(queued.length, 2);
    const again = await inTransaction((trx) => recordDeploy(trx, scope, { ...input }, 'release-42', urls));
    assert.equal(again.created, false);
    assert.equal(again.deploy.id, first.deploy.id);
    assert.deepEqual(await outboxOf(first.deploy.id), queued);
    assert.deepEqual(await deploysOf(), [{ id: first.deploy.id }]);
  });

  test('the same key with other parameters is a 422, and records nothing', async () => {
    const { scope, outboxOf, deploysOf } = await setup();
    const first = await inTransaction((trx) =>
      recordDeploy(trx, scope, deploy({ numbers: [1, 2] }), 'release-43', urls),
    );
    const queued = await outboxOf(first.deploy.id);
    for (const other of [
      deploy({ numbers: [1] }),
      deploy({ numbers: [1, 2], version: '2.0' }),
      deploy({ numbers: [1, 2], environment: 'staging' }),
    ]) {
      await rejectsWith(
        inTransaction((trx) => recordDeploy(trx, scope, other, 'release-43', urls)),
        422,
      );
    }
    assert.deepEqual(await deploysOf(), [{ id: first.deploy.id }]);
    assert.deepEqual(await outboxOf(first.deploy.id), queued);
  });
});

describe('resortItem', () => {
  async function setup(count = 5) {
    const owner = await makeUser(t.db);
    const product = await makeProduct(t.db, owner);
    for (let i = 0; i < count; i++) await makeItem(t.app, owner, product.id);
    const scope = await scopeOf(owner, product.id);
    const resort = (number: number, input: { before?: number; after?: number }) =>
      inTransaction((trx) => resortItem(trx, scope, number, input));
    const sorts = async () =>
      new Map(
        (await t.db.selectFrom('items').select(['number', 'sort']).where('product_id', '=', product.id).execute()).map(
          (r) => [r.number, Number(r.sort)],
        ),
      );
    /** Backlog item numbers in position order. */
    const order = async () =>
      (
        await t.db
          .selectFrom('items')
          .select('number')
          .where('product_id', '=', product.id)
          .where('status', '=', 1)
          .orderBy('sort')
          .orderBy('number')
          .execute()
      ).map((r) => r.number);
    return { owner, product, resort, sorts, order };
  }

  /** Asserts that only `moved` changed its sort between the two snapshots. */
  function onlyMoved(before: Map<number, number>, after: Map<number, number>, moved: number): void {
    for (const [number, sort] of before) {
      if (number === moved) assert.notEqual(after.get(number), sort, `item ${moved} moved`);
      else assert.equal(after.get(number), sort, `item ${number} kept its sort`);
    }
  }

  test('before=Y places the item directly below Y; only its sort changes', async () => {
    const { resort, sorts, order } = await setup();
    const before = await sorts();
    const moved = await resort(5, { before: 2 });
    assert.equal(moved.number, 5);
    assert.deepEqual(await order(), [1, 2, 5, 3, 4]);
    onlyMoved(before, await sorts(), 5);
    assert.equal(Number(moved.sort), (await sorts()).get(5));
  });

  test('after=X places the item directly above X, to the very top too; only its sort changes', async () => {
    const { resort, sorts, order } = await setup();
    let before = await sorts();
    await resort(4, { after: 2 });
    assert.deepEqual(await order(), [1, 4, 2, 3, 5]);
    onlyMoved(before, await sorts(), 4);
    before = await sorts();
    await resort(5, { after: 1 });
    assert.deepEqual(await order(), [5, 1, 4, 2, 3]);
    onlyMoved(before, await sorts(), 5);
  });

  test('both: the item lands directly below the higher of the two, whichever way round they are named', async () => {
    const a = await setup();
    await a.resort(5, { before: 1, after: 2 });
    assert.deepEqual(await a.order(), [1, 5, 2, 3, 4]);
    const b = await setup();
    await b.resort(5, { before: 2, after: 1 });
    assert.deepEqual(await b.order(), [1, 5, 2, 3, 4]);
  });

  test('when the gap is used up the status is spread out again, keeping its order', async () => {
    const { product, resort, sorts, order } = await setup();
    await t.db
      .updateTable('items')
      .set({ sort: 100 })
      .where('product_id', '=', product.id)
      .where('number', '=', 1)
      .execute();
    await t.db
      .updateTable('items')
      .set({ sort: 101 })
      .where('product_id', '=', product.id)
      .where('number', '=', 2)
      .execute();
    await resort(5, { before: 1 });
    assert.deepEqual(await order(), [1, 5, 2, 3, 4]);
    const s = await sorts();
    assert.equal(s.get(2)! - s.get(1)!, SORT_STEP);
    assert.equal(s.get(3)! - s.get(2)!, SORT_STEP);
    assert.equal(s.get(4)! - s.get(3)!, SORT_STEP);
    assert.equal(s.get(5), s.get(1)! + SORT_STEP / 2);
  });

  test('a reference in another status, or the item itself, is refused and nothing moves', async () => {
    const { owner, product, resort, sorts } = await setup(3);
    await makeItem(t.app, owner, product.id, { status: 'in-progress' }); // 4
    const before = await sorts();
    await rejectsWith(resort(1, { before: 4 }), 400, ['before']);
    await rejectsWith(resort(1, { after: 4 }), 400, ['after']);
    await rejectsWith(resort(4, { before: 1 }), 400, ['before']);
    await rejectsWith(resort(2, { before: 1, after: 4 }), 400, ['after']);
    await rejectsWith(resort(2, { after: 2 }), 400, ['after']);
    await rejectsWith(resort(2, { before: 99 }), 404);
    assert.deepEqual(await sorts(), before);
  });
});
