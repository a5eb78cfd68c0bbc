import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError } from '../errors.js';
import { MAX_FORM_PAIRS, Param, parseFormText } from './params.js';

/** The largest request body read (413 beyond), unless a route sets a smaller one. */
export const BODY_LIMIT = 1024 * 1024;
/**
 * The body limit of forms that carry a few short fields (sign-in, an invitation's names, an
 * unsubscribe, the pages' buttons): the longest legitimate one, a sign-in with the page to come
 * back to (2,000 characters, percent-encoded), is well under it.
 */
export const SMALL_FORM_LIMIT = 16 * 1024;

/** The most keys a JSON body may have, counted in all its objects: an item posted back whole has a few dozen. */
export const MAX_JSON_KEYS = 1_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

/**
 * Whether JSON text has more than `max` keys: the colons outside strings, counted on the bytes
 * before anything is parsed, and only as far as the one past the limit. Refusing a megabyte of
 * keys so costs a scan of its first few kilobytes, where parsing it would cost tens of
 * milliseconds and an object of a hundred thousand properties. Text that is not JSON is
 * counted all the same; the parser refuses it next.
 */
export function hasMoreJsonKeys(bytes: Buffer, max: number): boolean {
  let keys = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      // Past the string: to the next quote that an even run of backslashes precedes (none is one).
      for (;;) {
        const close = bytes.indexOf(QUOTE, i + 1);
        if (close < 0) return false;
        let slashes = 0;
        for (let j = close - 1; bytes[j] === BACKSLASH; j--) slashes++;
        i = close;
        if (slashes % 2 === 0) break;
      }
    } else if (b === COLON && ++keys > max) {
      return true;
    }
  }
  return false;
}

/** A request's own body limit, as the 413 answers name it. */
export function bodyLimitOf(request: FastifyRequest): number {
  return request.routeOptions.bodyLimit ?? BODY_LIMIT;
}

/** What a 413 says: the limit, in KiB or MiB. */
export function tooLargeMessage(limit: number, what = 'request body'): string {
  const size =
    limit >= 1024 * 1024 && limit % (1024 * 1024) === 0
      ? `${limit / (1024 * 1024)} MiB`
      : `${Math.round(limit / 1024)} KiB`;
  return `The ${what} is larger than ${size}.`;
}

const notUtf8 = () => new BadRequestError('The request body is not valid UTF-8.');
const tooManyKeys = () =>
  new BadRequestError(`The JSON body has more than ${MAX_JSON_KEYS} keys; no request of this interface needs as many.`);

/**
 * Bodies the interface reads (form-encoded and JSON), the shared parameter schema, and the rule
 * that a POST may carry all its parameters in the query string and no body at all.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.addSchema(Param);
  // An empty body carries no parameters, whatever its declared type (they may all be in the query).
  // Bodies are read as bytes and refused unless they are UTF-8: decoded as text first, bad bytes
  // would silently become U+FFFD and be stored so.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) return done(null, {});
    if (hasMoreJsonKeys(bytes, MAX_JSON_KEYS)) return done(tooManyKeys(), undefined);
    if (!isUtf8(bytes)) return done(notUtf8(), undefined);
    json(request, bytes.toString('utf8'), done);
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (_request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) return done(notUtf8(), undefined);
    let form: Record<string, string | string[]>;
    try {
      form = parseFormText(bytes.toString('utf8'), MAX_FORM_PAIRS);
    } catch (err) {
      return done(err as Error, undefined);
    }
    done(null, form);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
    (body as Buffer).length === 0
      ? done(null, {})
      : done(
          new BadRequestError('Send parameters as application/x-www-form-urlencoded or application/json.'),
          undefined,
        ),
  );

  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
  });
}
