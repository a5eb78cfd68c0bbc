import { Type, type Static, type TObject } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { ItemRow, ProductRow } from '../db/schema.js';
import { presentProductSummary, ProductSummarySchema } from '../products/index.js';
import type { Urls } from '../scope.js';
import { nextTurn } from '../turns.js';
import { presentUser, UserSchema } from '../users/index.js';
import { DEPLOYED_TO_SHOWN, DEPLOYED_TO_SHOWN_EMBEDDED, statusName } from './model.js';
import { loadRelations, type Deployment, type ItemRelations } from './repository.js';
import { itemShortUrl } from './urls.js';

const Timestamp = Type.String();

/**
 * One entry of `deployed_to`: the item's latest deploy to one environment. A rollback that left
 * the environment without the item keeps the entry, `reverted`, with when and by which deploy.
 */
const DeploymentSchema = Type.Object({
  environment: Type.String(),
  version: Type.String(),
  deployed_at: Timestamp,
  deploy_id: Type.Integer(),
  reverted: Type.Boolean(),
  reverted_at: Type.Optional(Timestamp),
  reverted_by: Type.Optional(Type.Integer()),
});
export const DeploymentListSchema = Type.Array(DeploymentSchema);
type DeploymentJson = Static<typeof DeploymentSchema>;

/** A `deployed_to` entry as JSON, the same on items and in deployed_to.json. */
export function presentDeployment(d: Deployment): DeploymentJson {
  const entry: DeploymentJson = { environment: d.environment, version: d.version, deployed_at: d.deployed_at, deploy_id: d.deploy_id, reverted: d.reverted_at !== null };
  if (d.reverted_at !== null) {
    entry.reverted_at = d.reverted_at;
    if (d.reverted_by !== null) entry.reverted_by = d.reverted_by;
  }
  return entry;
}

const itemFields = {
  number: Type.Integer(),
  type: Type.String(),
  status: Type.String(),
  title: Type.String(),
  who: Type.Optional(Type.String()),
  what: Type.Optional(Type.String()),
  why: Type.Optional(Type.String()),
  description: Type.String(),
  score: Type.String(),
  tags: Type.Array(Type.String()),
  archived: Type.Boolean(),
  product: ProductSummarySchema,
  created_by: UserSchema,
  assigned_to: Type.Union([UserSchema, Type.Null()]),
  created_at: Timestamp,
  last_modified: Timestamp,
  last_activity: Timestamp,
  short_url: Type.String(),
  sort: Type.Integer(),
  close_reason: Type.Optional(Type.String()),
  progress: Type.Object({
    started_at: Type.Optional(Timestamp),
    closed_at: Type.Optional(Timestamp),
    accepted_at: Type.Optional(Timestamp),
  }),
  email: Type.Object({ files: Type.String(), discussion: Type.String() }),
  counts: Type.Object({
    blockers: Type.Integer(),
    blocking: Type.Integer(),
    comments: Type.Integer(),
    favorites: Type.Integer(),
  }),
  deployed_to: Type.Array(DeploymentSchema),
  deployed_to_count: Type.Integer(),
};

/** The parent as embedded in a sub-item: the item without its own parent or children. */
export const ParentItemSchema = Type.Object(itemFields);
export const ItemSchema: TObject = Type.Object({ ...itemFields, parent: Type.Optional(ParentItemSchema) });
export const ItemListSchema = Type.Array(ItemSchema);
export type ItemJson = Static<typeof ParentItemSchema> & { parent?: Static<typeof ParentItemSchema> };

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
    counts: { blockers: 0, blocking: 0, comments: 0, favorites: 0 },
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
    if (parent) item.parent = presentOwnFields(parent, rel, urls, viewerId, Math.min(shown, DEPLOYED_TO_SHOWN_EMBEDDED));
  }
  return item;
}

/** Pages of more items than this step aside for other requests between their phases. */
export const BIG_PAGE = 100;

/**
 * Rows as item JSON for the caller (`viewerId`), loading what they embed in a few queries
 * for the whole list. Items `embedded` in another object (a deploy's items) show fewer
 * environments in `deployed_to`.
 */
export async function presentItems(
  db: Db,
  product: ProductRow,
  rows: ItemRow[],
  urls: Urls,
  viewerId: number,
  embedded = false,
): Promise<ItemJson[]> {
  const shown = embedded ? DEPLOYED_TO_SHOWN_EMBEDDED : DEPLOYED_TO_SHOWN;
  const rel = await loadRelations(db, product, rows, shown);
  // Big pages let other requests in between loading and presenting (see nextTurn).
  if (rows.length > BIG_PAGE) await nextTurn();
  return rows.map((row) => presentItem(row, rel, urls, viewerId, shown));
}
