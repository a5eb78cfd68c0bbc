import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { fuzzParameters, oddText, pageSession } from './fuzz.js';
import { client, makeApp, makeProduct, makeUser, type TestContext, type TestUser } from './helpers.js';

/**
 * Property: whatever members do, and however their requests interleave, the product stays
 * consistent. Random sequences of item changes, board moves, follows and deploys (some sent at
 * once) run on a fresh product each; after every step the item numbers are 1..n, the positions
 * within each status are distinct, and each deploy queued exactly one message per following
 * member (the deployer excepted) listing exactly the items they follow. Nothing is a 5xx.
 */

/** Sequences per run, of up to 12 steps each: about 2,000 requests in all. */
const SEQUENCES = 150;

let t: TestContext;
const people: Record<Actor, TestUser> = {} as Record<Actor, TestUser>;
const sessions: Record<Actor, { cookie: string; csrf: string }> = {} as Record<Actor, { cookie: string; csrf: string }>;

before(async () => {
  t = await makeApp();
  for (const actor of ACTORS) people[actor] = await makeUser(t.db);
  for (const actor of ACTORS) sessions[actor] = await pageSession(t, people[actor]);
});
after(() => t.close());

const ACTORS = ['owner', 'ann', 'bob'] as const;
type Actor = (typeof ACTORS)[number];
const STATUSES = ['backlog', 'in-progress', 'completed', 'accepted'] as const;

type Op =
  | {
      kind: 'create';
      by: Actor;
      type: 'story' | 'task' | 'defect' | 'test';
      status?: string;
      parent?: number;
      assignee?: Actor;
      tags?: string;
    }
  | {
      kind: 'update';
      by: Actor;
      n: number;
      title?: string;
      status?: string;
      score?: string;
      tags?: string;
      assignee?: Actor | '';
      parent?: number | '';
    }
  /** As the SDK's save() does: the item fetched, its title changed, and the whole of it posted back as JSON. */
  | { kind: 'save'; by: Actor; n: number; title: string }
  | { kind: 'resort'; by: Actor; n: number; before?: number; after?: number }
  | {
      kind: 'move';
      by: Actor;
      n: number;
      to: 'up' | 'down' | 'top' | 'status' | 'place';
      above?: number;
      below?: number;
      status: string;
    }
  | { kind: 'archive'; by: Actor; n: number }
  | { kind: 'follow'; by: Actor; n: number; follow: boolean }
  | {
      kind: 'deploy';
      by: Actor;
      numbers: number[];
      environment: string;
      version: string;
      key?: string;
      dryRun?: boolean;
    }
  /** Which environments email the person about the product's deploys: all, or a list. */
  | { kind: 'choose'; by: Actor; environments: string };

const actor = fc.constantFrom(...ACTORS);
/** Item numbers: mostly of items that exist (or soon will), sometimes of none, or too large for any. */
const itemNumber = fc.oneof(
  { weight: 15, arbitrary: fc.integer({ min: 1, max: 7 }) },
  fc.constantFrom(0, 99, 2147483648),
);
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined, freq: 2 });
const status = fc.constantFrom(...STATUSES);

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        kind: fc.constant('create' as const),
        by: actor,
        type: fc.constantFrom('story', 'task', 'task', 'defect', 'test'),
        status: maybe(status),
        parent: maybe(itemNumber),
        assignee: maybe(actor),
        tags: maybe(fc.constantFrom('x', 'x,y', 'y')),
      },
      { requiredKeys: ['kind', 'by', 'type'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('update' as const),
        by: actor,
        n: itemNumber,
        title: maybe(fc.constantFrom('Renamed', 'Another title')),
        status: maybe(status),
        score: maybe(fc.constantFrom('~', 'S', 'XL')),
        tags: maybe(fc.constantFrom('', 'x', 'y,z')),
        assignee: maybe(fc.constantFrom<Actor | ''>(...ACTORS, '')),
        parent: maybe(fc.oneof(itemNumber, fc.constant<''>(''))),
      },
      { requiredKeys: ['kind', 'by', 'n'] },
    ),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('update' as const), by: actor, n: itemNumber, status }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('save' as const),
      by: actor,
      n: itemNumber,
      title: fc.constantFrom('Saved', 'Saved again'),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('resort' as const),
        by: actor,
        n: itemNumber,
        before: maybe(itemNumber),
        after: maybe(itemNumber),
      },
      { requiredKeys: ['kind', 'by', 'n'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('move' as const),
        by: actor,
        n: itemNumber,
        to: fc.constantFrom('up', 'down', 'top', 'status', 'place'),
        above: maybe(itemNumber),
        below: maybe(itemNumber),
        status,
      },
      { requiredKeys: ['kind', 'by', 'n', 'to', 'status'] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('archive' as const), by: actor, n: itemNumber }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('follow' as const), by: actor, n: itemNumber, follow: fc.boolean() }),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('deploy' as const),
        by: actor,
        numbers: fc.array(itemNumber, { minLength: 1, maxLength: 4 }),
        environment: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('production', 'staging', ' production ') },
          oddText.filter(
            (s) =>
              s.trim() !== '' &&
              // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters a name may not hold
              !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ud800-\udfff]/.test(s) &&
              [...s].length <= 255,
          ),
        ),
        version: fc.constantFrom('', 'v1', 'v2'),
        key: maybe(fc.constantFrom('k1', 'k2')),
        dryRun: fc.option(fc.constant(true), { nil: undefined, freq: 4 }),
      },
      { requiredKeys: ['kind', 'by', 'numbers', 'environment', 'version'] },
    ),
  },
);

// Completes the ops above: a person's choice of deploy environments.
const choose = fc.record({
  kind: fc.constant('choose' as const),
  by: actor,
  environments: fc.constantFrom('all', 'production', 'staging', 'production, staging', 'Production'),
});

/** A step: one request, or a few sent at once. */
const anyOp: fc.Arbitrary<Op> = fc.oneof({ weight: 12, arbitrary: op }, { weight: 1, arbitrary: choose });
const step = fc.oneof(
  { weight: 3, arbitrary: anyOp.map((o) => [o]) },
  { weight: 1, arbitrary: fc.array(anyOp, { minLength: 2, maxLength: 5 }) },
);

/**
 * What the requests did, as far as the checks need it: how many items, who is assigned and who
 * follows what, the deploys.
 */
interface Model {
  productId: number;
  items: number;
  assignees: Map<number, number | null>;
  followers: Map<number, Set<number>>;
  /** Idempotency keys by user: the first deploy made with each, and its parameters. */
  keys: Map<string, { id: number; params: string }>;
  /** The environments each person chose to be emailed about (absent: all). */
  choices: Map<number, Set<string>>;
}

/** A request that ran, with its answer. */
type Done = { op: Op; res: LightMyRequestResponse };
type DeployOp = Extract<Op, { kind: 'deploy' }>;

function form(params: Record<string, string | number | undefined>): string {
  const f = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) f.append(k, String(v));
  return f.toString();
}

async function send(model: Model, o: Op): Promise<LightMyRequestResponse> {
  const api = client(t.app, people[o.by]);
  const base = `/api/products/${model.productId}`;
  const userId = (a: Actor | '' | undefined) => (a === undefined ? undefined : a === '' ? '' : people[a].user.id);
  switch (o.kind) {
    case 'create': {
      const text = o.type === 'story' ? { who: 'user', what: 'something', why: 'reasons' } : { title: `A ${o.type}` };
      return api.post(`${base}/items.json`, {
        type: o.type,
        ...text,
        status: o.status,
        parent: o.parent,
        assigned_to: userId(o.assignee),
        tags: o.tags,
      });
    }
    case 'update':
      return api.post(`${base}/items/${o.n}.json`, {
        title: o.title,
        status: o.status,
        score: o.score,
        tags: o.tags,
        assigned_to: userId(o.assignee),
        parent: o.parent,
      });
    case 'save': {
      const item = await api.get(`${base}/items/${o.n}.json`);
      if (item.statusCode !== 200) return item;
      return api.postJson(`${base}/items/${o.n}.json`, { ...(item.json() as object), title: o.title });
    }
    case 'resort':
      return api.post(`${base}/items/${o.n}/resort.json`, { before: o.before, after: o.after });
    case 'move': {
      const { cookie, csrf } = sessions[o.by];
      return t.app.inject({
        method: 'POST',
        url: `/app/products/${model.productId}/items/${o.n}/move`,
        headers: { cookie, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ csrf, to: o.to, above: o.above, below: o.below, status: o.status }),
      });
    }
    case 'archive':
      return api.delete(`${base}/items/${o.n}.json`);
    case 'follow':
      return o.follow ? api.post(`${base}/items/${o.n}/follow.json`) : api.delete(`${base}/items/${o.n}/follow.json`);
    case 'deploy':
      return api.post(
        `${base}/deploys.json`,
        {
          environment: o.environment,
          numbers: o.numbers.join(','),
          version: o.version || undefined,
          dry_run: o.dryRun ? 'true' : undefined,
        },
        o.key ? { 'idempotency-key': o.key } : {},
      );
    case 'choose':
      return api.post(`${base}/notifications.json`, { environments: o.environments });
  }
}

/** Ops that change who follows an item that exists: run one at a time before the rest of their step. */
const changesFollowers = (o: Op): boolean =>
  o.kind === 'follow' || o.kind === 'save' || o.kind === 'choose' || (o.kind === 'update' && o.assignee !== undefined);

/**
 * Runs one step: all its requests at once, except that follows and assignments go first, one by
 * one, when the step also deploys (the mail a deploy queues depends on who follows at that moment)
 * or has more than one of them. Returns each request with its answer.
 */
async function runStep(model: Model, ops: Op[]): Promise<Done[]> {
  const ordered = ops.some((o) => o.kind === 'deploy') || ops.filter(changesFollowers).length > 1;
  const first = ops.length > 1 && ordered ? ops.filter(changesFollowers) : [];
  const done: Done[] = [];
  for (const o of first) done.push({ op: o, res: await send(model, o) });
  const rest = ops.filter((o) => !first.includes(o));
  const answers = await Promise.all(rest.map((o) => send(model, o)));
  for (const [i, o] of rest.entries()) done.push({ op: o, res: answers[i] });
  return done;
}

const labelOf = ({ op: o, res }: Done) => `${JSON.stringify(o)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
const idOf = (item: { email: { files: string } }) => Number(/^files-(\d+)@/.exec(item.email.files)![1]);

/**
 * Follows the answers of a step into the model: new items, assignments, follows. New items first:
 * a change of an item made in the same step succeeded only after it was created.
 */
function apply(model: Model, done: Done[]): void {
  for (const d of [...done.filter((x) => x.op.kind === 'create'), ...done.filter((x) => x.op.kind !== 'create')]) {
    assert.ok(d.res.statusCode < 500, `a server error: ${labelOf(d)}`);
    if (d.res.statusCode !== 200) continue;
    const o = d.op;
    const body = d.res.json();
    if (o.kind === 'create') {
      model.items += 1;
      const assignee = o.assignee ? people[o.assignee].user.id : null;
      model.assignees.set(body.number, assignee);
      model.followers.set(body.number, new Set([people[o.by].user.id, ...(assignee ? [assignee] : [])]));
    } else if ((o.kind === 'update' && o.assignee !== undefined) || o.kind === 'save') {
      // docs/INTERFACE.md §7.4: a new assignee starts following; the one already assigned is left as they chose.
      const assignee = body.assigned_to?.id ?? null;
      if (assignee !== null && assignee !== model.assignees.get(o.n)) model.followers.get(o.n)!.add(assignee);
      model.assignees.set(o.n, assignee);
    } else if (o.kind === 'choose') {
      const user = people[o.by].user.id;
      if (o.environments === 'all') model.choices.delete(user);
      else model.choices.set(user, new Set(o.environments.split(',').map((e) => e.trim())));
    } else if (o.kind === 'follow') {
      if (o.follow) model.followers.get(o.n)!.add(people[o.by].user.id);
      else model.followers.get(o.n)!.delete(people[o.by].user.id);
    }
  }
}

/**
 * The deploys of a step: answered as their numbers and keys say, and each new one with exactly
 * one message per member following any of its items (not the deployer), listing those items.
 */
async function checkDeploys(model: Model, done: Done[], itemsBefore: number): Promise<void> {
  // Deploys that went through first: a 422 of the same step may be refused for the key one of them used.
  for (const d of [...done.filter((x) => x.res.statusCode !== 422), ...done.filter((x) => x.res.statusCode === 422)]) {
    if (d.op.kind !== 'deploy') continue;
    const o: DeployOp = d.op;
    const label = labelOf(d);
    const params = JSON.stringify([o.environment, [...new Set(o.numbers)].sort((a, b) => a - b), o.version]);
    const keyed = o.key === undefined ? undefined : model.keys.get(`${o.by}:${o.key}`);
    if (d.res.statusCode === 422) {
      assert.ok(keyed && keyed.params !== params, `422 for a key not used with other parameters: ${label}`);
      continue;
    }
    if (d.res.statusCode === 400) {
      // Items created in the same step may or may not exist yet for it.
      assert.ok(!o.numbers.some((n) => n >= 1 && n <= itemsBefore), `a deploy naming items refused: ${label}`);
      continue;
    }
    assert.equal(d.res.statusCode, 200, label);
    const deploy = d.res.json();
    const expected = recipientsOf(model, o, deploy.items);
    if (o.dryRun) {
      // A dry run names who the deploy would mail, about which items, and records nothing.
      assert.equal(deploy.id, null, label);
      const named = deploy.recipients.map((r: { email: string; numbers: number[] }) => [
        ACTORS.find((a) => people[a].email === r.email),
        r.numbers,
      ]);
      const numberOf = new Map<number, number>(
        deploy.items.map((i: { number: number; email: { files: string } }) => [idOf(i), i.number]),
      );
      const wanted = [...expected].map(([user, ids]) => [
        ACTORS.find((a) => people[a].user.id === user),
        ids.map((id) => numberOf.get(id)).sort((a, b) => a! - b!),
      ]);
      assert.deepEqual(named.sort(), wanted.sort(), `who a dry run would mail: ${label}`);
      continue;
    }
    if (keyed) {
      assert.equal(deploy.id, keyed.id, `a repeated key made another deploy: ${label}`);
      assert.equal(params, keyed.params, `a key reused with other parameters was accepted: ${label}`);
      continue;
    }
    if (o.key !== undefined) model.keys.set(`${o.by}:${o.key}`, { id: deploy.id, params });
    const deployed: number[] = deploy.items.map((i: { number: number }) => i.number);
    assert.deepEqual(
      deployed,
      [...new Set(deployed)].sort((a, b) => a - b),
      `items out of order: ${label}`,
    );
    for (const n of o.numbers)
      if (n >= 1 && n <= itemsBefore) assert.ok(deployed.includes(n), `item ${n} left out: ${label}`);
    for (const n of deployed) assert.ok(o.numbers.includes(n) && n <= model.items, `item ${n} not asked for: ${label}`);

    assert.equal(deploy.emailed, expected.size, `emailed: ${label}`);
    const rows = await t.db
      .selectFrom('outbox')
      .select(['user_id', 'item_ids'])
      .where('deploy_id', '=', deploy.id)
      .execute();
    const queued = rows
      .map((r) => [r.user_id, (JSON.parse(r.item_ids) as number[]).sort((a, b) => a - b)] as const)
      .sort(([a], [b]) => a! - b!);
    assert.deepEqual(
      queued,
      [...expected].sort(([a], [b]) => a - b),
      `messages of deploy ${deploy.id} (user, item ids) differ from who follows what: ${label}`,
    );
  }
}

/**
 * Who a deploy mails (user id -> item ids): the members following any of its items, the deployer
 * excepted, who chose every environment or this one (names compared trimmed).
 */
function recipientsOf(
  model: Model,
  o: DeployOp,
  items: { number: number; email: { files: string } }[],
): Map<number, number[]> {
  const expected = new Map<number, number[]>();
  for (const item of items) {
    for (const user of model.followers.get(item.number) ?? []) {
      const chosen = model.choices.get(user);
      if (user === people[o.by].user.id || (chosen && !chosen.has(o.environment.trim()))) continue;
      expected.set(
        user,
        [...(expected.get(user) ?? []), idOf(item)].sort((a, b) => a - b),
      );
    }
  }
  return expected;
}

/** Numbers 1..n, each once; positions distinct within each status; followers as the model has them. */
async function checkItems(model: Model): Promise<void> {
  const rows = await t.db
    .selectFrom('items')
    .select(['number', 'status', 'sort'])
    .where('product_id', '=', model.productId)
    .orderBy('number')
    .execute();
  assert.deepEqual(
    rows.map((r) => r.number),
    Array.from({ length: model.items }, (_, i) => i + 1),
    'item numbers are not 1..n',
  );
  const at = new Map<string, number>();
  for (const row of rows) {
    const place = `status ${row.status}, sort ${row.sort}`;
    assert.ok(!at.has(place), `items ${at.get(place)} and ${row.number} share ${place}`);
    at.set(place, row.number);
  }
  const follows = await t.db
    .selectFrom('followers')
    .innerJoin('items', 'items.id', 'followers.item_id')
    .select(['items.number', 'followers.user_id'])
    .where('items.product_id', '=', model.productId)
    .execute();
  const following = (pairs: [number, number][]) =>
    pairs.map(([n, u]) => `#${n} ${ACTORS.find((a) => people[a].user.id === u)}`).sort();
  assert.deepEqual(
    following(follows.map((f) => [f.number, f.user_id])),
    following([...model.followers].flatMap(([n, users]) => [...users].map((u): [number, number] => [n, u]))),
    'who follows which item',
  );
  const product = await t.db
    .selectFrom('products')
    .select('last_number')
    .where('id', '=', model.productId)
    .executeTakeFirstOrThrow();
  assert.equal(Number(product.last_number), model.items, "the product's last number");
}

/**
 * Where a resort (or a board move that is one) put the item, when it ran alone (docs/INTERFACE.md §6):
 * `before=Y` directly below Y, `after=X` directly above X, both: directly below the higher of the two.
 */
async function checkPlace(model: Model, d: Done): Promise<void> {
  if (d.res.statusCode !== 200) return;
  const o = d.op;
  let below: number | undefined;
  let above: number | undefined;
  if (o.kind === 'resort') [below, above] = [o.before, o.after];
  else if (o.kind === 'move' && o.to === 'up') above = o.above;
  else if (o.kind === 'move' && o.to === 'down') below = o.below;
  else if (o.kind === 'move' && o.to === 'place')
    [below, above] = o.above !== undefined ? [o.above, undefined] : [undefined, o.below];
  else return;
  if (below === undefined && above === undefined) return;
  const item = await t.db
    .selectFrom('items')
    .select('status')
    .where('product_id', '=', model.productId)
    .where('number', '=', o.n)
    .executeTakeFirstOrThrow();
  const column = (
    await t.db
      .selectFrom('items')
      .select('number')
      .where('product_id', '=', model.productId)
      .where('status', '=', item.status)
      .orderBy('sort')
      .orderBy('number')
      .execute()
  ).map((r) => r.number);
  const at = column.indexOf(o.n);
  const label = `${labelOf(d)}\n  the column is now ${column.join(', ')}`;
  if (below !== undefined && above !== undefined) {
    const higher = column.indexOf(below) < column.indexOf(above) ? below : above;
    assert.equal(column[at - 1], higher, `not right below ${higher}, the higher of the two: ${label}`);
  } else if (below !== undefined) assert.equal(column[at - 1], below, `not right below ${below}: ${label}`);
  else assert.equal(column[at + 1], above, `not right above ${above}: ${label}`);
}

/** Every message queued in the run renders and is delivered. */
async function checkDelivery(model: Model): Promise<void> {
  await t.app.outbox.deliverDue();
  const deploys = t.db.selectFrom('deploys').select('id').where('product_id', '=', model.productId);
  const stuck = await t.db
    .selectFrom('outbox')
    .select(['id', 'status', 'last_error'])
    .where('deploy_id', 'in', deploys)
    .where('status', '!=', 'sent')
    .execute();
  assert.deepEqual(stuck, [], 'messages not delivered');
}

/** Each sequence starts on a product of its own with a story, two tasks (one its sub-item) and a defect. */
const START: Op[] = [
  { kind: 'create', by: 'owner', type: 'story' },
  { kind: 'create', by: 'ann', type: 'task', parent: 1, assignee: 'bob' },
  { kind: 'create', by: 'bob', type: 'task' },
  { kind: 'create', by: 'owner', type: 'defect', status: 'in-progress', assignee: 'ann' },
];

/** Answers by kind of request and status: what the run reached, shown with the result. */
const answers = new Map<string, number>();

test('item numbers, positions and deploy mail stay right under any sequence of changes', async (context) => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      const product = await makeProduct(t.db, people.owner, [people.ann, people.bob]);
      const model: Model = {
        productId: product.id,
        items: 0,
        assignees: new Map(),
        followers: new Map(),
        keys: new Map(),
        choices: new Map(),
      };
      for (const o of START) {
        const done = await runStep(model, [o]);
        assert.equal(done[0].res.statusCode, 200, labelOf(done[0]));
        apply(model, done);
      }
      for (const [i, ops] of steps.entries()) {
        const itemsBefore = model.items;
        const done = await runStep(model, ops);
        for (const d of done)
          answers.set(`${d.op.kind} ${d.res.statusCode}`, (answers.get(`${d.op.kind} ${d.res.statusCode}`) ?? 0) + 1);
        const where = `step ${i + 1} (${ops.length > 1 ? 'at once' : 'alone'}): ${done.map(labelOf).join('\n  ')}`;
        try {
          apply(model, done);
          await checkDeploys(model, done, itemsBefore);
          await checkItems(model);
          if (done.length === 1) await checkPlace(model, done[0]);
        } catch (err) {
          throw new Error(`${(err as Error).message}\n  after ${where}`, { cause: err });
        }
      }
      await checkDelivery(model);
    }),
    fuzzParameters(SEQUENCES),
  );
  const total = [...answers.values()].reduce((a, b) => a + b, 0);
  context.diagnostic(
    `${total} requests: ${[...answers]
      .sort()
      .map(([k, n]) => `${n}x ${k}`)
      .join(', ')}`,
  );
});
