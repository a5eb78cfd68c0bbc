import { Type, type Static, type TOptional } from '@sinclair/typebox';
import { ValidationError } from '../errors.js';

/**
 * What a parameter may look like on the wire: form bodies and query strings give strings (arrays
 * when repeated), JSON bodies may give numbers, booleans, arrays or null. Route schemas declare
 * each parameter with this type; the functions below turn it into a typed value or a 400 naming
 * the parameter, following INTERFACE.md §1.
 */
export const Param = Type.Union([
  Type.String(),
  Type.Number(),
  Type.Boolean(),
  Type.Null(),
  Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  // An item posted back whole carries embedded objects (assigned_to, parent, ...).
  Type.Object({}, { additionalProperties: true }),
], { $id: 'Param' });
export type ParamValue = Static<typeof Param> | undefined;

/**
 * A loose parameter object: the named ones declared, unknown ones allowed and ignored. Each names
 * the shared Param schema (registered once on the app), so it is compiled once, not per field.
 */
export function params<K extends string>(props: Record<K, typeof Param>) {
  const ref = Type.Ref(Param);
  const optional = Object.fromEntries(Object.keys(props).map((k) => [k, Type.Optional(ref)])) as Record<K, TOptional<typeof ref>>;
  return Type.Object(optional, { additionalProperties: true });
}

export function invalid(name: string, problem: string): never {
  throw new ValidationError({ [name]: problem });
}

/** A single string value; a repeated form key keeps its last value. */
export function asString(name: string, value: ParamValue): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.length ? asString(name, value[value.length - 1]) : '';
  if (typeof value === 'object') return invalid(name, 'must be a string, not an object');
  const s = String(value);
  // No database stores NUL in text; refusing it here keeps both backends answering alike.
  if (s.includes('\u0000')) return invalid(name, 'must not contain NUL characters');
  return s;
}

/**
 * A reference to another resource: a plain value, or the embedded object of a whole resource
 * posted back (`{"id": 5, ...}`), from which `key` is taken.
 */
export function asReference(value: ParamValue, key: 'id' | 'number'): ParamValue {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const inner = (value as Record<string, unknown>)[key];
    return typeof inner === 'number' || typeof inner === 'string' ? inner : undefined;
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

/** Decimal digits only; `min` bounds it from below. Empty counts as not given. */
export function asInteger(name: string, value: ParamValue, min = 0): number | undefined {
  const s = asString(name, value);
  if (s === undefined || s.trim() === '') return undefined;
  const t = s.trim();
  if (!/^\d+$/.test(t)) return invalid(name, min > 0 ? `must be a whole number of at least ${min}` : 'must be a whole number');
  const n = Number(t);
  if (!Number.isSafeInteger(n)) return invalid(name, 'is too large');
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
    if (!(allowed as readonly string[]).includes(entry)) invalid(name, `"${entry}" is not one of ${allowed.join(', ')}`);
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

/** Merges query-string and body parameters, the body winning (INTERFACE.md §1). */
export function mergeParams(query: unknown, body: unknown): Record<string, ParamValue> {
  const q = query && typeof query === 'object' ? (query as Record<string, ParamValue>) : {};
  const b = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, ParamValue>) : {};
  return { ...q, ...b };
}
