import {
  createQueryId,
  type BinaryOperationNode,
  ColumnNode,
  LimitNode,
  OperationNodeTransformer,
  OperatorNode,
  ReferenceNode,
  SelectQueryNode,
  ValueNode,
  type Compilable,
  type CompiledQuery,
  type DialectAdapter,
  type OperationNodeSource,
  type RootOperationNode,
} from 'kysely';
import type { Db } from './connection.js';
import { dialectOf } from './dialect.js';
import { nameServerStatement } from './statements.js';

const STAND = Symbol('stand-in');

/** What `build` is given in place of an argument (or of one element or field of one). */
interface Stand {
  readonly [STAND]: readonly [argument: number, part?: number | string];
}
const isStand = (value: unknown): value is Stand => typeof value === 'object' && value !== null && STAND in value;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
/** The fields of a record argument that take part (Kysely leaves undefined ones out of a query). */
const fieldsOf = (record: Record<string, unknown>): string[] =>
  Object.keys(record).filter((k) => record[k] !== undefined);

/** What decides a query's text besides the dialect: the length of each array, the fields of each record. */
const shapeOf = (args: unknown[]): string =>
  args.map((arg) => (Array.isArray(arg) ? arg.length : isRecord(arg) ? fieldsOf(arg).join(' ') : '')).join();

function standIn(arg: unknown, i: number): unknown {
  if (Array.isArray(arg)) return arg.map((_, j): Stand => ({ [STAND]: [i, j] }));
  if (isRecord(arg)) return Object.fromEntries(fieldsOf(arg).map((k): [string, Stand] => [k, { [STAND]: [i, k] }]));
  return { [STAND]: [i] } satisfies Stand;
}

/** Where an argument (or one element or field of one) goes. */
type Place = readonly [argument: number, part?: number | string];
const valueAt = (args: unknown[], [argument, part]: Place): unknown =>
  part === undefined ? args[argument] : (args[argument] as Record<number | string, unknown>)[part];

/**
 * The stand-in a SELECT's own LIMIT takes, if it takes one. SQLite (3.47 on, with STAT4) lets its
 * planner read a bound LIMIT, so a statement whose LIMIT is a parameter is compiled again every
 * time it is bound: a page of five joins then cost five times what it costs with the number written
 * in its text. On SQLite such a LIMIT is written into the statement instead, one statement per
 * number (pages ask for a few sizes); OFFSET stays a parameter, as it costs nothing.
 */
function limitStandOf(node: unknown): Place | undefined {
  if (!SelectQueryNode.is(node as SelectQueryNode) || !(node as SelectQueryNode).limit) return undefined;
  const value = (node as SelectQueryNode).limit!.limit;
  return ValueNode.is(value) && isStand(value.value) ? value.value[STAND] : undefined;
}

/**
 * On SQLite, a constant a column is compared with (`archived = 0`, `status <> 'sent'`) is written
 * into the statement rather than bound. SQLite's planner reads a bound value that a partial index's
 * condition could depend on (`where archived = 0 and parent_id is null`), and then compiles the
 * statement again whenever it is bound, at every call: a story's sub-items cost six times their
 * read. Only comparisons with a column: there the column's type decides how the value compares,
 * whereas elsewhere (inserted, computed with) a number written as `0` would be an integer where a
 * bound one is a real.
 */
class ComparedConstantsWritten extends OperationNodeTransformer {
  protected override transformBinaryOperation(node: BinaryOperationNode): BinaryOperationNode {
    const out = super.transformBinaryOperation(node);
    const right = out.rightOperand;
    const compared =
      OperatorNode.is(out.operator) &&
      WRITTEN_COMPARISONS.has(out.operator.operator) &&
      (ReferenceNode.is(out.leftOperand) || ColumnNode.is(out.leftOperand));
    if (!compared || !ValueNode.is(right) || right.immediate) return out;
    const value = right.value;
    const writable = typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
    return writable ? { ...out, rightOperand: ValueNode.createImmediate(value) } : out;
  }
}
const WRITTEN_COMPARISONS = new Set<string>(['=', '==', '!=', '<>', '<', '<=', '>', '>=', 'is', 'is not']);

/** On PostgreSQL, shapes whose arrays hold at most this many elements are prepared by the server too. */
const SERVER_ARRAY_MAX = 4;

interface Compiled {
  query: CompiledQuery;
  /** Per parameter of the statement: where its value comes from, or the constant it always has. */
  slots: ({ argument: number; part?: number | string } | { value: unknown })[];
}

/**
 * A query Kysely builds and compiles once instead of on every call. Building one (immutable nodes,
 * parsed references) and compiling it costs more than SQLite takes to run a small indexed read,
 * and the hottest reads (a session, a product, an item and what its page shows) run on every
 * request.
 *
 * `build` is called once per dialect and shape (the length of each array argument, the defined
 * fields of each plain-object one) with stand-ins for its arguments. It must use each argument,
 * element and field only as a value (a comparison's right side, an `in` list, an inserted or set
 * value, a limit): never look at one or shape the query by it. Any other value in the query is
 * fixed when it is built (so nothing like the current time may be computed inside `build`). Each
 * call binds its own arguments in their places and runs in `db`, a transaction or not, like any
 * other query, and returns its rows (none for a write without `returning`). What is compiled is
 * kept for good: at most one query per dialect and shape (and, on SQLite, LIMIT: see limitStandOf;
 * pages are 500 at most), and `in` lists are cut to 500 at most (`inChunks`).
 *
 * On PostgreSQL the server prepares it too, once per connection (see serverStatementName): parsing
 * and planning a statement costs a backend more than running one of these indexed reads, and a
 * fetch ran at half the rate without. Only shapes whose arrays hold at most SERVER_ARRAY_MAX
 * elements, so that a connection holds a few statements per query, not one per length of list.
 */
export function prepared<A extends unknown[], O>(
  build: (db: Db, ...args: A) => Compilable<O> & OperationNodeSource,
): (db: Db, ...args: A) => Promise<O[]> {
  /** Per dialect: what is compiled by shape (and written LIMIT), and where the LIMIT comes from once known. */
  const byDialect = new WeakMap<DialectAdapter, { shapes: Map<string, Compiled>; limit?: Place | null }>();
  const compile = (db: Db, args: A, state: { limit?: Place | null }): Compiled => {
    const stands = args.map(standIn);
    let node = build(db, ...(stands as A)).toOperationNode();
    state.limit = limitStandOf(node) ?? null;
    const limit = state.limit && writtenLimit(db, args, state.limit);
    if (limit !== undefined && limit !== null)
      node = SelectQueryNode.cloneWithLimit(
        node as SelectQueryNode,
        LimitNode.create(ValueNode.createImmediate(limit)),
      );
    if (dialectOf(db) === 'sqlite') node = new ComparedConstantsWritten().transformNode(node);
    const query = db.getExecutor().compileQuery(node as RootOperationNode, createQueryId());
    const slots = query.parameters.map((p) =>
      isStand(p) ? { argument: p[STAND][0], part: p[STAND][1] } : { value: p },
    );
    const every = stands.flatMap((s) => (Array.isArray(s) ? s : isStand(s) ? [s] : Object.values(s as object)));
    const unused = every.filter((s) => !query.parameters.includes(s) && !(limit != null && isLimit(s, state.limit!)));
    if (unused.length) throw new Error(`A prepared query does not take all its arguments as values: ${query.sql}`);
    const small = args.every((arg) => !Array.isArray(arg) || arg.length <= SERVER_ARRAY_MAX);
    if (small && dialectOf(db) === 'postgres') nameServerStatement(query.sql);
    return { query, slots };
  };
  const keyOf = (db: Db, args: A, limit: Place | null | undefined): string =>
    limit ? `${shapeOf(args)} limit ${writtenLimit(db, args, limit) ?? '?'}` : shapeOf(args);
  return async (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    const state = byDialect.get(adapter) ?? byDialect.set(adapter, { shapes: new Map() }).get(adapter)!;
    let compiled = state.shapes.get(keyOf(db, args, state.limit));
    if (!compiled) {
      compiled = compile(db, args, state);
      state.shapes.set(keyOf(db, args, state.limit), compiled);
    }
    const parameters = compiled.slots.map((slot) =>
      'value' in slot ? slot.value : valueAt(args, [slot.argument, slot.part]),
    );
    const result = await db.executeQuery<O>({ ...compiled.query, parameters });
    return result.rows;
  };
}

/** The LIMIT to write into the statement's text: SQLite's, when it is a whole number; otherwise it stays bound. */
function writtenLimit(db: Db, args: unknown[], place: Place): number | undefined {
  const value = valueAt(args, place);
  return dialectOf(db) === 'sqlite' && Number.isSafeInteger(value) ? (value as number) : undefined;
}

const isLimit = (s: unknown, place: Place): boolean =>
  isStand(s) && s[STAND][0] === place[0] && s[STAND][1] === place[1];
