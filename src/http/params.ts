import { Type, type Static, type TOptional, type TSchema } from '@sinclair/typebox';
import { BadRequestError, ValidationError } from '../errors.js';
import { documentAs, parameterMeanings } from './documentation.js';

/**
 * What a parameter may look like on the wire: form bodies and query strings give strings (arrays
 * when repeated), JSON bodies may give numbers, booleans, arrays or null. Route schemas declare
 * each parameter with this type; the functions below turn it into a typed value or a 400 naming
 * the parameter, following docs/INTERFACE.md §1.
 */
export const Param = Type.Union(
  [
    Type.String(),
    Type.Number(),
    Type.Boolean(),
    Type.Null(),
    Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
    // An item posted back whole carries embedded objects (assigned_to, parent, ...).
    Type.Object({}, { additionalProperties: true }),
  ],
  { $id: 'Param' },
);
export type ParamValue = Static<typeof Param> | undefined;

/**
 * A loose parameter object: the named ones declared, unknown ones allowed and ignored. Each names
 * the shared Param schema (registered once on the app), so it is compiled once, not per field.
 * `props` says what each parameter means, for the API's description (`doc` of documentation.ts).
 */
export function params<K extends string>(props: Record<K, TSchema>) {
  const ref = Type.Ref(Param);
  const optional = Object.fromEntries(Object.keys(props).map((k) => [k, Type.Optional(ref)])) as Record<
    K,
    TOptional<typeof ref>
  >;
  return documentAs(Type.Object(optional, { additionalProperties: true }), parameterMeanings(props));
}

export function invalid(name: string, problem: string): never {
  throw new ValidationError({ [name]: problem });
}

/** A UTF-16 surrogate without its other half: JSON can carry one, no UTF-8 text can hold it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A C0 control character other than NUL (refused on its own), tab, line feed and carriage return. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const CONTROL = /[\u0001-\u0008\u000b\u000c\u000e-\u001f]/;

/**
 * A single string value; a repeated form key keeps its last value. The one reading of every text
 * parameter: what no text may hold (NUL and the other control characters, unpaired surrogates)
 * is refused here, naming the parameter.
 */
export function asString(name: string, value: ParamValue): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.length ? asString(name, value[value.length - 1]) : '';
  if (typeof value === 'object') return invalid(name, 'must be a string, not an object');
  const s = String(value);
  const problem = textProblem(s);
  return problem === undefined ? s : invalid(name, problem);
}

/**
 * What makes `s` no text Shiplog stores, as the end of a sentence naming the field, or undefined:
 * the rule of every text field, the API's and the pages' (through asString) and the command
 * line's alike.
 */
export function textProblem(s: string): string | undefined {
  // No database stores NUL in text; refusing it here keeps both backends answering alike.
  if (s.includes('\u0000')) return 'must not contain NUL characters';
  // Nor any other C0 control but tab and line breaks: none is text anyone types, and JSON spells
  // each in six bytes, which would let an answer weigh six times what its rules allow.
  if (CONTROL.test(s)) return 'must not contain control characters (only tab, line feed and carriage return)';
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode text (it has an unpaired surrogate)';
  return undefined;
}

/**
 * A reference to another resource: a plain value, or the embedded object of a whole resource
 * posted back (`{"id": 5, ...}`), from which `key` is taken; an object without a plain `key`
 * is refused rather than read as "not given".
 */
export function asReference(name: string, value: ParamValue, key: 'id' | 'number'): ParamValue {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const inner = (value as Record<string, unknown>)[key];
    if (typeof inner === 'number' || typeof inner === 'string') return inner;
    return invalid(name, `must be ${key === 'id' ? 'an id' : 'a number'}, or an object whose "${key}" is one`);
  }
  return value;
}

/** Comma-separated list (or JSON array): entries trimmed, empty ones dropped. */
export function asList(name: string, value: ParamValue): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object' && !Array.isArray(value)) return invalid(name, 'must be a list, not an object');
  const parts = Array.isArray(value)
    ? value.flatMap((v) => (v === null ? [] : asString(name, v)!.split(',')))
    : asString(name, value)!.split(',');
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

const TRUE = new Set(['true', '1', 'yes', 'y']);
const FALSE = new Set(['false', '0', 'no', 'n']);

export function asBoolean(name: string, value: ParamValue): boolean | undefined {
  const s = asString(name, value);
  if (s === undefined) return undefined;
  const lower = s.trim().toLowerCase();
  if (TRUE.has(lower)) return true;
  if (FALSE.has(lower)) return false;
  return invalid(name, 'must be true or false');
}

/**
 * The one reading of a number that names something (an id, an item number), from a path segment
 * or a parameter: digits only, else undefined. A run of digits too large to be stored is still a
 * number (the largest safe integer), which names nothing: looking it up finds no row, so a huge
 * id is a 404 like any other unknown one.
 */
export function digitsToId(raw: string): number | undefined {
  const t = raw.trim();
  return /^\d+$/.test(t) ? Math.min(Number(t), Number.MAX_SAFE_INTEGER) : undefined;
}

/**
 * Decimal digits only; `min` bounds it from below. Empty counts as not given. Any run of digits is
 * well-formed: one too large to hold is read as the largest safe integer, so everywhere a large
 * number means what it would mean anyway (an id or item number names nothing, a limit is capped,
 * an offset lies past the end) instead of being a 400 from one length of digits on.
 */
export function asInteger(name: string, value: ParamValue, min = 0): number | undefined {
  const s = asString(name, value);
  if (s === undefined || s.trim() === '') return undefined;
  const t = s.trim();
  const n = digitsToId(t);
  if (n === undefined)
    return invalid(name, min > 0 ? `must be a whole number of at least ${min}` : 'must be a whole number');
  if (n < min) return invalid(name, `must be at least ${min}`);
  return n;
}

export function asEnum<T extends string>(name: string, value: ParamValue, allowed: readonly T[]): T | undefined {
  const s = asString(name, value);
  if (s === undefined) return undefined;
  const t = s.trim();
  if (!(allowed as readonly string[]).includes(t)) return invalid(name, `must be one of ${allowed.join(', ')}`);
  return t as T;
}

export function asEnumList<T extends string>(name: string, value: ParamValue, allowed: readonly T[]): T[] | undefined {
  const list = asList(name, value);
  if (list === undefined) return undefined;
  for (const entry of list) {
    if (!(allowed as readonly string[]).includes(entry))
      invalid(name, `"${entry}" is not one of ${allowed.join(', ')}`);
  }
  return [...new Set(list)] as T[];
}

/** A string with a length limit (in characters, as the interface counts them). */
export function asText(name: string, value: ParamValue, max: number): string | undefined {
  const s = asString(name, value);
  if (s === undefined) return undefined;
  if ([...s].length > max) invalid(name, `must be at most ${max} characters`);
  return s;
}

/**
 * A string with a length limit in bytes of UTF-8, for text whose size is what matters (a
 * description is embedded in every list and deploy that shows its item): `max` ASCII characters,
 * a quarter as many of the widest.
 */
export function asTextBytes(name: string, value: ParamValue, max: number): string | undefined {
  const s = asString(name, value);
  if (s === undefined) return undefined;
  if (Buffer.byteLength(s, 'utf8') > max)
    invalid(name, `must be at most ${max} bytes of UTF-8 (${max} ASCII characters, fewer of others)`);
  return s;
}

/** Names, in parsed form or query text, whose value was not percent-encoded UTF-8. */
const UNDECODABLE = Symbol('undecodable');

/** `+` for space and %-escapes of UTF-8; undefined when the escapes are malformed or not UTF-8. */
function decodeComponent(raw: string): string | undefined {
  if (!raw.includes('%') && !raw.includes('+')) return raw;
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** The most name=value pairs a form body may have: room for a deploy naming its most items one pair each. */
export const MAX_FORM_PAIRS = 1_100;

/**
 * Parses `application/x-www-form-urlencoded` text (bodies and query strings): a repeated name
 * gives an array. Unlike lenient parsers, a value whose escapes are not UTF-8 is not kept as the
 * raw `%FF` text; it is marked, and refused if the endpoint reads that parameter. With `maxPairs`,
 * text of more pairs is refused (400) as soon as the pair past the limit is met, so that a body of
 * a hundred thousand pairs costs no more to refuse than one of a thousand costs to read.
 */
export function parseFormText(text: string, maxPairs = Infinity): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  const undecodable = new Set<string>();
  let pairs = 0;
  for (let start = 0; start <= text.length; ) {
    const amp = text.indexOf('&', start);
    const end = amp < 0 ? text.length : amp;
    const pair = text.slice(start, end);
    start = end + 1;
    if (pair === '') continue;
    if (++pairs > maxPairs)
      throw new BadRequestError(
        `The form has more than ${maxPairs} name=value pairs; no request of this interface needs as many.`,
      );
    const eq = pair.indexOf('=');
    const key = decodeComponent(eq < 0 ? pair : pair.slice(0, eq));
    // A name that is not text is no parameter anyone reads.
    if (key === undefined) continue;
    let value = decodeComponent(eq < 0 ? '' : pair.slice(eq + 1));
    if (value === undefined) {
      undecodable.add(key);
      value = '';
    }
    const previous = out[key];
    if (previous === undefined) out[key] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else out[key] = [previous, value];
  }
  if (undecodable.size) Object.defineProperty(out, UNDECODABLE, { value: undecodable });
  return out;
}

/** `name[]` (PHP and jQuery lists) or `name[key]` (an object), as form and query text spell them. */
const BRACKETED = /^([^[\]]+)\[([^[\]]*)\]$/;

/**
 * The parameters of one source (query or body) that the endpoint reads (`names`); everything else
 * is ignored, as the interface asks, including the bracketed keys of a whole item posted back
 * (`product[id]`, `email[files]`). For a parameter that is read, `name[key]=v` is the object
 * `{key: v}` (so `assigned_to[id]=5` reads like JSON's `{"assigned_to": {"id": 5}}`), while
 * `name[]` and deeper nesting are refused: silently ignoring them would answer as if the
 * parameter were not given (an unfiltered list, say).
 */
function readSource(
  source: unknown,
  names: ReadonlySet<string>,
  errors: Record<string, string>,
): Record<string, ParamValue> {
  if (!source || typeof source !== 'object' || Array.isArray(source)) return {};
  const undecodable = (source as { [UNDECODABLE]?: Set<string> })[UNDECODABLE];
  const out: Record<string, ParamValue> = {};
  for (const [key, value] of Object.entries(source as Record<string, ParamValue>)) {
    const bracket = key.indexOf('[');
    const name = bracket > 0 ? key.slice(0, bracket) : key;
    if (!names.has(name)) continue;
    if (undecodable?.has(key)) {
      errors[name] = 'must be UTF-8 text, percent-encoded (a % starts an escape such as %C3%A9; a literal % is %25)';
      continue;
    }
    if (bracket <= 0) {
      if (name in out) errors[name] = `is given both as ${name} and as ${name}[...]`;
      else out[name] = value;
      continue;
    }
    const match = BRACKETED.exec(key);
    if (!match || match[2] === '') {
      errors[name] = `cannot be sent as ${key}: give one value, a comma-separated list (${name}=a,b) or a JSON array`;
      continue;
    }
    const existing = out[name];
    if (existing !== undefined && (existing === null || typeof existing !== 'object' || Array.isArray(existing))) {
      errors[name] = `is given both as ${name} and as ${name}[...]`;
      continue;
    }
    out[name] = { ...(existing as Record<string, unknown> | undefined), [match[2]]: value } as ParamValue;
  }
  return out;
}

/**
 * The parameters an endpoint reads (`names`, from its schema), from the query string and the body,
 * the body winning (docs/INTERFACE.md §1). Throws a ValidationError naming every parameter sent in a
 * shape it cannot be read in.
 */
export function mergeParams(query: unknown, body: unknown, names: ReadonlySet<string>): Record<string, ParamValue> {
  const errors: Record<string, string> = {};
  const merged = { ...readSource(query, names, errors), ...readSource(body, names, errors) };
  if (Object.keys(errors).length) throw new ValidationError(errors);
  return merged;
}

/**
 * Runs each parameter's parser, gathering every problem into one ValidationError, so that a
 * client learns about all its mistakes at once.
 */
export function collectErrors<T>(parse: (field: <V>(fn: () => V) => V | undefined) => T): T {
  const errors: Record<string, string> = {};
  const field = <V>(fn: () => V): V | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ValidationError) || !err.errors) throw err;
      Object.assign(errors, err.errors);
      return undefined;
    }
  };
  const result = parse(field);
  if (Object.keys(errors).length) throw new ValidationError(errors);
  return result;
}

/**
 * `offset` and `limit` of a paged list: no limit is `size.default`, a bigger one than
 * `size.max` is cut to it (as item lists do), below 1 is 400.
 */
export function asPage(
  p: Record<string, ParamValue>,
  size: { default: number; max: number },
): { offset: number; limit: number } {
  return collectErrors((field) => ({
    offset: field(() => asInteger('offset', p.offset)) ?? 0,
    limit: Math.min(field(() => asInteger('limit', p.limit, 1)) ?? size.default, size.max),
  }));
}
