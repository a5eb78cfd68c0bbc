import type { UserRow } from '../db/schema.js';

/** `@name`, not inside a word or an address (`a@b.c` mentions nobody). */
const MENTION = /(?<![\p{L}\p{N}_.@+-])@([\p{L}\p{N}][\p{L}\p{N}._%+-]*)/gu;
/** The most distinct names one comment may mention. */
const MAX_MENTIONS = 50;

/** Members by a key that names them alone: keys that several share name nobody. */
function uniqueBy(members: readonly UserRow[], key: (m: UserRow) => string): Map<string, number> {
  const found = new Map<string, number | null>();
  for (const m of members) {
    const k = key(m).toLowerCase();
    if (k !== '') found.set(k, found.has(k) ? null : m.id);
  }
  return new Map([...found].filter((e): e is [string, number] => e[1] !== null));
}

/**
 * The members a comment mentions: `@` followed by the part of their email before the `@`, or by
 * their first name when no other member has it (in any case; a name several members share
 * mentions none of them). Punctuation ending a sentence after the name is not part of it.
 */
export function mentionedIn(body: string, members: readonly UserRow[]): number[] {
  const names = new Set<string>();
  for (const match of body.matchAll(MENTION)) {
    names.add(match[1].replace(/[._%+-]+$/, '').toLowerCase());
    if (names.size >= MAX_MENTIONS) break;
  }
  if (names.size === 0) return [];
  const byLocal = uniqueBy(members, (m) => m.email.slice(0, m.email.lastIndexOf('@')));
  const byFirst = uniqueBy(members, (m) => m.first_name.trim());
  const ids = new Set<number>();
  for (const name of names) {
    const id = byLocal.get(name) ?? byFirst.get(name);
    if (id !== undefined) ids.add(id);
  }
  return [...ids];
}
