import { statusName, STATUS_NAMES } from '../items/index.js';
import type { productOverviewRows } from './repository.js';

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
    if (!p) products.set(row.id, (p = { id: row.id, name: row.name, archived: row.archived === 1, admin: row.admin === 1, counts: [], byStatus: new Map() }));
    if (row.status !== null) p.byStatus.set(statusName(row.status), Number(row.n));
  }
  return [...products.values()].map(({ byStatus, ...p }) => ({ ...p, counts: STATUS_NAMES.map((status) => ({ status, count: byStatus.get(status) ?? 0 })) }));
}
