import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { documentAs } from './documentation.js';

/**
 * Conditional reads (RFC 9110 §13.1.2): an answer that carries an `ETag` is answered `304 Not
 * Modified`, without a body, to a request whose `If-None-Match` names that tag (or `*`), so that
 * a client polling an item or a list gets only what changed.
 */

/** What a client may keep of an answer read with its credentials: anything, asking again before use. */
export const REVALIDATE = 'private, no-cache';

/** A strong entity tag of exactly these bytes and headers (a page's total, say). */
export function answerTag(body: Buffer, headers: readonly (readonly [string, string])[]): string {
  const hash = createHash('sha1');
  for (const [name, value] of headers) hash.update(`${name}: ${value}\n`);
  return `"${hash.update(body).digest('base64url')}"`;
}

/** An entity tag of an If-None-Match list: a quoted string, weak (`W/`) or not. */
const TAG = /\s*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(,|$)/y;

/**
 * Whether If-None-Match names `etag`, by the weak comparison the header calls for (a `W/` prefix
 * is not part of the comparison). A header that is not a list of entity tags matches nothing, so
 * the request is answered in full, as it would be without it.
 */
export function noneMatchHolds(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  const named: string[] = [];
  for (let at = 0; at < value.length; ) {
    TAG.lastIndex = at;
    const m = TAG.exec(value);
    if (!m) return false;
    named.push(m[2]);
    at += m[0].length;
  }
  return named.includes(opaque);
}

/**
 * Sets the answer's ETag and what a client may keep of it, and tells whether the request already
 * holds it: then the reply is a 304 without a body, and the caller sends nothing else.
 */
export function answeredNotModified(request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('ETag', etag).header('Cache-Control', REVALIDATE);
  if (!noneMatchHolds(request, etag)) return false;
  reply.code(304);
  return true;
}

/** The headers a conditional answer carries, for the API's description. */
export const conditionalHeaders = (etag: string) => ({
  ETag: { type: 'string', description: etag },
  'Cache-Control': {
    type: 'string',
    description:
      '`private, no-cache`: a client may keep the answer (no shared cache may), and asks again with ' +
      'If-None-Match before using it.',
  },
});

/** The 304 of a conditional read, for the API's description. */
export const notModifiedAnswer = {
  type: 'null',
  description: 'If-None-Match named the ETag the answer would carry: no body; what the client holds is current.',
  headers: { ETag: { type: 'string', description: 'The same ETag.' } },
} as const;

// Only documents the header: noneMatchHolds reads it.
export const IfNoneMatchHeader = documentAs(
  Type.Object({}),
  Type.Object({
    'If-None-Match': Type.Optional(
      Type.String({
        description:
          'ETags of answers you hold (or `*`): when one is what the answer would carry, it is a 304 without a body.',
      }),
    ),
  }),
);
