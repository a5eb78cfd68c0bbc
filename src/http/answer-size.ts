import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { nextTurn } from '../turns.js';

/**
 * Answers bounded in bytes. Pages are bounded in entries, but an entry's size is chosen by whoever
 * wrote it (an item is up to a few hundred KiB), so a page of them is also bounded in bytes
 * (`Config.maxAnswerBytes`): entries are serialized one at a time, by the same compiled schemas
 * as the whole answer, and the page ends before the one that would take it past the bound.
 */

/** The header that says where the next page starts, whenever entries remain after this one. */
export const NEXT_OFFSET = 'X-Sprintly-Next-Offset';

export const nextOffsetHeader = {
  [NEXT_OFFSET]: {
    type: 'integer',
    // Not on every answer: a header the document marks so is not expected on each (test/openapi.test.ts).
    'x-present-when': 'entries remain after this page',
    description:
      'The offset of the next page, given whenever entries remain after this one. ' +
      'A page can end before `limit` to stay within the size bound of an answer; continue from here.',
  },
} as const;

export type Serialize<T> = (value: T) => string;

/** What the route's own serializer would write for a value of `schema` (compiled once per schema by Fastify). */
export const serializerOf = <T>(reply: FastifyReply, schema: TSchema): Serialize<T> =>
  reply.compileSerializationSchema(schema) as Serialize<T>;

/**
 * How many leading entries may fit in `room` bytes, given what each takes at least (the first
 * always): those after cannot, so they need not be read, presented nor serialized only to be cut.
 */
export function leadingWithin(least: readonly number[], room: number): number {
  let bytes = 0;
  for (let i = 0; i < least.length; i++) {
    bytes += least[i];
    if (bytes > room && i > 0) return i;
  }
  return least.length;
}

/** Serialized bytes after which fitting steps aside for other requests (see nextTurn). */
const STEP = 1024 * 1024;

/**
 * Entries serialized one by one, each at most once, for fitting them into a bound more than once.
 * Serializing megabytes of entries is work for the one JavaScript thread, so it lets other
 * requests in after every megabyte or so.
 */
export class SerializedEntries<T> {
  private readonly done: string[] = [];
  private sinceTurn = 0;

  constructor(
    readonly entries: readonly T[],
    private readonly serialize: Serialize<T>,
  ) {}

  private async at(index: number): Promise<string> {
    let piece = this.done[index];
    if (piece === undefined) {
      if (this.sinceTurn > STEP) {
        this.sinceTurn = 0;
        await nextTurn();
      }
      piece = this.done[index] = this.serialize(this.entries[index]);
      this.sinceTurn += piece.length;
    }
    return piece;
  }

  /**
   * The leading entries whose JSON array (brackets and commas included) takes at most `room`
   * bytes, and its size; with `atLeastOne`, the first entry even if it alone takes more, so that
   * a page always moves on.
   */
  async fit(room: number, atLeastOne: boolean): Promise<{ pieces: string[]; bytes: number }> {
    const pieces: string[] = [];
    let bytes = 2;
    for (let i = 0; i < this.entries.length; i++) {
      const piece = await this.at(i);
      const size = Buffer.byteLength(piece) + (i > 0 ? 1 : 0);
      if (bytes + size > room && !(atLeastOne && i === 0)) break;
      pieces.push(piece);
      bytes += size;
    }
    return { pieces, bytes };
  }
}

/**
 * The leading pieces whose JSON array (brackets and commas included) takes at most `room` bytes,
 * the first even if it alone takes more, so that a page always moves on; joined as that array.
 */
export function piecesWithin(pieces: readonly { json: Buffer }[], room: number): { body: Buffer; count: number } {
  const parts: Buffer[] = [OPEN];
  let bytes = 2;
  let count = 0;
  for (const piece of pieces) {
    bytes += piece.json.length + (count > 0 ? 1 : 0);
    if (bytes > room && count > 0) break;
    if (count > 0) parts.push(COMMA);
    parts.push(piece.json);
    count++;
  }
  parts.push(CLOSE);
  return { body: Buffer.concat(parts), count };
}
const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

export const jsonArray = (pieces: readonly string[]): string => `[${pieces.join(',')}]`;

/**
 * A page of `entries` as a JSON array of at most `budget` bytes (at least one entry), and how many
 * entries it holds. Entries are serialized only until the bound is reached.
 */
export async function boundedPage<T>(
  entries: readonly T[],
  serialize: Serialize<T>,
  budget: number,
): Promise<{ json: string; count: number }> {
  const { pieces } = await new SerializedEntries(entries, serialize).fit(budget, true);
  return { json: jsonArray(pieces), count: pieces.length };
}

/**
 * `json`, an object serialized with `"key":[]`, with that array filled with `pieces`. The first
 * occurrence is the object's own key, wherever it stands: inside any string before it every `"` is
 * written `\"`, so the text `"key":[]` cannot occur there, and callers name keys that the nested
 * objects before it do not have.
 */
export function fillArray(json: string, key: string, pieces: readonly string[]): string {
  const empty = `"${key}":[]`;
  const at = json.indexOf(empty);
  if (at < 0) throw new Error(`no empty "${key}" in the serialized object`);
  return `${json.slice(0, at)}"${key}":${jsonArray(pieces)}${json.slice(at + empty.length)}`;
}
