import ValidatorSelector from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import { clientErrorHandler, connectionOptions } from './connections.js';
import { parseFormText } from './params.js';
import { BODY_LIMIT } from './parsers.js';
import { EARLY_ANSWER_HEADERS } from './security-headers.js';

/** Some clients send the absolute form (`GET http://host/api/... HTTP/1.1`); route on the path. */
function pathOnly(url: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  if (!match) return url;
  const rest = url.slice(match[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** A path segment with a run this long of letters, digits, `-` or `_` may be a key or a token. */
const TOKEN_LIKE = /[A-Za-z0-9_-]{20}/;

/**
 * URLs as logged: the path alone, with the token of an unsubscribe, invitation or sign-in link
 * replaced (they work as credentials), and so any segment that looks like a key or token (a client
 * may put one in the wrong place). No path of the interface has such a segment. The query string
 * is left out, since a client may put anything there, a key included.
 */
export function loggedUrl(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path
    .replace(/^\/(unsubscribe|invitations|app\/sign-in)\/[^/]+/i, '/$1/[token]')
    .split('/')
    .map((segment) => (TOKEN_LIKE.test(segment) ? '[token]' : segment))
    .join('/');
}

/** Where credentials would show up if a request or reply were ever logged whole. */
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
];

/**
 * pino's options: the configured level (unless the caller's options say otherwise: tests give a
 * stream), credential headers redacted, and requests serialized with their URL as logged.
 */
function loggerOptions(config: Config, logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (logger === false) return false;
  return {
    level: config.logLevel,
    ...(typeof logger === 'object' ? logger : {}),
    redact: { paths: REDACTED, censor: '[redacted]' },
    serializers: {
      req: (request) => ({
        method: request.method,
        url: loggedUrl(request.url),
        remoteAddress: (request as FastifyRequest).ip,
      }),
    },
  };
}

/** The levels at which the request lines are written. */
const LINE_LEVELS = new Set(['trace', 'debug', 'info']);

/** One log line per request, written when it completes. */
class RequestLine extends LogController {
  override incomingRequest(): void {}
  override routeNotFound(): void {}
  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // The line is built only when it is written (a busy server at `warn` writes none).
    if (!LINE_LEVELS.has(request.log.level)) return;
    request.log.info(
      {
        method: request.method,
        url: loggedUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
}

/**
 * Pages under a prefix answer their errors as pages: `answer` sends one, for a request under
 * `prefix` whose URL Fastify could not read (so no route, and none of the pages' own handlers, ran).
 */
export interface PageErrors {
  prefix: string;
  answer(request: FastifyRequest, reply: FastifyReply, status: number, message: string): unknown;
}

const isUnder = (url: string, prefix: string): boolean =>
  url.startsWith(prefix) && (url.length === prefix.length || '/?#'.includes(url[prefix.length]));

/** How Fastify is set up for the service: logging, limits, timeouts and URL handling. */
/**
 * Fastify's response serializers (fast-json-stringify, from each route's response schemas),
 * each compiled when its route first answers with that status rather than when the route is
 * registered: compiling all of them took a fifth of start-up, mostly for answers (error
 * statuses of rare routes) that a process may never send.
 */
function lazySerializers(): NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>['buildSerializer'] {
  const select = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = select(externalSchemas as never, options as never);
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => {
        serialize ??= compile(route as never) as (data: unknown) => string;
        return serialize(data);
      };
    };
  };
}

/**
 * Fastify's request validators (Ajv, from each route's params, query and body schemas), likewise
 * compiled when their route is first asked for. The selector is shared by every app of the
 * process, so apps built alike reuse one Ajv, and Ajv's cache of schemas it has compiled.
 */
const sharedValidators = ValidatorSelector();
function lazyValidators(): NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>['buildValidator'] {
  return ((externalSchemas: unknown, options: unknown) => {
    const compile = sharedValidators(externalSchemas as never, options as never);
    return (route: unknown) => {
      let validate: ((data: unknown) => unknown) & { errors?: unknown };
      const lazy = (data: unknown) => {
        validate ??= compile(route as never) as typeof validate;
        const valid = validate(data);
        lazy.errors = validate.errors;
        return valid;
      };
      lazy.errors = undefined as unknown;
      return lazy;
    };
  }) as never;
}

export function serverOptions(
  config: Config,
  logger: FastifyServerOptions['logger'],
  pages?: PageErrors,
): FastifyServerOptions {
  return {
    logger: loggerOptions(config, logger),
    logController: new RequestLine(),
    bodyLimit: BODY_LIMIT,
    ...connectionOptions(config),
    clientErrorHandler: clientErrorHandler(config),
    rewriteUrl: (req) => pathOnly(req.url ?? '/'),
    // Unsubscribe tokens (a Message-ID and its signature) are longer than the default 100.
    // Query strings are decoded strictly, like form bodies: text that is not UTF-8 is refused.
    routerOptions: { maxParamLength: 1000, querystringParser: parseFormText },
    // Parameters all name the one shared Param schema; referenced, not copied into every field,
    // it compiles once instead of once per field of every route (most of start-up otherwise).
    ajv: { customOptions: { inlineRefs: false } },
    schemaController: { compilersFactory: { buildValidator: lazyValidators(), buildSerializer: lazySerializers() } },
    // While shutting down, requests in flight and on open connections are still answered.
    return503OnClosing: false,
    // Errors Fastify meets before routing (a malformed URL) get the interface's shape too, or
    // under the pages' prefix a page.
    frameworkErrors: (error, request, reply) => {
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 400;
      const message = 'The request URL could not be read.';
      (reply as FastifyReply).headers(EARLY_ANSWER_HEADERS);
      if (pages && isUnder(pathOnly(request.url), pages.prefix))
        return void pages.answer(request, reply as FastifyReply, status, message);
      void (reply as FastifyReply).code(status).send({ code: status, message });
    },
  };
}
