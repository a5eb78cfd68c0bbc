import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import { clientErrorHandler, connectionOptions } from './connections.js';
import { parseFormText } from './params.js';
import { BODY_LIMIT } from './parsers.js';

/** Some clients send the absolute form (`GET http://host/api/... HTTP/1.1`); route on the path. */
function pathOnly(url: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  if (!match) return url;
  const rest = url.slice(match[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** URLs as logged: unsubscribe, invitation and sign-in tokens work as credentials, so they stay out of the logs. */
function loggedUrl(url: string): string {
  return url.replace(/^\/(unsubscribe|invitations|app\/sign-in)\/[^/?#]+/, '/$1/[token]');
}

/** One log line per request, written when it completes. */
class RequestLine extends LogController {
  override incomingRequest(): void {}
  override routeNotFound(): void {}
  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    request.log.info(
      { method: request.method, url: loggedUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  }
}

/** How Fastify is set up for the service: logging, limits, timeouts and URL handling. */
export function serverOptions(config: Config, logger: FastifyServerOptions['logger']): FastifyServerOptions {
  return {
    logger: logger ?? { level: config.logLevel },
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
    // While shutting down, requests in flight and on open connections are still answered.
    return503OnClosing: false,
    // Errors Fastify meets before routing (a malformed URL) get the interface's shape too.
    frameworkErrors: (error, _request, reply) => {
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 400;
      void (reply as FastifyReply).code(status).send({ code: status, message: 'The request URL could not be read.' });
    },
  };
}
