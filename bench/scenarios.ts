import { ORDERS } from '../src/items/model.js';
import type { Scenario } from './load.js';
import { CHATTY_ITEM, type DatasetInfo } from './seed.js';

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

/** Two words of the seeded titles, as people search for them (each scenario draws among these). */
const TWO_WORDS = ['login form', 'billing page', 'deploy hook', 'csv export', 'webhook retries', 'password reset'];
/** What a person types into the search box, one request per letter. */
export const TYPED = 'password';

/**
 * Searches: a two-word query ranked by relevance, and a query of field terms only,
 * which the items' own indexes answer without the text index; both compared with the baseline.
 */
export function searchScenarios(): Scenario[] {
  const search = (q: string) => `/api/items/search.json?q=${encodeURIComponent(q)}`;
  const twoWords: Scenario = {
    name: 'search: two words',
    kind: 'list',
    method: 'GET',
    random: true,
    next: () => ({ path: search(pick(TWO_WORDS)) }),
  };
  return [
    twoWords,
    fixed('search: fields only (tag:api status:backlog)', search('tag:api status:backlog')),
    // What a search costs when its answer is not kept (its window of matches still is): the
    // caller's products, the page's stamps, the items' kept JSON.
    {
      ...twoWords,
      name: 'search: two words, answered afresh (Cache-Control: no-cache)',
      extraHeaders: { 'cache-control': 'no-cache' },
    },
  ];
}

/** The requests of typing TYPED letter by letter: `p`, `pa`, ... `password`. */
export function typingPaths(): string[] {
  return [...TYPED].map((_, i) => `/api/items/search.json?q=${encodeURIComponent(TYPED.slice(0, i + 1))}`);
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
    // The item with 10,000 comments reads as fast as any other: its counts are columns of its row.
    {
      name: 'fetch item with 10,000 comments',
      kind: 'read',
      method: 'GET',
      next: () => ({ path: `${base}/items/${CHATTY_ITEM}.json` }),
    },
    {
      name: 'comments: first page of 10,000',
      kind: 'read',
      method: 'GET',
      next: () => ({ path: `${base}/items/${CHATTY_ITEM}/comments.json` }),
    },
    {
      name: 'comments: last page of 10,000',
      kind: 'read',
      method: 'GET',
      next: () => ({ path: `${base}/items/${CHATTY_ITEM}/comments.json?offset=9900` }),
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

/** The share of each kind of request in the read mix: an item, a page of a list, one member's open work. */
const MIX = { fetch: 0.4, list: 0.4 } as const;
/** The mix's lists: one of the 8 orders, at one of the first 51 pages of 20 (offsets 0 to 1,000). */
const MIX_PAGES = 51;
const PAGE = 20;

/** The three kinds of request of the read mix, each drawn at random. */
export function mixRequests(data: ScenarioData) {
  const base = `/api/products/${data.info.productId}`;
  const userIds = data.info.users.map((u) => u.id);
  const below = (n: number) => Math.floor(Math.random() * n);
  return {
    fetch: () => `${base}/items/${1 + below(data.info.size)}.json`,
    list: () => `${base}/items.json?order_by=${pick(ORDERS)}&offset=${PAGE * below(MIX_PAGES)}`,
    openWork: () => `${base}/items.json?assigned_to=${pick(userIds)}&status=backlog,in-progress`,
  };
}

/** mixRequests in wrk's Lua, drawing per request as they do. */
function mixLua(data: ScenarioData): string {
  const base = `/api/products/${data.info.productId}`;
  const list = (values: readonly (string | number)[]) => values.map((v) => JSON.stringify(v)).join(', ');
  return `-- Seeded from the clock, so that the warm-up and the measured run draw differently.
math.randomseed(${Math.floor(Math.random() * 1e6)} + os.time())
local orders = { ${list(ORDERS)} }
local users = { ${list(data.info.users.map((u) => u.id))} }
function next_request()
  local r = math.random()
  if r < ${MIX.fetch} then
    return "${base}/items/" .. math.random(${data.info.size}) .. ".json", nil
  elseif r < ${MIX.fetch + MIX.list} then
    return "${base}/items.json?order_by=" .. orders[math.random(#orders)] ..
      "&offset=" .. ${PAGE} * math.random(0, ${MIX_PAGES - 1}), nil
  end
  return "${base}/items.json?assigned_to=" .. users[math.random(#users)] .. "&status=backlog,in-progress", nil
end
`;
}

/**
 * The reads of a team at work, at saturation: 40% fetch of a random item, 40% a page of a list
 * (MIX_PAGES pages in each of the 8 orders), 20% one member's open work. wrk draws each request.
 */
export function readMixScenario(data: ScenarioData): Scenario {
  const requests = mixRequests(data);
  return {
    name: 'mix: 40% fetch, 40% list pages, 20% open work',
    kind: 'read',
    method: 'GET',
    random: true,
    lua: mixLua(data),
    next: () => {
      const r = Math.random();
      if (r < MIX.fetch) return { path: requests.fetch() };
      return { path: r < MIX.fetch + MIX.list ? requests.list() : requests.openWork() };
    },
  };
}

/** What is written beside the read mix, `rate` a second: the description of a random item, a new text each time. */
export function descriptionWriter(data: ScenarioData, rate: number): Scenario {
  const base = `/api/products/${data.info.productId}`;
  return {
    name: `update item (description) at ${rate}/s beside the mix`,
    kind: 'write',
    method: 'POST',
    next: () => ({
      path: `${base}/items/${1 + Math.floor(Math.random() * data.info.size)}.json`,
      body: form({ description: 'Rewritten while others read, revision {n}.' }),
    }),
  };
}
