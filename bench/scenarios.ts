import { ORDERS } from '../src/items/model.js';
import type { Scenario } from './load.js';
import type { DatasetInfo } from './seed.js';

/** What scenarios draw their targets from; sampled from the database before the server runs. */
export interface ScenarioData {
  info: DatasetInfo;
  backlog: number[];
  titled: number[];
}

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)];
/** A form body; `{n}` (see Scenario.next) is kept as it is for the generator to fill in. */
const form = (fields: Record<string, string | number>): string =>
  new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)])).toString().replaceAll('%7Bn%7D', '{n}');

const fixed = (name: string, path: string): Scenario => ({ name, kind: 'list', method: 'GET', next: () => ({ path }) });

/**
 * The deep page lies as far into the backlog at every size: offset 10,000 at 1M items (a tenth of
 * its ~100,000), proportionally less at 10k, where offset 10,000 would be past the end.
 */
export function deepOffset(size: number): number {
  return Math.round(size / 100);
}

/** Every list of items the issue asks for; each is compared with the baseline. */
export function listScenarios(data: ScenarioData): Scenario[] {
  const items = `/api/products/${data.info.productId}/items.json`;
  return [
    fixed('list: no parameters', items),
    // The same list rendered for every request: what a list costs when its product has just changed.
    {
      ...fixed('list: no parameters, rendered afresh (Cache-Control: no-cache)', items),
      extraHeaders: { 'cache-control': 'no-cache' },
    },
    ...ORDERS.map((order) => fixed(`list: order_by=${order}`, `${items}?order_by=${order}`)),
    fixed(
      'list: status+type+tags+assigned_to',
      `${items}?status=backlog,in-progress&type=task,defect&tags=api&assigned_to=3`,
    ),
    fixed(
      `list: deep page (backlog, offset ${deepOffset(data.info.size)})`,
      `${items}?status=backlog&offset=${deepOffset(data.info.size)}`,
    ),
    fixed('list: children=true', `${items}?children=true`),
    // The seed deploys closed items only, to staging and production alternately: the first list
    // asks for open items deployed to production (the seed has none), the second for done work
    // not shipped there.
    fixed('list: deployed_to=production', `${items}?deployed_to=production`),
    fixed(
      'list: status=completed,accepted&not_deployed_to=production',
      `${items}?status=completed,accepted&not_deployed_to=production`,
    ),
  ];
}

/** Reads of single items and of deploys. */
export function readScenarios(data: ScenarioData): Scenario[] {
  const base = `/api/products/${data.info.productId}`;
  const perEnvironment = Math.floor(data.info.deploys / data.info.environments.length);
  return [
    {
      name: 'fetch item',
      kind: 'read',
      method: 'GET',
      random: true,
      next: () => ({ path: `${base}/items/${1 + Math.floor(Math.random() * data.info.size)}.json` }),
    },
    // The default page: the first 20 deploys with their items.
    {
      name: 'list deploys (default page)',
      kind: 'read',
      method: 'GET',
      next: () => ({ path: `${base}/deploys.json` }),
    },
    {
      name: 'list deploys (production, 20 per page)',
      kind: 'read',
      method: 'GET',
      random: true,
      next: () => {
        const offset = Math.floor(Math.random() * (perEnvironment - 20));
        return { path: `${base}/deploys.json?environment=production&limit=20&offset=${offset}` };
      },
    },
  ];
}

/**
 * The web pages a person opens most, signed in with a session cookie: a product's board (the first
 * page of every status column, with the filters and new-item form) and an item's page.
 */
export function pageScenarios(data: ScenarioData, cookie: string): Scenario[] {
  const base = `/app/products/${data.info.productId}`;
  const headers = { cookie, accept: 'text/html' };
  return [
    {
      name: 'page: board (first page of every column)',
      kind: 'page',
      method: 'GET',
      headers,
      next: () => ({ path: `${base}/board` }),
    },
    {
      name: 'page: item',
      kind: 'page',
      method: 'GET',
      random: true,
      headers,
      next: () => ({ path: `${base}/items/${1 + Math.floor(Math.random() * data.info.size)}` }),
    },
  ];
}

/** Item writes; each request changes something, so none is answered from a shortcut. */
export function itemWriteScenarios(data: ScenarioData): Scenario[] {
  const base = `/api/products/${data.info.productId}`;
  const userIds = data.info.users.map((u) => u.id);
  return [
    {
      name: 'create item',
      kind: 'write',
      method: 'POST',
      next: () => ({
        path: `${base}/items.json`,
        body: form({
          type: pick(['task', 'defect', 'test']),
          title: 'Bench item {n}',
          description: 'Created by the load test.',
          score: pick(['S', 'M', 'L']),
          assigned_to: pick(userIds),
          tags: 'api,performance',
        }),
      }),
    },
    {
      name: 'update item (title)',
      kind: 'write',
      method: 'POST',
      next: () => ({ path: `${base}/items/${pick(data.titled)}.json`, body: form({ title: 'Renamed {n}' }) }),
    },
    {
      name: 'resort (inside backlog)',
      kind: 'write',
      method: 'POST',
      next: () => {
        const item = pick(data.backlog);
        let other = pick(data.backlog);
        while (other === item) other = pick(data.backlog);
        return { path: `${base}/items/${item}/resort.json`, body: form({ before: other }) };
      },
    },
  ];
}

/** A deploy of 50 items that all 20 users follow: 19 messages queued per request. */
export function deployScenario(data: ScenarioData): Scenario {
  const base = `/api/products/${data.info.productId}`;
  let counter = 0;
  return {
    name: 'deploy 50 items x 20 followers',
    kind: 'write',
    method: 'POST',
    next: () => {
      const group = data.info.deployGroups[counter++ % data.info.deployGroups.length];
      return {
        path: `${base}/deploys.json`,
        body: form({
          environment: 'production',
          version: 'v9.{n}.0',
          notes: 'Load test deploy.',
          numbers: group.join(','),
        }),
      };
    },
  };
}
