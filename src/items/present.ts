import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { ItemRow, ProductRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { presentProductSummary, ProductSummarySchema } from '../products/index.js';
import type { Urls } from '../scope.js';
import { nextTurn } from '../turns.js';
import { presentUser, UserSchema } from '../users/index.js';
import {
  CLOSE_REASONS,
  DEPLOYED_TO_SHOWN,
  DEPLOYED_TO_SHOWN_EMBEDDED,
  ITEM_TYPES,
  SCORES,
  STATUSES,
  statusName,
} from './model.js';
import { loadRelations, type Deployment, type ItemRelations, type KnownRelations } from './repository.js';
import { itemShortUrl } from './urls.js';

// Descriptions and enums are for the API's description; serialising ignores them.
const Timestamp = Type.String();
const oneOf = (values: readonly string[], description?: string) =>
  Type.String({ enum: [...values], ...(description ? { description } : {}) });

/**
 * One entry of `deployed_to`: the item's latest deploy to one environment. A rollback that left
 * the environment without the item keeps the entry, `reverted`, with when and by which deploy.
 */
export const DeploymentSchema = Type.Object(
  {
    environment: Type.String(),
    version: Type.String(),
    deployed_at: Timestamp,
    deploy_id: Type.Integer(),
    reverted: Type.Boolean({ description: 'A rollback left the environment without the item.' }),
    reverted_at: Type.Optional(Timestamp),
    reverted_by: Type.Optional(Type.Integer({ description: "The rollback's id." })),
  },
  { $id: 'Deployment', description: 'What one environment runs of an item: its latest deploy there.' },
);
type DeploymentJson = Static<typeof DeploymentSchema>;

/** A `deployed_to` entry as JSON, the same on items and in deployed_to.json. */
export function presentDeployment(d: Deployment): DeploymentJson {
  const entry: DeploymentJson = {
    environment: d.environment,
    version: d.version,
    deployed_at: d.deployed_at,
    deploy_id: d.deploy_id,
    reverted: d.reverted_at !== null,
  };
  if (d.reverted_at !== null) {
    entry.reverted_at = d.reverted_at;
    if (d.reverted_by !== null) entry.reverted_by = d.reverted_by;
  }
  return entry;
}

const itemFields = {
  number: Type.Integer({ description: 'Within the product; never reused.' }),
  type: oneOf(ITEM_TYPES, 'Set at creation, never changed.'),
  status: oneOf(STATUSES),
  title: Type.String({ description: "A story's is built from who, what and why." }),
  who: Type.Optional(Type.String({ description: 'Stories only.' })),
  what: Type.Optional(Type.String({ description: 'Stories only.' })),
  why: Type.Optional(Type.String({ description: 'Stories only.' })),
  description: Type.String({ description: 'Markdown; empty when none was given.' }),
  score: oneOf(SCORES),
  tags: Type.Array(Type.String()),
  archived: Type.Boolean(),
  product: ref(ProductSummarySchema),
  created_by: ref(UserSchema),
  assigned_to: Type.Union([ref(UserSchema), Type.Null()]),
  created_at: Timestamp,
  last_modified: Type.String({ description: "When one of the item's own fields last changed." }),
  last_activity: Type.String({ description: 'The latest of last_modified, its deploys and new follows.' }),
  short_url: Type.String({ description: 'An absolute URL that redirects to the item.' }),
  sort: Type.Integer({ description: 'Position within the status, smaller first.' }),
  close_reason: Type.Optional(oneOf(CLOSE_REASONS, 'Only while completed or accepted.')),
  progress: Type.Object(
    {
      started_at: Type.Optional(Timestamp),
      closed_at: Type.Optional(Timestamp),
      accepted_at: Type.Optional(Timestamp),
    },
    { description: 'Each moment once it has happened.' },
  ),
  email: Type.Object({ files: Type.String(), discussion: Type.String() }),
  counts: Type.Object(
    {
      blockers: Type.Integer({ description: 'Items that block this one (blocks not marked unblocked).' }),
      blocking: Type.Integer({ description: 'Items this one blocks (blocks not marked unblocked).' }),
      comments: Type.Integer(),
      favorites: Type.Integer(),
    },
    { description: 'The conversation around the item (docs/INTERFACE.md §11).' },
  ),
  deployed_to: Type.Array(ref(DeploymentSchema), {
    description:
      `The latest deploy to each environment, newest first: at most ${DEPLOYED_TO_SHOWN} ` +
      `(${DEPLOYED_TO_SHOWN_EMBEDDED} on an embedded item).`,
  }),
  deployed_to_count: Type.Integer({ description: 'How many environments the item went to in all.' }),
};

/** The parent as embedded in a sub-item: the item without its own parent or children. */
export const ParentItemSchema = Type.Object(itemFields, {
  $id: 'ParentItem',
  description: 'The parent story of a sub-item: an Item without a parent.',
});
export const ItemSchema: TObject = Type.Object(
  { ...itemFields, parent: Type.Optional(ref(ParentItemSchema, { description: 'On sub-items only.' })) },
  { $id: 'Item', description: 'An item: every endpoint returns this complete object (docs/INTERFACE.md §4.3).' },
);
export type ItemJson = Static<typeof ParentItemSchema> & { parent?: Static<typeof ParentItemSchema> };

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const ITEM_SCHEMAS = [DeploymentSchema, ParentItemSchema, ItemSchema];

/** The shared fields, as the caller (`viewerId`) sees them; `deployed_to` cut to the latest `shown` environments. */
function presentOwnFields(row: ItemRow, rel: ItemRelations, urls: Urls, viewerId: number, shown: number): ItemJson {
  const deployments = rel.deployments.get(row.id);
  const status = statusName(row.status);
  const item: ItemJson = {
    number: row.number,
    type: row.type,
    status,
    title: row.title,
    description: row.description,
    score: row.score,
    tags: rel.tags.get(row.id) ?? [],
    archived: row.archived === 1,
    product: presentProductSummary(rel.product),
    created_by: presentUser(rel.users.get(row.created_by_id)!, viewerId),
    assigned_to: row.assigned_to_id ? presentUser(rel.users.get(row.assigned_to_id)!, viewerId) : null,
    created_at: row.created_at,
    last_modified: row.last_modified,
    last_activity: row.last_activity,
    short_url: itemShortUrl(urls.publicUrl, row),
    sort: Number(row.sort),
    progress: {},
    email: { files: `files-${row.id}@${urls.mailDomain}`, discussion: `discussion-${row.id}@${urls.mailDomain}` },
    counts: {
      blockers: row.blockers_count,
      blocking: row.blocking_count,
      comments: row.comments_count,
      favorites: row.favorites_count,
    },
    deployed_to: deployments === undefined ? [] : deployments.slice(0, shown).map(presentDeployment),
    deployed_to_count: rel.deploymentCounts.get(row.id) ?? 0,
  };
  if (row.type === 'story') {
    item.who = row.who ?? '';
    item.what = row.what ?? '';
    item.why = row.why ?? '';
  }
  if (row.close_reason && (status === 'completed' || status === 'accepted')) item.close_reason = row.close_reason;
  if (row.started_at) item.progress.started_at = row.started_at;
  if (row.closed_at) item.progress.closed_at = row.closed_at;
  if (row.accepted_at) item.progress.accepted_at = row.accepted_at;
  return item;
}

/**
 * An item row and its relations -> the one item shape of docs/INTERFACE.md §4.3, as the caller
 * (`viewerId`) sees the users it embeds (see presentUser), showing the latest `shown`
 * environments in `deployed_to` (as many as `rel` holds at most); its parent, embedded, shows fewer.
 */
export function presentItem(row: ItemRow, rel: ItemRelations, urls: Urls, viewerId: number, shown: number): ItemJson {
  const item = presentOwnFields(row, rel, urls, viewerId, shown);
  if (row.parent_id !== null) {
    const parent = rel.parents.get(row.parent_id);
    if (parent)
      item.parent = presentOwnFields(parent, rel, urls, viewerId, Math.min(shown, DEPLOYED_TO_SHOWN_EMBEDDED));
  }
  return item;
}

/** Pages of more items than this step aside for other requests between their phases. */
export const BIG_PAGE = 100;

/**
 * Rows as item JSON for the caller (`viewerId`), loading what they embed in a few queries
 * for the whole list. Items `embedded` in another object (a deploy's items) show fewer
 * environments in `deployed_to`. Deployments the caller has read already are passed as `known`.
 */
export async function presentItems(
  db: Db,
  {
    product,
    rows,
    urls,
    viewerId,
    embedded = false,
    known,
  }: {
    product: ProductRow;
    rows: ItemRow[];
    urls: Urls;
    viewerId: number;
    embedded?: boolean;
    known?: KnownRelations;
  },
): Promise<ItemJson[]> {
  const shown = embedded ? DEPLOYED_TO_SHOWN_EMBEDDED : DEPLOYED_TO_SHOWN;
  const rel = await loadRelations(db, product, rows, shown, known);
  // Big pages let other requests in between loading and presenting (see nextTurn).
  if (rows.length > BIG_PAGE) await nextTurn();
  return rows.map((row) => presentItem(row, rel, urls, viewerId, shown));
}
