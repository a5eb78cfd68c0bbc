import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Db } from '../src/db/connection.js';
import { sharedSecret } from '../src/settings.js';
import { operatorSignInLink } from '../src/web/index.js';
import type { TestContext, TestUser } from './helpers.js';
import { pgBase } from './storage.js';

/**
 * What the property tests (fuzz-*.test.ts) share: the seed and the bounds of a run, a picture of
 * the whole database to tell whether a request changed anything, and the odd values requests are
 * made of.
 */

/**
 * One seed for every property, so that a run is the same each time: FC_SEED replays another
 * (a failure's message gives the seed and the path of the failing case). FC_RUNS multiplies the
 * number of cases, for a longer search by hand.
 */
export const FUZZ_SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261122;
const RUNS_FACTOR = process.env.FC_RUNS ? Number(process.env.FC_RUNS) : 1;

/**
 * Parameters of fc.assert: the seed, the cases, and the failing case's own error in the message
 * (with the seed and path).
 */
export function fuzzParameters<T>(numRuns: number): fc.Parameters<T> {
  return { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(numRuns * RUNS_FACTOR)), includeErrorInReport: true };
}

/**
 * Columns a read moves on purpose: when a user last made an authenticated request, when a page
 * session was last used (each at most once a minute). Everything else must stay as it was.
 */
const VOLATILE: Record<string, string[]> = { users: ['last_login'], web_sessions: ['last_seen_at'] };

/** Every table's rows, each as JSON, sorted: the whole state a request could change. */
export type Snapshot = Map<string, string[]>;

const tablesOf = new WeakMap<Db, Promise<string[]>>();

/** The tables of the service (the migration bookkeeping left out), of this test's schema only on PostgreSQL. */
function tableNames(db: Db): Promise<string[]> {
  let names = tablesOf.get(db);
  if (!names) {
    names = (async () => {
      const schema = pgBase
        ? (await sql<{ name: string }>`select current_schema() as name`.execute(db)).rows[0].name
        : undefined;
      const tables = await db.introspection.getTables();
      return tables
        .filter(
          (table) =>
            !table.isView &&
            !table.name.startsWith('kysely_') &&
            // The rate limiter's counts (on PostgreSQL): every request moves them, reads included.
            table.name !== 'rate_limit_windows' &&
            (schema === undefined || table.schema === schema),
        )
        .map((table) => table.name)
        .sort();
    })();
    tablesOf.set(db, names);
  }
  return names;
}

export async function snapshot(db: Db): Promise<Snapshot> {
  const names = await tableNames(db);
  const contents = await Promise.all(
    names.map(async (name) => {
      const rows = await db
        .selectFrom(name as 'users')
        .selectAll()
        .execute();
      const volatile = VOLATILE[name] ?? [];
      return rows
        .map((row) => JSON.stringify(Object.entries(row).filter(([column]) => !volatile.includes(column))))
        .sort();
    }),
  );
  return new Map(names.map((name, i) => [name, contents[i]]));
}

/** What differs between two snapshots, a few rows per table; undefined when nothing does. */
export function changesBetween(before: Snapshot, after: Snapshot): string | undefined {
  const lines: string[] = [];
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const was = new Set(before.get(name) ?? []);
    const is = new Set(after.get(name) ?? []);
    const removed = [...was].filter((row) => !is.has(row));
    const added = [...is].filter((row) => !was.has(row));
    if (removed.length === 0 && added.length === 0) continue;
    lines.push(`table ${name}: ${removed.length} row(s) gone or changed, ${added.length} new or changed`);
    for (const row of removed.slice(0, 3)) lines.push(`  - ${row.slice(0, 400)}`);
    for (const row of added.slice(0, 3)) lines.push(`  + ${row.slice(0, 400)}`);
  }
  return lines.length ? lines.join('\n') : undefined;
}

/**
 * Characters parsers and templates trip on: controls, separators, bidi and zero-width marks, lone
 * surrogates, markup.
 */
const ODD_CHARACTERS = [
  '\u0000',
  '\u0001',
  '\t',
  '\n',
  '\r\n',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\ufffe',
  '\uffff',
  '\ud800',
  '\udfff',
  'é',
  'e\u0301',
  'ß',
  'İ',
  '😀',
  '👩‍👩‍👧',
  '𝕏',
  '<',
  '>',
  '&',
  '"',
  "'",
  '`',
  '\\',
  '%',
  '+',
  ',',
  '=',
  ';',
  '#',
  '?',
  '/',
  '[',
  ']',
  '{',
  '}',
  ' ',
  'a',
  'Z',
  '0',
  '9',
  '-',
  '.',
  '@',
];

/**
 * Text of every kind: any code points, odd characters, and lengths around every limit (in
 * characters and in UTF-16 units).
 */
export const oddText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: fc.constantFrom(...ODD_CHARACTERS), maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '  \t ',
      'null',
      'undefined',
      'true',
      '[]',
      '{}',
      '<script>alert(1)</script>',
      '../../etc/passwd',
      "'; drop table items; --",
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(64, 65, 255, 256, 1000, 65535, 65536), fc.constantFrom('x', 'é', '😀', ','))
      .map(([n, c]) => c.repeat(n)),
  },
);

/**
 * Numbers as text, well-formed or not: signs, fractions, exponents, other digits, runs too long
 * for any integer type.
 */
export const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '-0',
    '+3',
    '1.5',
    '1e3',
    '0x10',
    ' 7 ',
    '007',
    '2147483647',
    '2147483648',
    '4294967296',
    '9007199254740993',
    '1'.padEnd(400, '9'),
    'NaN',
    'Infinity',
    '٣',
    '３',
    '1,2',
    '',
  ),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 90n), max: 2n ** 90n }).map(String),
);

/**
 * Number tokens of JSON text that JSON.stringify never writes: overflow to Infinity, exponents,
 * more digits than a double keeps.
 */
const RAW_JSON_NUMBERS = [
  '1e400',
  '-1e400',
  '1E2',
  '0.0000001',
  '-0',
  '123456789012345678901234567890',
  '2147483648',
  '4.0',
];

/**
 * JSON text of any value: primitives, numbers of every size, odd strings (lone surrogates
 * included, which JSON escapes), arrays and objects nested a little, and sometimes very deep.
 */
export function jsonText(leaf: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const { value } = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', maxDepth: 3 },
      { weight: 4, arbitrary: leaf.map((s) => JSON.stringify(s)) },
      {
        weight: 2,
        arbitrary: fc.oneof(
          fc.constantFrom('null', 'true', 'false', ...RAW_JSON_NUMBERS),
          fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
          fc.integer().map(String),
        ),
      },
      { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`) },
      {
        weight: 1,
        arbitrary: fc
          .array(
            fc.tuple(
              fc.oneof(fc.constantFrom('id', 'number', '$gt', '__proto__', 'constructor'), fc.string({ maxLength: 6 })),
              tie('value'),
            ),
            { maxLength: 4 },
          )
          .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
      },
    ),
  }));
  return fc.oneof(
    { weight: 20, arbitrary: value },
    { weight: 1, arbitrary: fc.constantFrom(50, 5000).map((depth) => '['.repeat(depth) + ']'.repeat(depth)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(50, 5000).map((depth) => `${'{"id":'.repeat(depth)}1${'}'.repeat(depth)}`),
    },
  );
}

/** A form or query component: percent-encoded, with `+` for spaces, or raw with broken or non-UTF-8 escapes. */
export function formComponent(s: string): fc.Arbitrary<string> {
  const encoded = encodeLoosely(s);
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(encoded) },
    { weight: 1, arbitrary: fc.constant(encoded.replace(/%20/g, '+')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('%', '%G1', '%FF', '%C3', '%C0%AF', '%ED%A0%80', '%00', '%E2%80%AE', '%25')
        .map((bad) => encoded + bad),
    },
  );
}

/** A character of a surrogate pair, or a lone one; or a run of characters with none. */
const SURROGATE_OR_RUN = /[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]|[^\ud800-\udfff]+/g;

/**
 * encodeURIComponent, with a surrogate (a lone one, which it refuses, and each character beyond
 * the Basic Multilingual Plane alike) written as the escape of a lone surrogate's bytes, CESU-8:
 * not UTF-8. Runs without surrogates are encoded whole: one call for a 64 KB text, not one a letter.
 */
export function encodeLoosely(s: string): string {
  return s.replace(SURROGATE_OR_RUN, (m) =>
    m.charCodeAt(0) >= 0xd800 && m.charCodeAt(0) <= 0xdfff ? '%ED%A0%80' : encodeURIComponent(m),
  );
}

/** The path of a new sign-in link for a user, as an operator makes one (no mail, no rate limit). */
export async function signInPath(t: TestContext, user: TestUser): Promise<string> {
  const key = await sharedSecret(t.db, 'signin_key');
  return new URL(
    await t.db.transaction().execute((trx) => operatorSignInLink(trx, key, t.config.publicUrl, user.email)),
  ).pathname;
}

/** A new page session of a user: its cookie header and the form token its pages carry. */
export async function pageSession(t: TestContext, user: TestUser): Promise<{ cookie: string; csrf: string }> {
  const signedIn = await t.app.inject({ method: 'POST', url: await signInPath(t, user) });
  assert.equal(signedIn.statusCode, 303, signedIn.body);
  const cookie = String(
    [signedIn.headers['set-cookie']].flat().find((c) => String(c).startsWith('shiplog_session=')),
  ).split(';')[0];
  const settings = await t.app.inject({ method: 'GET', url: '/app/settings', headers: { cookie } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(settings.body)?.[1];
  assert.ok(csrf, `no form token in ${settings.body}`);
  return { cookie, csrf };
}
