import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';
import { inChunks } from '../db/chunks.js';
import { dialectOf } from '../db/dialect.js';
import { prepared } from '../db/prepared.js';
import { foldedTag, foldTag } from '../db/tags.js';
import { statusCode } from '../items/index.js';
import type { ProductRow } from '../db/schema.js';
import type { ItemStamp } from '../items/index.js';
import type { Condition, PersonRef, Term, Tokens } from './query.js';

/**
 * All SQL of search. The index (migration 2026_11_28_0100_search) is kept by triggers; here it is
 * only read: FTS5 on SQLite, a tsvector under GIN on PostgreSQL, both given the query's tokens
 * only (letters and digits), so no text of the query reaches either syntax unquoted.
 */

/** What a search matches, with everything the caller typed already resolved to values. */
export interface Plan {
  /** The caller's products searched: the only items a search may read. */
  productIds: number[];
  viewerId: number;
  text: Tokens[];
  prefix: boolean;
  excluded: Tokens[];
  terms: Term[];
  /** Ids of the people each person term names, by the term's index in `terms`. */
  people: Map<number, number[]>;
  /** Only these items (the typo-tolerant fallback's matches). */
  ids?: number[];
}

export type SortColumn = 'relevance' | 'last_modified' | 'created_at' | 'number';

const FALSE = sql<boolean>`1 = 0`;

// --- the text index ---------------------------------------------------------------------------

const ftsPhrase = (tokens: Tokens, prefix: boolean) => `"${tokens.join(' ')}"${prefix ? '*' : ''}`;

/** FTS5's expression: every word and phrase, the last word as a prefix when asked. */
function ftsMatch(list: Tokens[], prefix: boolean, joiner: 'AND' | 'OR'): string {
  return list.map((tokens, i) => ftsPhrase(tokens, prefix && i === list.length - 1)).join(` ${joiner} `);
}

const tsPhrase = (tokens: Tokens, prefix: boolean) =>
  `(${tokens.map((t, i) => `'${t}'${prefix && i === tokens.length - 1 ? ':*' : ''}`).join(' <-> ')})`;

/** PostgreSQL's tsquery text, in the `simple` configuration the index is built with. */
function tsMatch(list: Tokens[], prefix: boolean, joiner: '&' | '|'): string {
  return list.map((tokens, i) => tsPhrase(tokens, prefix && i === list.length - 1)).join(` ${joiner} `);
}

/** The match of the text, as a condition on `i.id`, for counts and facets. */
function textCondition(db: Db, plan: Plan): RawBuilder<boolean>[] {
  const pg = dialectOf(db) === 'postgres';
  const where: RawBuilder<boolean>[] = [];
  if (plan.text.length) {
    where.push(
      pg
        ? sql`i.id IN (SELECT s.item_id FROM item_search s
            WHERE s.document @@ to_tsquery('simple', ${tsMatch(plan.text, plan.prefix, '&')}))`
        : sql`i.id IN (SELECT rowid FROM item_search
            WHERE item_search MATCH ${ftsMatch(plan.text, plan.prefix, 'AND')})`,
    );
  }
  if (plan.excluded.length) {
    where.push(
      pg
        ? sql`i.id NOT IN (SELECT s.item_id FROM item_search s
            WHERE s.document @@ to_tsquery('simple', ${tsMatch(plan.excluded, false, '|')}))`
        : sql`i.id NOT IN (SELECT rowid FROM item_search
            WHERE item_search MATCH ${ftsMatch(plan.excluded, false, 'OR')})`,
    );
  }
  return where;
}

// --- the field terms ---------------------------------------------------------------------------

/** Kinds whose terms are alternatives when repeated (`status:backlog status:in-progress`); the others all apply. */
const ALTERNATIVES = new Set(['type', 'status', 'product', 'assignee', 'author', 'number']);

/**
 * SQLite's `+` before a column keeps its planner from reading a term through an index: the window
 * of the newest matches walks the items by id instead of reading every item of a status or a
 * product and sorting them. Selective terms (people, numbers) keep their indexes.
 */
type Walk = 'indexed' | 'by-id';

function column(kind: 'type' | 'status' | 'product' | 'assignee' | 'author' | 'number', negated: boolean, walk: Walk) {
  const plain = walk === 'by-id' ? sql`+` : sql``;
  switch (kind) {
    case 'type':
      return sql`${plain}i.type`;
    case 'status':
      return sql`${plain}i.status`;
    case 'product':
      return sql`${plain}i.product_id`;
    case 'number':
      return sql`i.number`;
    case 'assignee':
      // An unassigned item is not assigned to the person a negated term names.
      return negated ? sql`coalesce(i.assigned_to_id, 0)` : sql`i.assigned_to_id`;
    case 'author':
      return sql`i.created_by_id`;
  }
}

function valuesOf(condition: Condition, index: number, plan: Plan): (string | number)[] {
  switch (condition.kind) {
    case 'type':
      return [condition.type];
    case 'status':
      return [statusCode(condition.status)];
    case 'product':
      return [condition.id];
    case 'number':
      return [condition.number];
    case 'assignee':
    case 'author':
      return plan.people.get(index) ?? [];
    default:
      return [];
  }
}

const FIRST_CLOSED = statusCode('completed');

/** A term that stands alone (tags, is:, has:, deployed:), on the item `i`. */
function single(db: Db, condition: Condition, plan: Plan): RawBuilder<boolean> {
  switch (condition.kind) {
    case 'tag':
      return sql`EXISTS (SELECT 1 FROM item_tags t
        WHERE t.item_id = i.id AND ${foldedTag(db, 't.tag')} = ${foldTag(condition.tag)})`;
    case 'open':
      return sql`i.status < ${FIRST_CLOSED}`;
    case 'closed':
      return sql`i.status >= ${FIRST_CLOSED}`;
    case 'blocked':
      return sql`i.blockers_count > 0`;
    case 'comments':
      return sql`i.comments_count > 0`;
    case 'favorite':
      return sql`EXISTS (SELECT 1 FROM favorites f WHERE f.item_id = i.id AND f.user_id = ${plan.viewerId})`;
    case 'deployed':
    case 'not-deployed': {
      const there = sql<boolean>`EXISTS (SELECT 1 FROM item_deployments d
        WHERE d.item_id = i.id AND d.environment = ${condition.environment} AND d.reverted_at IS NULL)`;
      return condition.kind === 'deployed' ? there : sql`NOT ${there}`;
    }
    default:
      return FALSE;
  }
}

/** The field terms as conditions on the item `i`: repeated alternatives as one IN list, the rest each. */
function termConditions(db: Db, plan: Plan, walk: Walk): RawBuilder<boolean>[] {
  const where: RawBuilder<boolean>[] = [];
  const alternatives = new Map<string, (string | number)[]>();
  plan.terms.forEach((term, index) => {
    const kind = term.condition.kind;
    if (ALTERNATIVES.has(kind)) {
      const values = valuesOf(term.condition, index, plan);
      if (!term.negated) {
        alternatives.set(kind, [...(alternatives.get(kind) ?? []), ...values]);
        return;
      }
      if (values.length) where.push(sql`${column(kind as never, true, walk)} NOT IN (${sql.join(values)})`);
      return;
    }
    const condition = single(db, term.condition, plan);
    where.push(term.negated ? sql`NOT (${condition})` : condition);
  });
  for (const [kind, values] of alternatives)
    where.push(values.length ? sql`${column(kind as never, false, walk)} IN (${sql.join(values)})` : FALSE);
  return where;
}

/** Everything the items `i` must satisfy, the caller's products first. */
function conditions(db: Db, plan: Plan, withText: boolean, walk: Walk = 'indexed'): RawBuilder<boolean> {
  const where: RawBuilder<boolean>[] = [
    plan.productIds.length ? sql`${column('product', false, walk)} IN (${sql.join(plan.productIds)})` : FALSE,
    sql`i.archived = 0`,
    ...termConditions(db, plan, walk),
  ];
  if (plan.ids) where.push(plan.ids.length ? sql`i.id IN (${sql.join(plan.ids)})` : FALSE);
  if (withText) where.push(...textCondition(db, plan));
  return sql.join(where, sql` AND `);
}

// --- reads ---------------------------------------------------------------------------------------

const ORDER_COLUMNS: Record<Exclude<SortColumn, 'relevance'>, RawBuilder<unknown>> = {
  last_modified: sql`i.last_modified`,
  created_at: sql`i.created_at`,
  number: sql`i.number`,
};

/** The first positive tag term, when there is one: a field-only search walks that tag's index. */
const leadingTag = (plan: Plan): string | undefined =>
  plan.terms.flatMap((t) => (!t.negated && t.condition.kind === 'tag' ? [t.condition.tag] : []))[0];

/**
 * The ids of the newest `cap` matches, newest first: what totals, facets and ranking read, so that
 * a query matching most of a million items costs as much as one matching `cap`. With words, the
 * text index yields matches in id order (FTS5 reads its lists backwards); with a tag and no words,
 * the tag's index does, each item checked by key (SQLite is made to start there: its planner would
 * rather read every item of a status and sort them); otherwise the items table's.
 */
export async function matchWindow(db: Db, plan: Plan, cap: number): Promise<MatchWindow> {
  const pg = dialectOf(db) === 'postgres';
  const rest = conditions(db, { ...plan, text: [] }, true);
  let rows: { id: number; score?: number }[];
  if (plan.text.length && pg) {
    // The matches' ids are sorted before any item is read (OFFSET 0 keeps PostgreSQL from
    // flattening the subquery): the items are read by key for the newest only, not for every match.
    ({ rows } = await sql<{ id: number }>`SELECT i.id FROM (SELECT s.item_id FROM item_search s
        WHERE s.document @@ to_tsquery('simple', ${tsMatch(plan.text, plan.prefix, '&')})
        ORDER BY s.item_id DESC OFFSET 0) m
      JOIN items i ON i.id = m.item_id
      WHERE ${rest}
      ORDER BY m.item_id DESC LIMIT ${cap}`.execute(db));
  } else if (plan.text.length) {
    // Scored in the same pass: BM25 of the rows the window keeps only, where a pass of its own
    // walked the text index again from the window's oldest id (a third of the cost or more).
    ({ rows } = await sql<{ id: number; score: number }>`SELECT i.id, ${BM25} AS score
      FROM item_search JOIN items i ON i.id = item_search.rowid
      WHERE item_search MATCH ${ftsMatch(plan.text, plan.prefix, 'AND')} AND ${rest}
      ORDER BY item_search.rowid DESC LIMIT ${cap}`.execute(db));
    return { ids: rows.map((r) => Number(r.id)), scores: rows.map((r) => Number(r.score)) };
  } else if (leadingTag(plan) !== undefined && !pg) {
    ({ rows } = await sql<{ id: number }>`SELECT i.id FROM item_tags lead CROSS JOIN items i ON i.id = lead.item_id
      WHERE ${foldedTag(db, 'lead.tag')} = ${foldTag(leadingTag(plan) ?? '')} AND ${rest}
      ORDER BY lead.item_id DESC LIMIT ${cap}`.execute(db));
  } else {
    const byId = conditions(db, { ...plan, text: [] }, true, pg ? 'indexed' : 'by-id');
    ({ rows } = await sql<{ id: number }>`SELECT i.id FROM items i WHERE ${byId}
      ORDER BY i.id DESC LIMIT ${cap}`.execute(db));
  }
  return { ids: rows.map((r) => Number(r.id)) };
}

/** The newest matches, newest first; with words on SQLite, each one's BM25 score (lower is better). */
export interface MatchWindow {
  ids: number[];
  scores?: number[];
}

/** SQLite's relevance: BM25 with the columns weighted title 10, tags 5, description 2, comments 1. */
const BM25 = sql`bm25(item_search, 10.0, 5.0, 2.0, 1.0)`;

/**
 * The window's ids, best first: BM25 on SQLite (the scores read with the window), ts_rank on
 * PostgreSQL (weights A to D for title, tags, description, comments); ties newest first.
 */
export async function rankWindow(db: Db, plan: Plan, window: MatchWindow): Promise<number[]> {
  if (!window.ids.length) return [];
  if (window.scores) {
    const { ids, scores } = window;
    return ids
      .map((id, n) => ({ id, score: scores[n] }))
      .sort((a, b) => a.score - b.score || b.id - a.id)
      .map((r) => r.id);
  }
  const floor = Math.min(...window.ids);
  const rest = conditions(db, { ...plan, text: [] }, true);
  const tsQuery = sql`to_tsquery('simple', ${tsMatch(plan.text, plan.prefix, '&')})`;
  const { rows } = await sql<{ id: number }>`SELECT i.id FROM item_search s JOIN items i ON i.id = s.item_id
    WHERE s.document @@ ${tsQuery} AND i.id >= ${floor} AND ${rest}
    ORDER BY ts_rank(s.document, ${tsQuery}) DESC, i.id DESC`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** A page of all the matches in another order than relevance (by the items' own columns). */
export async function sortedPage(
  db: Db,
  plan: Plan,
  page: { sort: Exclude<SortColumn, 'relevance'>; descending: boolean; offset: number; limit: number },
): Promise<number[]> {
  const direction = page.descending ? sql`DESC` : sql`ASC`;
  const { rows } = await sql<{ id: number }>`SELECT i.id FROM items i WHERE ${conditions(db, plan, true)}
    ORDER BY ${ORDER_COLUMNS[page.sort]} ${direction}, i.id ${direction}
    LIMIT ${page.limit} OFFSET ${page.offset}`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** What a page of results needs of an item: what its kept JSON is found by, and what confines it. */
export interface SearchStamp extends ItemStamp {
  product_id: number;
  archived: number;
  least: number;
}

const stampsByIds = prepared((db, ids: number[]) =>
  db
    .selectFrom('items')
    .select(['id', 'version', 'parent_id', 'created_by_id', 'assigned_to_id', 'product_id', 'archived'])
    .select(sql<number>`octet_length(description) + octet_length(title)`.as('least'))
    .where('id', 'in', ids),
);

/**
 * The stamps of these items (any order; those gone left out): a page of results is assembled from
 * the item JSON kept by version, and only the items not kept are read whole.
 */
export async function searchStamps(db: Db, ids: number[]): Promise<SearchStamp[]> {
  if (!ids.length) return [];
  return (await inChunks([...new Set(ids)], (chunk) => stampsByIds(db, chunk))).map((s) => ({
    ...s,
    id: Number(s.id),
    product_id: Number(s.product_id),
    archived: Number(s.archived),
    least: Number(s.least),
  }));
}

export interface FacetRows {
  groups: { status: number; type: string; assigned_to_id: number | null; n: number }[];
  tags: { tag: string; n: number }[];
}

/** The facets of these items: counts by status, type and assignee together, and by tag (the most used). */
export async function facetCounts(db: Db, ids: number[], tagsShown: number): Promise<FacetRows> {
  if (!ids.length) return { groups: [], tags: [] };
  const groups = await sql<FacetRows['groups'][number]>`SELECT status, type, assigned_to_id, count(*) AS n
    FROM items WHERE id IN (${sql.join(ids)}) GROUP BY status, type, assigned_to_id`.execute(db);
  const tags = await sql<FacetRows['tags'][number]>`SELECT tag, count(*) AS n FROM item_tags
    WHERE item_id IN (${sql.join(ids)}) GROUP BY tag ORDER BY count(*) DESC, tag LIMIT ${tagsShown}`.execute(db);
  return {
    groups: groups.rows.map((r) => ({ ...r, status: Number(r.status), n: Number(r.n) })),
    tags: tags.rows.map((r) => ({ tag: r.tag, n: Number(r.n) })),
  };
}

/**
 * Items whose titles share any of these three-letter pieces, most shared first, at most `limit`:
 * the candidates of the typo-tolerant fallback (FTS5's trigram index; pg_trgm's under ILIKE).
 */
export async function titleCandidates(
  db: Db,
  plan: Plan,
  trigrams: string[],
  limit: number,
): Promise<{ id: number; title: string }[]> {
  const rest = conditions(db, { ...plan, text: [] }, true);
  if (dialectOf(db) === 'postgres') {
    const patterns = trigrams.map((t) => `%${t}%`);
    const { rows } = await sql<{ id: number; title: string }>`SELECT i.id, i.title FROM items i
      WHERE i.title ILIKE ANY (${patterns}::text[]) AND ${rest}
      ORDER BY (SELECT count(*) FROM unnest(${patterns}::text[]) p WHERE i.title ILIKE p) DESC, i.id DESC
      LIMIT ${limit}`.execute(db);
    return rows;
  }
  const match = trigrams.map((t) => `"${t}"`).join(' OR ');
  const { rows } = await sql<{ id: number; title: string }>`SELECT i.id, i.title
    FROM item_search_titles JOIN items i ON i.id = item_search_titles.rowid
    WHERE item_search_titles MATCH ${match} AND ${rest}
    ORDER BY bm25(item_search_titles), i.id DESC LIMIT ${limit}`.execute(db);
  return rows;
}

/** The caller's products that are not archived: what a search may read. */
export async function searchableProducts(db: Db, userId: number): Promise<ProductRow[]> {
  return productsOfMember(db, userId);
}

// Read on every search (its answer is kept under these products' revisions): compiled once.
const productsOfMember = prepared((db, userId: number) =>
  db
    .selectFrom('products')
    .innerJoin('memberships', 'memberships.product_id', 'products.id')
    .selectAll('products')
    .where('memberships.user_id', '=', userId)
    .where('products.archived', '=', 0)
    .orderBy('products.id'),
);

/** The members of these products a person term names (an address, or the part of addresses before `@`). */
export async function membersNamed(db: Db, productIds: number[], person: PersonRef): Promise<number[]> {
  if ('me' in person || !productIds.length) return [];
  let query = db
    .selectFrom('users')
    .select('users.id')
    .where('users.id', 'in', (eb) =>
      eb.selectFrom('memberships').select('memberships.user_id').where('memberships.product_id', 'in', productIds),
    );
  query =
    'email' in person
      ? query.where(sql`lower(users.email)`, '=', person.email)
      : query.where(sql`substr(lower(users.email), 1, ${person.local.length + 1})`, '=', `${person.local}@`);
  return (await query.limit(100).execute()).map((r) => r.id);
}

/**
 * One step of merging the SQLite index's segments (the writers never merge; see the migration):
 * `pages` of work on each table. Whether it did any work (FTS5 changes rows only when it merged), so
 * a round goes on while there is more.
 */
export async function mergeIndexStep(db: Db, pages: number): Promise<boolean> {
  if (dialectOf(db) !== 'sqlite') return false;
  const changes = sql<{ n: number }>`SELECT total_changes() AS n`;
  return db.transaction().execute(async (trx) => {
    let merged = false;
    for (const table of ['item_search', 'item_search_titles']) {
      const start = Number((await changes.execute(trx)).rows[0].n);
      await sql`INSERT INTO ${sql.table(table)} (${sql.ref(table)}, rank) VALUES ('merge', ${pages})`.execute(trx);
      // FTS5's documented sign of work done: two changes or more.
      if (Number((await changes.execute(trx)).rows[0].n) - start >= 2) merged = true;
    }
    return merged;
  });
}
