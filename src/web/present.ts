import type { ItemRow } from '../db/schema.js';
import type { ItemDeploy } from '../deploys/index.js';
import { statusName, STATUS_NAMES, type Deployment } from '../items/index.js';
import type { DeploymentWithPeople, Named, productOverviewRows } from './repository.js';
import { personName } from './views/parts.js';

export interface ProductOverview {
  id: number;
  name: string;
  archived: boolean;
  admin: boolean;
  /** Every status in workflow order, zero counts included. */
  counts: { status: string; count: number }[];
}

/** The rows of productOverviewRows, one product each. */
export function presentProductOverviews(rows: Awaited<ReturnType<typeof productOverviewRows>>): ProductOverview[] {
  const products = new Map<number, ProductOverview & { byStatus: Map<string, number> }>();
  for (const row of rows) {
    let p = products.get(row.id);
    if (!p) {
      p = {
        id: row.id,
        name: row.name,
        archived: row.archived === 1,
        admin: row.admin === 1,
        counts: [],
        byStatus: new Map(),
      };
      products.set(row.id, p);
    }
    if (row.status !== null) p.byStatus.set(statusName(row.status), Number(row.n));
  }
  return [...products.values()].map(({ byStatus, ...p }) => ({
    ...p,
    counts: STATUS_NAMES.map((status) => ({ status, count: byStatus.get(status) ?? 0 })),
  }));
}

/** An environment on an item's timeline: the item's latest deploy there, and the rollback that took it out. */
export interface EnvironmentEntry {
  environment: string;
  version: string;
  deployId: number;
  deployedAt: string;
  by: string;
  /** A rollback left the environment without the item: when, which rollback, and who made it. */
  reverted?: { at: string; rollbackId: number | null; by: string };
}

/** The item's `deployed_to` entries (latest first) with the people who made their deploys and rollbacks. */
export function presentEnvironments({ deployments }: { deployments: DeploymentWithPeople[] }): EnvironmentEntry[] {
  const nameOf = (person: Named | null) => (person ? personName(person) : '');
  return deployments.map((d) => ({
    environment: d.environment,
    version: d.version,
    deployId: d.deploy_id,
    deployedAt: d.deployed_at,
    by: nameOf(d.deployer),
    reverted:
      d.reverted_at === null ? undefined : { at: d.reverted_at, rollbackId: d.reverted_by, by: nameOf(d.reverter) },
  }));
}

/** A deploy in an item's history. */
export interface HistoryEntry {
  deployId: number;
  environment: string;
  version: string;
  at: string;
  by: string;
  /** A rollback: the version the item's entry went back to, or null when the item left the environment. */
  rollback?: { restoredVersion: string | null };
  /** Undone by a later rollback: when, and that rollback's id. */
  reverted?: { at: string; rollbackId: number | null };
}

export function presentHistory(deploys: ItemDeploy[]): HistoryEntry[] {
  return deploys.map(({ deploy: d, by }) => ({
    deployId: d.id,
    environment: d.environment,
    version: d.version,
    at: d.created_at,
    by: personName(by),
    rollback:
      d.rollback === 1 ? { restoredVersion: d.restored_deploy_id === null ? null : d.restored_version } : undefined,
    reverted: d.reverted_at === null ? undefined : { at: d.reverted_at, rollbackId: d.reverted_by },
  }));
}

/** What one environment runs of an item, as a cell of the matrix shows it (null: never deployed there). */
export interface MatrixCell {
  version: string;
  deployId: number;
  deployedAt: string;
  /** A rollback took the item out of the environment. */
  reverted: boolean;
}

export interface MatrixRow {
  number: number;
  title: string;
  type: string;
  status: string;
  /** One per environment, in the order of the matrix's columns. */
  cells: (MatrixCell | null)[];
}

/** A page of items as rows of the matrix, with their latest deploy to each of the `environments`. */
export function presentMatrixRows({
  items,
  environments,
  deployments,
}: {
  items: ItemRow[];
  environments: string[];
  deployments: Map<number, Map<string, Deployment>>;
}): MatrixRow[] {
  return items.map((item) => {
    const mine = deployments.get(item.id);
    return {
      number: item.number,
      title: item.title,
      type: item.type,
      status: statusName(item.status),
      cells: environments.map((environment) => {
        const d = mine?.get(environment);
        return d
          ? { version: d.version, deployId: d.deploy_id, deployedAt: d.deployed_at, reverted: d.reverted_at !== null }
          : null;
      }),
    };
  });
}

/** One entry of an item's timeline: what happened to the item, and when. */
export type TimelineEntry =
  | { kind: 'created'; at: string; by: string }
  | { kind: 'comment'; at: string; id: number; by: string; byId: number; html: string }
  | { kind: 'deploy'; at: string; deploy: HistoryEntry }
  | { kind: 'change'; at: string; by: string; label: string };

/**
 * Entries of one kind, the newest first, as a source of the timeline gives them: a window of its
 * entries from where the page starts, `more` when it has older ones past the window. An entry
 * `hidden` is one the source passes over (it is shown by another source), still counted as read.
 */
export interface TimelineSource {
  kind: string;
  entries: (TimelineEntry & { hidden?: boolean })[];
  more: boolean;
}

/**
 * An item's timeline from entries of several sources (comments, deploys, changes, its creation;
 * each the newest first and paged from its newest end): the newest `limit` shown entries of them
 * all, oldest first, and how many of each source that read, which is where the next older page of
 * each starts. Nothing older than the oldest entry of a window with more behind it is taken (what
 * lies behind it may be newer than that). Of entries at the same time, a later source's counts as
 * the newer (a comment made in the second the item was created comes after its creation).
 */
export function mergeTimeline(
  sources: TimelineSource[],
  limit: number,
): { entries: TimelineEntry[]; taken: Record<string, number> } {
  const all = sources.flatMap((s, rank) =>
    s.entries.map((entry, position) => ({ entry, kind: s.kind, rank, position, time: Date.parse(entry.at) })),
  );
  const horizon = Math.max(
    -Infinity,
    ...sources.flatMap((s) => (s.more && s.entries.length ? [Date.parse(s.entries.at(-1)!.at)] : [])),
  );
  const eligible = all.filter((e) => e.time >= horizon);
  eligible.sort((a, b) => b.time - a.time || b.rank - a.rank || a.position - b.position);
  const taken = Object.fromEntries(sources.map((s) => [s.kind, 0]));
  const shown: TimelineEntry[] = [];
  for (const e of eligible) {
    if (shown.length === limit) break;
    taken[e.kind] += 1;
    if (!e.entry.hidden) shown.push(e.entry);
  }
  return { entries: shown.reverse(), taken };
}
