import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { BadRequestError } from '../errors.js';
import { Param, parseFormText } from './params.js';

/** The largest request body read (413 beyond). */
export const BODY_LIMIT = 1024 * 1024;

const notUtf8 = () => new BadRequestError('The request body is not valid UTF-8.');

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
    if (!isUtf8(bytes)) return done(notUtf8(), undefined);
    json(request, bytes.toString('utf8'), done);
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (_request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) return done(notUtf8(), undefined);
    done(null, parseFormText(bytes.toString('utf8')));
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
    (body as Buffer).length === 0
      ? done(null, {})
      : done(new BadRequestError('Send parameters as application/x-www-form-urlencoded or application/json.'), undefined),
  );

  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
  });
}
