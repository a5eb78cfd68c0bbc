import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { DeployRow, ItemRow, UserRow } from '../db/schema.js';
import { fillArray, leadingWithin, SerializedEntries, type Serialize } from '../http/answer-size.js';
import { ref } from '../http/documentation.js';
import { BIG_PAGE, findItemsByIds, ItemSchema, presentItems, type ItemHead, type ItemJson } from '../items/index.js';
import type { ProductScope, Urls } from '../scope.js';
import { nextTurn } from '../turns.js';
import { findProfiles, presentUser, UserSchema, type UserProfile } from '../users/index.js';
import { nowTimestamp } from '../time.js';
import { ProductSummarySchema } from '../products/index.js';
import type { DeployInput } from './input.js';
import { itemSizesOfDeploys, itemsOfDeploys } from './repository.js';

/** What a page of deploys embeds of each item (INTERFACE.md §4.4): kept when the deploy was written. */
export const DeployedItemSchema = Type.Object(
  {
    number: Type.Integer(),
    title: Type.String(),
    type: Type.String(),
    status: Type.String({ description: 'As it was when the deploy was recorded.' }),
    product: ref(ProductSummarySchema),
    short_url: Type.String(),
  },
  {
    $id: 'DeployedItem',
    description:
      'An item of a deploy as deploys.json lists it: its number, title, type and status as they were ' +
      "when the deploy was recorded; the rest is items/{number}.json's.",
  },
);
export type DeployedItemJson = Static<typeof DeployedItemSchema>;

/** A deploy's fields, with its items as `items` shows them (in the same place in every shape). */
const deployFields = <I extends TSchema>(items: I) => ({
  id: Type.Integer(),
  environment: Type.String(),
  version: Type.String({ description: 'Empty when not given.' }),
  notes: Type.String({ description: 'Markdown; empty when not given.' }),
  created_at: Type.String(),
  user: ref(UserSchema, { description: 'Who recorded the deploy.' }),
  items,
  omitted_numbers: Type.Optional(
    Type.Array(Type.Integer(), {
      description:
        'Only when `items` had to be cut short to keep the answer within its size bound: ' +
        'the numbers of the items left out, in order; fetch each as items/{number}.json.',
    }),
  ),
  /** A rollback: the environment runs `version` again; its items are those it reverted or restored. */
  rollback: Type.Boolean({ description: 'A rollback: the environment runs `version` again.' }),
  /** Undone by a later rollback: when, and that rollback's id. */
  reverted: Type.Boolean({ description: 'Undone by a later rollback.' }),
  reverted_at: Type.Optional(Type.String()),
  reverted_by: Type.Optional(Type.Integer({ description: "The rollback's id." })),
});

/** The deploy of deploys.json: its items summarised as they were when it was recorded. */
export const DeploySchema = Type.Object(
  deployFields(
    Type.Array(ref(DeployedItemSchema), {
      description:
        'The deployed items, by number, as they were when the deploy was recorded; ' +
        'on a rollback, those whose entry it changed.',
    }),
  ),
  { $id: 'Deploy', description: 'Items that went to an environment (docs/INTERFACE.md §4.4).' },
);
export type ListedDeployJson = Static<typeof DeploySchema>;

const fullItems = Type.Array(ref(ItemSchema), {
  description: 'The deployed items as they are now, by number; on a rollback, those whose entry it changed.',
});
/** A deploy with its items whole, as they are now: its receipt, and the pages under /app. */
const FullDeploySchema = Type.Object(deployFields(fullItems));
export type DeployJson = Static<typeof FullDeploySchema>;

const RecipientSchema = Type.Object(
  {
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    numbers: Type.Array(Type.Integer(), { description: 'The items they would be mailed about.' }),
  },
  { $id: 'DeployRecipient', description: 'A person a deploy would mail.' },
);

/**
 * What POST deploys.json answers: the deploy, the numbers that named no item, and how many people
 * it mails; a dry run (id null: nothing was recorded) also lists them, with their items' numbers.
 */
export const DeployReceiptSchema = Type.Object(
  {
    ...deployFields(fullItems),
    id: Type.Union([Type.Integer(), Type.Null()], { description: 'null on a dry run: nothing was recorded.' }),
    unknown_numbers: Type.Array(Type.Integer(), {
      description: 'The numbers of the request that named no item, in request order.',
    }),
    emailed: Type.Integer({ description: 'How many people the deploy mails.' }),
    blocked: Type.Array(
      Type.Object({
        number: Type.Integer(),
        blocked_by: Type.Array(Type.Integer(), { description: 'The numbers of its blockers not there.' }),
      }),
      {
        description:
          'The deployed items blocked by items the environment does not run (not deployed there, nor in ' +
          'this deploy), in number order; empty for a rollback.',
      },
    ),
    dry_run: Type.Boolean(),
    recipients: Type.Optional(Type.Array(ref(RecipientSchema), { description: 'On a dry run only.' })),
  },
  { $id: 'DeployReceipt', description: 'A deploy, and what recording it did (docs/INTERFACE.md §7.8).' },
);
export type DeployReceiptJson = Static<typeof DeployReceiptSchema>;

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const DEPLOY_SCHEMAS = [DeployedItemSchema, DeploySchema, RecipientSchema, DeployReceiptSchema];

/** What the deploys' presenters are given besides their rows. */
export interface DeployPresenting {
  /** The caller and the product. */
  scope: ProductScope;
  /** The addresses the items' JSON links to. */
  urls: Urls;
  /** The bytes the answer may take: what cannot fit is not presented (none: everything is). */
  budget?: number;
}

/**
 * A deploy as the caller (`viewerId`) sees it (see presentUser); `omitted`: the numbers of items
 * left out to fit an answer.
 */
export function presentDeploy<I>(o: {
  row: DeployRow;
  user: UserProfile;
  viewerId: number;
  items: I[];
  omitted?: number[];
}): Omit<DeployJson, 'items'> & { items: I[] } {
  const { row, user, viewerId, items, omitted = [] } = o;
  const json: Omit<DeployJson, 'items'> & { items: I[] } = {
    id: row.id,
    environment: row.environment,
    version: row.version,
    notes: row.notes,
    created_at: row.created_at,
    user: presentUser(user, viewerId),
    items,
    rollback: row.rollback === 1,
    reverted: row.reverted_at !== null,
  };
  if (omitted.length > 0) json.omitted_numbers = omitted;
  if (row.reverted_at !== null) {
    json.reverted_at = row.reverted_at;
    if (row.reverted_by !== null) json.reverted_by = row.reverted_by;
  }
  return json;
}

/**
 * The rows of the leading items of a deploy (heads, in order) that may fit in an answer of
 * `budget` bytes, by what their text takes at least, and the numbers of the others; all of them
 * without a budget. Only those rows are read: the text of the items that cannot fit (tens of MB
 * for a deploy of 500 long descriptions) never is. An item deleted since its head was read is left out.
 */
async function rowsThatMayFit(
  db: Db,
  heads: ItemHead[],
  budget: number | undefined,
): Promise<{ shown: ItemRow[]; omitted: number[] }> {
  const count =
    budget === undefined
      ? heads.length
      : leadingWithin(
          heads.map((h) => h.text_bytes),
          budget,
        );
  const rows = new Map(
    (
      await findItemsByIds(
        db,
        heads.slice(0, count).map((h) => h.id),
      )
    ).map((row) => [row.id, row]),
  );
  return {
    shown: heads.slice(0, count).flatMap((h) => rows.get(h.id) ?? []),
    omitted: heads.slice(count).map((h) => h.number),
  };
}

/** What of a page of deploys may fit: the deploys, the ids of the items each shows, the numbers each leaves out. */
interface DeploysThatMayFit {
  deploys: DeployRow[];
  /** With a budget, the ids of the items each deploy shows: the others' text is not read. */
  shownOf?: Map<number, Set<number>>;
  omitted: Map<number, number[]>;
}

/**
 * With a `budget`, the deploys from the first that cannot fit whole after another are left out,
 * and so are the items of a first deploy that cannot fit, by what their text takes at least.
 * Sizes first: the text of items that cannot fit (a deploy of a thousand long descriptions holds
 * tens of MB) is never read.
 */
async function deploysThatMayFit(
  db: Db,
  allDeploys: DeployRow[],
  budget: number | undefined,
): Promise<DeploysThatMayFit> {
  const omitted = new Map<number, number[]>();
  if (budget === undefined) return { deploys: allDeploys, omitted };
  const sizes = await itemSizesOfDeploys(
    db,
    allDeploys.map((d) => d.id),
  );
  const shownOf = new Map<number, Set<number>>();
  let room = budget;
  for (const [k, deploy] of allDeploys.entries()) {
    const items = sizes.get(deploy.id)!;
    const shown = leadingWithin(
      items.map((item) => item.least),
      room,
    );
    if (shown < items.length && k > 0) return { deploys: allDeploys.slice(0, k), shownOf, omitted };
    omitted.set(
      deploy.id,
      items.slice(shown).map((item) => item.number),
    );
    shownOf.set(deploy.id, new Set(items.slice(0, shown).map((item) => item.id)));
    room -= items.slice(0, shown).reduce((bytes, item) => bytes + item.least, 0);
  }
  return { deploys: allDeploys, shownOf, omitted };
}

/**
 * Deploys as JSON, each with its items (embedded: a short deployed_to) in their current state.
 * With a `budget` (the bytes an answer may take), what cannot fit is not presented: the deploys
 * from the first that cannot fit whole after another, and the items of a first deploy that cannot
 * fit, whose numbers it lists in `omitted_numbers` (deploysWithin then fits what is left exactly).
 */
export async function presentDeploys(db: Db, o: DeployPresenting & { deploys: DeployRow[] }): Promise<DeployJson[]> {
  const { scope, urls } = o;
  const { deploys, shownOf, omitted } = await deploysThatMayFit(db, o.deploys, o.budget);
  const itemsByDeploy = await itemsOfDeploys(
    db,
    deploys.map((d) => d.id),
    shownOf && [...new Set([...shownOf.values()].flatMap((ids) => [...ids]))],
  );
  // An item shown by one deploy of the page and left out of another is read once, shown by one.
  if (shownOf)
    for (const [id, rows] of itemsByDeploy)
      itemsByDeploy.set(
        id,
        rows.filter((row) => shownOf.get(id)!.has(row.id)),
      );
  const allItems = [...new Map([...itemsByDeploy.values()].flat().map((i) => [i.id, i])).values()];
  if (allItems.length > BIG_PAGE) await nextTurn();
  const options = { product: scope.product, rows: allItems, urls, viewerId: scope.user.id, embedded: true };
  const rendered = new Map((await presentItems(db, options)).map((json, i) => [allItems[i].id, json]));
  const users = await findProfiles(
    db,
    deploys.map((d) => d.user_id),
  );
  const json = deploys.map((d) =>
    presentDeploy({
      row: d,
      user: users.get(d.user_id)!,
      viewerId: scope.user.id,
      items: itemsByDeploy.get(d.id)!.map((i) => rendered.get(i.id)!),
      omitted: omitted.get(d.id),
    }),
  );
  // Serialising a page of a thousand items is a step of its own (see nextTurn).
  if (allItems.length > BIG_PAGE) await nextTurn();
  return json;
}

/**
 * A deploy just recorded, as deploys.json renders it to `viewerId` (the caller, or nobody in
 * particular): its items' heads and its deployer (the caller) are in hand. With a `budget`, the
 * items that cannot fit in an answer of that many bytes are left out (see presentDeploys).
 */
export async function presentRecorded(
  db: Db,
  o: DeployPresenting & { deploy: DeployRow; items: ItemHead[]; viewerId: number },
): Promise<DeployJson> {
  const { scope, urls, viewerId } = o;
  // Just after the commit of a large deploy, itself a long step (SQLite writes every page it changed).
  if (o.items.length > BIG_PAGE) await nextTurn();
  const { shown, omitted } = await rowsThatMayFit(db, o.items, o.budget);
  const json = presentDeploy({
    row: o.deploy,
    user: scope.user,
    viewerId,
    items: await presentItems(db, { product: scope.product, rows: shown, urls, viewerId, embedded: true }),
    omitted,
  });
  if (shown.length > BIG_PAGE) await nextTurn();
  return json;
}

/**
 * The receipt of a deploy recorded now or earlier (an Idempotency-Key repeat): as its row keeps it,
 * without the items that cannot fit in an answer of `budget` bytes.
 */
export async function presentReceipt(
  db: Db,
  o: DeployPresenting & { deploy: DeployRow; items: ItemHead[] | undefined },
): Promise<DeployReceiptJson> {
  const { deploy, items } = o;
  // Just recorded, its items are in hand; a repeat reads them again.
  const json = items
    ? await presentRecorded(db, { ...o, items, viewerId: o.scope.user.id })
    : (await presentDeploys(db, { ...o, deploys: [deploy] }))[0];
  return {
    ...json,
    unknown_numbers: JSON.parse(deploy.unknown_numbers) as number[],
    emailed: deploy.emailed,
    blocked: JSON.parse(deploy.blocked_items) as DeployReceiptJson['blocked'],
    dry_run: false,
  };
}

/** What a dry run shows of its plan (the service's DeployPlan; named here, so the service can use this module). */
interface PlannedDeploy {
  items: ItemHead[];
  unknownNumbers: number[];
  blocked: DeployReceiptJson['blocked'];
  recipients: { user: UserRow; items: ItemHead[] }[];
}

/**
 * The receipt of a dry run: the deploy as it would be recorded now (no id), and whom it would mail
 * about what; without the items that cannot fit in an answer of `budget` bytes.
 */
export async function presentDryRun(
  db: Db,
  o: DeployPresenting & { input: DeployInput; plan: PlannedDeploy },
): Promise<DeployReceiptJson> {
  const { scope, urls, input, plan } = o;
  const { shown, omitted } = await rowsThatMayFit(db, plan.items, o.budget);
  const items = await presentItems(db, {
    product: scope.product,
    rows: shown,
    urls,
    viewerId: scope.user.id,
    embedded: true,
  });
  if (shown.length > BIG_PAGE) await nextTurn();
  return {
    id: null,
    environment: input.environment,
    version: input.version,
    notes: input.notes,
    created_at: nowTimestamp(),
    user: presentUser(scope.user, scope.user.id),
    items,
    rollback: input.rollback,
    reverted: false,
    unknown_numbers: plan.unknownNumbers,
    emailed: plan.recipients.length,
    blocked: plan.blocked,
    dry_run: true,
    ...(omitted.length > 0 ? { omitted_numbers: omitted } : {}),
    recipients: plan.recipients
      .map(({ user, items }) => ({
        email: user.email,
        first_name: user.first_name,
        last_name: user.last_name,
        numbers: items.map((i) => i.number),
      }))
      .sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0)),
  };
}

/**
 * Serializes deploys (or receipts) within an answer's size bound, each as its own schema does,
 * with its items serialized one by one by the Item schema.
 */
/** What deployWithin needs of a deploy or a receipt. */
type WithItems = Pick<DeployJson, 'items' | 'omitted_numbers'>;

export interface DeploySerializers<D extends WithItems> {
  deploy: Serialize<D>;
  item: Serialize<ItemJson>;
}

/**
 * One deploy as JSON in at most `room` bytes: whole, or, when `cut` allows, with the leading items
 * that fit and the numbers of the others in `omitted_numbers` (a deploy of a thousand large items
 * weighs more than any answer may); undefined when it is not whole and may not be cut.
 */
export async function deployWithin<D extends WithItems>(
  deploy: D,
  serialize: DeploySerializers<D>,
  room: number,
  cut: boolean,
): Promise<string | undefined> {
  const items = new SerializedEntries(deploy.items as ItemJson[], serialize.item);
  // Left out already by the presenter: what surely could not fit.
  const omitted = deploy.omitted_numbers ?? [];
  if (omitted.length === 0) {
    const shell = serialize.deploy({ ...deploy, items: [] });
    const whole = await items.fit(room - Buffer.byteLength(shell) + 2, false);
    if (whole.pieces.length === deploy.items.length) return fillArray(shell, 'items', whole.pieces);
  }
  if (!cut) return undefined;
  // The numbers left out take room too: room is kept for all of them, then the items that fit go in.
  const numbers = [...(deploy.items as ItemJson[]).map((item) => item.number), ...omitted];
  const widest = serialize.deploy({ ...deploy, items: [], omitted_numbers: numbers });
  const { pieces } = await items.fit(room - Buffer.byteLength(widest) + 2, false);
  return fillArray(
    serialize.deploy({ ...deploy, items: [], omitted_numbers: numbers.slice(pieces.length) }),
    'items',
    pieces,
  );
}
