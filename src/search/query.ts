import { foldTag } from '../db/tags.js';
import { ValidationError } from '../errors.js';
import { ITEM_TYPES, STATUS_NAMES, type Status } from '../items/index.js';

/**
 * The search language (docs/INTERFACE.md "Searching items"), read into a query that neither
 * database's syntax reaches: words are cut into tokens of letters and digits, the way both indexes
 * cut the text, so nothing a person types is ever spliced into a match expression. Pure: the
 * board's filter reads the same language through `parseSearchQuery`.
 */

/** A word or phrase: its tokens, matched next to each other and in order. */
export type Tokens = string[];

/** Who a person term names: the caller, an address, or the part of addresses before `@`. */
export type PersonRef = { me: true } | { email: string } | { local: string };

export type Condition =
  | { kind: 'tag'; tag: string }
  | { kind: 'type'; type: string }
  | { kind: 'status'; status: Status }
  | { kind: 'assignee' | 'author'; person: PersonRef }
  | { kind: 'product'; id: number }
  | { kind: 'open' | 'closed' | 'blocked' | 'favorite' | 'comments' }
  | { kind: 'deployed' | 'not-deployed'; environment: string }
  | { kind: 'number'; number: number };

export interface Term {
  negated: boolean;
  condition: Condition;
}

export interface SearchQuery {
  /** Words and phrases that must all match, in any order. */
  text: Tokens[];
  /** Whether the last token of the last entry of `text` matches as the start of a word (as people type). */
  prefix: boolean;
  /** Words and phrases no match may contain. */
  excluded: Tokens[];
  /** The field terms; see `conditionsByKind` for how they combine. */
  terms: Term[];
}

/** Bounds of what a query may hold. */
export const QUERY_LIMITS = { characters: 500, terms: 32, tokenCharacters: 100, value: 255 } as const;

/** A prefix of fewer letters than this matches as a whole word: one or two letters would read most of the index. */
export const MIN_PREFIX = 3;

const TOKEN = /[\p{L}\p{N}]+/gu;

/** The tokens of a text: runs of letters and digits, in lower case. */
export function tokensOf(text: string): Tokens {
  return (text.normalize('NFC').toLowerCase().match(TOKEN) ?? []).map((t) => t.slice(0, QUERY_LIMITS.tokenCharacters));
}

const unreadable = (term: string, why: string): never => {
  throw new ValidationError({ q: `cannot read "${term}": ${why}` }, `Cannot read the search term "${term}": ${why}.`);
};

/** The pieces of a query: a leading `-`, an optional `field:`, and a value that may be quoted. */
interface Piece {
  raw: string;
  /** Where it stands in the query: `raw` is `q.slice(start, end)`. */
  start: number;
  end: number;
  negated: boolean;
  field?: string;
  value: string;
  quoted: boolean;
}

/** Splits a query at spaces outside quotes; an unclosed quote runs to the end (people are still typing). */
function piecesOf(q: string): Piece[] {
  const pieces: Piece[] = [];
  let i = 0;
  while (i < q.length) {
    while (i < q.length && /\s/u.test(q[i])) i++;
    if (i >= q.length) break;
    const start = i;
    const negated = q[i] === '-' && i + 1 < q.length && !/\s/u.test(q[i + 1]);
    if (negated) i++;
    let field: string | undefined;
    const named = /^([a-z][a-z-]*):/i.exec(q.slice(i, i + 40));
    if (named) {
      field = named[1].toLowerCase();
      i += named[0].length;
    }
    let value = '';
    let quoted = false;
    if (q[i] === '"') {
      quoted = true;
      const end = q.indexOf('"', i + 1);
      value = q.slice(i + 1, end < 0 ? q.length : end);
      i = end < 0 ? q.length : end + 1;
    } else {
      const from = i;
      while (i < q.length && !/\s/u.test(q[i])) i++;
      value = q.slice(from, i);
    }
    pieces.push({ raw: q.slice(start, i), start, end: i, negated, field, value, quoted });
  }
  return pieces;
}

const IS_VALUES = { open: 'open', closed: 'closed', blocked: 'blocked', favorite: 'favorite' } as const;

function personOf(piece: Piece): PersonRef {
  const v = piece.value.trim().toLowerCase();
  if (!v) return unreadable(piece.raw, 'name someone: me, an email address, or the part before @');
  if (v === 'me') return { me: true };
  if (v.includes('@')) return { email: v };
  return { local: v };
}

/** A field term's condition; an unknown field or value is a 400 naming the term. */
function conditionOf(piece: Piece): Condition {
  const value = piece.value.trim();
  if (value.length > QUERY_LIMITS.value) return unreadable(piece.raw, `at most ${QUERY_LIMITS.value} characters`);
  switch (piece.field) {
    case 'tag':
      return value ? { kind: 'tag', tag: value } : unreadable(piece.raw, 'name a tag');
    case 'type':
      return (ITEM_TYPES as readonly string[]).includes(value.toLowerCase())
        ? { kind: 'type', type: value.toLowerCase() }
        : unreadable(piece.raw, `the type is one of ${ITEM_TYPES.join(', ')}`);
    case 'status':
      return (STATUS_NAMES as readonly string[]).includes(value.toLowerCase())
        ? { kind: 'status', status: value.toLowerCase() as Status }
        : unreadable(piece.raw, `the status is one of ${STATUS_NAMES.join(', ')}`);
    case 'assignee':
    case 'author':
      return { kind: piece.field, person: personOf(piece) };
    case 'product':
      return /^\d{1,9}$/.test(value) ? { kind: 'product', id: Number(value) } : unreadable(piece.raw, 'a product id');
    case 'is': {
      const kind = IS_VALUES[value.toLowerCase() as keyof typeof IS_VALUES];
      return kind ? { kind } : unreadable(piece.raw, 'is: takes open, closed, blocked or favorite');
    }
    case 'has':
      return value.toLowerCase() === 'comments' ? { kind: 'comments' } : unreadable(piece.raw, 'has: takes comments');
    case 'deployed':
    case 'not-deployed':
      return value ? { kind: piece.field, environment: value } : unreadable(piece.raw, 'name an environment');
    default:
      return unreadable(piece.raw, `unknown field "${piece.field}:" (quote it to search for the text)`);
  }
}

/**
 * Reads a search query. Throws a ValidationError naming `q` and the term it cannot read: an
 * unknown field or value, `#` without a number, a query past its bounds.
 */
export function parseSearchQuery(q: string): SearchQuery {
  if ([...q].length > QUERY_LIMITS.characters)
    throw new ValidationError({ q: `must be at most ${QUERY_LIMITS.characters} characters` });
  const query: SearchQuery = { text: [], prefix: false, excluded: [], terms: [] };
  const pieces = piecesOf(q);
  if (pieces.length > QUERY_LIMITS.terms) throw new ValidationError({ q: `at most ${QUERY_LIMITS.terms} terms` });
  let lastIsWord = false;
  for (const piece of pieces) {
    lastIsWord = false;
    if (piece.field !== undefined) {
      query.terms.push({ negated: piece.negated, condition: conditionOf(piece) });
    } else if (!piece.quoted && piece.value.startsWith('#')) {
      const digits = piece.value.slice(1);
      if (!/^\d{1,9}$/.test(digits)) unreadable(piece.raw, '# takes an item number');
      query.terms.push({ negated: piece.negated, condition: { kind: 'number', number: Number(digits) } });
    } else {
      const tokens = tokensOf(piece.value);
      if (!tokens.length) continue;
      (piece.negated ? query.excluded : query.text).push(tokens);
      lastIsWord = !piece.negated && !piece.quoted;
    }
  }
  const last = query.text.at(-1);
  query.prefix = lastIsWord && !/\s$/u.test(q) && last !== undefined && [...last.at(-1)!].length >= MIN_PREFIX;
  return query;
}

/** Whether what the query matches depends on who asks (`assignee:me`, `author:me`, `is:favorite`). */
export const namesCaller = (q: SearchQuery): boolean =>
  q.terms.some(({ condition: c }) => c.kind === 'favorite' || ('person' in c && 'me' in c.person));

/** Whether the query has words or phrases to look up in the index (or only terms on the items' fields). */
export const hasText = (q: SearchQuery): boolean => q.text.length > 0;

/** A field term of a query as written (`status:backlog`, `-tag:"needs review"`, `#12`), and where it stands. */
export interface WrittenTerm {
  raw: string;
  start: number;
  end: number;
}

/** The field terms (and `#N`) of a query as written, in order: what a page offers to take out again. */
export function writtenTerms(q: string): WrittenTerm[] {
  return piecesOf(q)
    .filter((p) => p.field !== undefined || (!p.quoted && p.value.startsWith('#')))
    .map(({ raw, start, end }) => ({ raw, start, end }));
}

/** The query without one of its written terms. */
export function withoutTerm(q: string, term: WrittenTerm): string {
  return `${q.slice(0, term.start).trimEnd()} ${q.slice(term.end).trimStart()}`.trim();
}

/**
 * A field term as the language reads it back: `tag:ui`, `tag:"needs review"`; undefined for a value
 * no term can hold (empty, or with a double quote, which ends a quoted value).
 */
export function fieldTerm(field: 'tag' | 'type' | 'status' | 'assignee', value: string): string | undefined {
  if (!value || value.includes('"') || value.length > QUERY_LIMITS.value) return undefined;
  return /\s/u.test(value) ? `${field}:"${value}"` : `${field}:${value}`;
}

/**
 * The query with `term` added. When its last word is read as the start of a word (as people
 * type), the term goes before that word, which stays last and so keeps matching as a prefix.
 */
export function withTerm(q: string, term: string): string {
  const trimmed = q.trim();
  if (!parseQuietly(q)?.prefix) return `${trimmed} ${term}`.trim();
  const last = piecesOf(q).at(-1)!;
  return `${q.slice(0, last.start).trimEnd()} ${term} ${q.slice(last.start).trim()}`.trim();
}

const parseQuietly = (q: string): SearchQuery | undefined => {
  try {
    return parseSearchQuery(q);
  } catch {
    return undefined;
  }
};

/**
 * Where in `text` the query's words match (start and end of each word, in UTF-16 units of `text`):
 * every word whose tokens are one of the query's words or phrases' tokens, or, for the word typed
 * last, start with it. Whole words only, so what marks them never cuts a word, let alone markup.
 */
export function matchedSpans(text: string, query: SearchQuery): [number, number][] {
  return [...spansOf(text, query)];
}

/** `matchedSpans` one at a time, so that a caller needing the first few stops reading there. */
function* spansOf(text: string, query: SearchQuery): Generator<[number, number]> {
  const words = new Set(query.text.flat());
  const prefix = query.prefix ? query.text.at(-1)?.at(-1) : undefined;
  if (!words.size) return;
  for (const m of text.matchAll(TOKEN)) {
    const [token = ''] = tokensOf(m[0]);
    if (words.has(token) || (prefix !== undefined && token.startsWith(prefix)))
      yield [m.index!, m.index! + m[0].length];
  }
}

/** A piece of a text: the words a query matched are marked (whoever shows it escapes every piece). */
export interface MarkedPiece {
  text: string;
  marked: boolean;
}

/** `text` cut into pieces at the spans given (in order, not overlapping), those spans marked. */
function piecesAt(text: string, spans: [number, number][], from = 0, to = text.length): MarkedPiece[] {
  const pieces: MarkedPiece[] = [];
  let at = from;
  for (const [start, end] of spans) {
    if (start < from || end > to) continue;
    if (start > at) pieces.push({ text: text.slice(at, start), marked: false });
    pieces.push({ text: text.slice(start, end), marked: true });
    at = end;
  }
  if (at < to) pieces.push({ text: text.slice(at, to), marked: false });
  return pieces;
}

/** A text cut into pieces, the words the query matched (as `matchedSpans` finds them) marked. */
export const matchedPieces = (text: string, query: SearchQuery): MarkedPiece[] =>
  piecesAt(text, matchedSpans(text, query));

/** A tag cut into pieces: all of it marked when a `tag:` term of the query names it, else the words matched. */
export function matchedTag(tag: string, query: SearchQuery): MarkedPiece[] {
  const named = query.terms.some(
    (t) => !t.negated && t.condition.kind === 'tag' && foldTag(t.condition.tag) === foldTag(tag),
  );
  return named ? [{ text: tag, marked: true }] : matchedPieces(tag, query);
}

/** Whether every word and phrase word of the query is one of the text's (the last as a prefix while typing). */
export function showsEveryWord(text: string, query: SearchQuery): boolean {
  const tokens = new Set(tokensOf(text));
  const prefix = query.prefix ? query.text.at(-1)?.at(-1) : undefined;
  return query.text
    .flat()
    .every((word) => tokens.has(word) || (word === prefix && [...tokens].some((t) => t.startsWith(prefix))));
}

/** About how many characters an excerpt holds, the ellipses left out. */
export const EXCERPT_CHARACTERS = 160;
/**
 * How much of a text an excerpt reads: a page of results excerpts each of its descriptions, which
 * may be 64 KB each; past this, a match shows in the title or tags, or not at all.
 */
export const EXCERPT_READS = 8_000;

/**
 * Markdown source as the text it reads as, simply: links and images by their text (targets and
 * reference definitions dropped), without the marks of headings, quotes, lists, emphasis (at the
 * edges of words: `snake_case` and `2*3` are text), code and tables, every run of white space one
 * space. HTML stays as written: it is text to whoever escapes it. No pattern can backtrack far (a
 * class never runs over the character that ends it), so a long description costs linear time.
 */
export function markdownText(source: string): string {
  return source
    .replace(/^[ \t]*\[[^[\]\n]*\]:[^\n]*$/gm, ' ')
    .replace(/!?\[([^[\]\n]*)\](?:\([^()\s]*(?:[ \t]+"[^"\n]*")?\)|\[[^[\]\n]*\])?/g, '$1')
    .replace(/^[ \t]*(?:(?:[-*_][ \t]*){3,}|(?:```|~~~)[^\n]*)$/gm, ' ')
    .replace(/^[ \t]*(?:>[ \t]*)*(?:[-+][ \t]|\d{1,9}[.)][ \t])?/gm, '')
    .replace(/`+|~~|(?<!\S)#+(?!\S)|(?<![\p{L}\p{N}])[*_]+|[*_]+(?![\p{L}\p{N}])/gu, '')
    .replace(/\|/g, ' ')
    .replace(/\s+/gu, ' ')
    .trim();
}

/** Whether a string may be cut before `i` without splitting a surrogate pair. */
const cuttable = (text: string, i: number) => !/[\uDC00-\uDFFF]/.test(text[i] ?? '');

/** Where an excerpt of `plain` around the span `[first, firstEnd)` starts and ends: at spaces where it can. */
function excerptBounds(plain: string, [first, firstEnd]: [number, number], length: number): [number, number] {
  let from = Math.max(0, Math.min(first - Math.floor(length / 4), plain.length - length));
  if (from > 0 && plain[from - 1] !== ' ') {
    const space = plain.indexOf(' ', from);
    from = space >= 0 && space < first ? space + 1 : first;
  }
  let to = Math.max(firstEnd, Math.min(plain.length, from + length));
  if (to < plain.length && plain[to] !== ' ') {
    const space = plain.lastIndexOf(' ', to);
    to = space > firstEnd ? space : to;
    while (!cuttable(plain, to)) to++;
  }
  return [from, to];
}

/**
 * A short excerpt of `text` (about `EXCERPT_CHARACTERS`) around the first word the query matches,
 * cut at spaces where it can be, with "…" where it was cut, the matched words marked (the rules of
 * `matchedSpans`); undefined when no word of the text matches. `markdown` reads the text as
 * Markdown source first (`markdownText`); white space is always collapsed.
 */
export function matchedExcerpt(
  text: string,
  query: SearchQuery,
  { markdown = false, length = EXCERPT_CHARACTERS }: { markdown?: boolean; length?: number } = {},
): MarkedPiece[] | undefined {
  const read =
    text.length > EXCERPT_READS ? text.slice(0, EXCERPT_READS - (cuttable(text, EXCERPT_READS) ? 0 : 1)) : text;
  const plain = markdown ? markdownText(read) : read.replace(/\s+/gu, ' ').trim();
  const found = spansOf(plain, query);
  const { value: first, done } = found.next();
  if (done) return undefined;
  const [from, to] = excerptBounds(plain, first, length);
  const spans = [first];
  for (const span of found) {
    if (span[0] >= to) break;
    spans.push(span);
  }
  const pieces = piecesAt(plain, spans, from, to);
  if (from > 0) pieces.unshift({ text: '\u2026', marked: false });
  if (to < plain.length || read !== text) pieces.push({ text: '\u2026', marked: false });
  return pieces;
}
