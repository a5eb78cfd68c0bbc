import { isUtf8 } from 'node:buffer';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Config } from './config.js';
import { isDatabaseUnavailable, type Db } from './db/connection.js';
import type { ProductScope } from './scope.js';
import type { UserRow } from './db/schema.js';
import { deployRoutes } from './deploys/routes.js';
import { AppError, BadRequestError, InvalidUserError, TooManyRequestsError } from './errors.js';
import { answerExpectations, capConnections, clientErrorHandler, connectionOptions } from './http/connections.js';
import { requireMember, requireUser } from './http/hooks.js';
import { Param, parseFormText } from './http/params.js';
import { ListCounts } from './items/counts.js';
import { invitationRoutes } from './invitations/routes.js';
import { itemRoutes, shortUrlRoutes } from './items/routes.js';
import { healthRoutes } from './health.js';
import { unsubscribeRoutes } from './mail/routes.js';
import { emlTransport, smtpTransport, type MailTransport } from './mail/transport.js';
import { UnsubscribeLinks } from './mail/unsubscribe.js';
import { DEFAULT_WORKER_OPTIONS, OutboxWorker, type WorkerOptions } from './mail/worker.js';
import { sharedSecret } from './settings.js';
import { productMemberRoutes, productRoutes } from './products/routes.js';
import { userRoutes } from './users/routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
    config: Config;
    outbox: OutboxWorker;
    unsubscribeLinks: UnsubscribeLinks;
    listCounts: ListCounts;
  }
  interface FastifyRequest {
    user: UserRow;
    scope: ProductScope;
  }
}

export interface AppOptions {
  config: Config;
  db: Db;
  /** pino options, or false for none (tests). Defaults to the configured level. */
  logger?: FastifyServerOptions['logger'];
  mailTransport?: MailTransport;
  /** Start the outbox worker's timer (the server does; tests deliver by hand). */
  startWorker?: boolean;
  worker?: Partial<WorkerOptions>;
}

const BODY_LIMIT = 1024 * 1024;

const notUtf8 = () => new BadRequestError('The request body is not valid UTF-8.');

/** Some clients send the absolute form (`GET http://host/api/... HTTP/1.1`); route on the path. */
function pathOnly(url: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  if (!match) return url;
  const rest = url.slice(match[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** URLs as logged: unsubscribe and invitation tokens work as credentials, so they stay out of the logs. */
function loggedUrl(url: string): string {
  return url.replace(/^\/(unsubscribe|invitations)\/[^/?#]+/, '/$1/[token]');
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

/** Turns anything thrown into the interface's error body; only unknown errors are 500s. */
function errorBody(error: FastifyError | AppError | Error): { status: number; body: Record<string, unknown> } {
  if (error instanceof AppError) {
    return { status: error.statusCode, body: { code: error.statusCode, message: error.message, ...(error.errors ? { errors: error.errors } : {}) } };
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const errors: Record<string, string> = {};
    for (const v of fe.validation) {
      const name = v.instancePath.replace(/^\//, '').split('/')[0] || String((v.params as { missingProperty?: string }).missingProperty ?? 'request');
      errors[name] ??= v.message ?? 'is invalid';
    }
    const [first] = Object.entries(errors);
    return { status: 400, body: { code: 400, message: `Invalid parameter ${first[0]}: ${first[1]}.`, errors } };
  }
  if (fe.statusCode === 413 || fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, body: { code: 413, message: 'The request body is larger than 1 MiB.' } };
  }
  if (fe.code?.startsWith('FST_ERR_CTP')) {
    const message = 'The request body could not be read: send valid application/x-www-form-urlencoded or application/json.';
    return { status: 400, body: { code: 400, message } };
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: { code: fe.statusCode, message: fe.message } };
  }
  if (isDatabaseUnavailable(error)) {
    return { status: 503, body: { code: 503, message: 'The database cannot be reached right now; try again in a few seconds.' } };
  }
  return { status: 500, body: { code: 500, message: 'Something went wrong on our side; it has been logged.' } };
}

/** Builds the whole service; the server and the tests both start here. It never listens. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, db } = options;
  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
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
  });

  capConnections(app.server, config.maxConnections, app.log);
  answerExpectations(app.server);
  app.decorate('db', db);
  app.decorate('config', config);
  const transport = options.mailTransport ?? (config.smtpUrl ? smtpTransport(config.smtpUrl) : emlTransport(config.dataDir));
  const links = new UnsubscribeLinks(config.publicUrl, await sharedSecret(db, 'unsubscribe_key'));
  const outbox = new OutboxWorker(db, transport, { from: config.mailFrom, publicUrl: config.publicUrl }, links, app.log, {
    ...DEFAULT_WORKER_OPTIONS,
    leaseMs: config.mailLeaseSeconds * 1000,
    sendTimeoutMs: config.mailSendTimeoutSeconds * 1000,
    probeIntervalMs: config.mailProbeSeconds * 1000,
    // Every send ends within its deadline, so a round silent for three of them is stuck elsewhere.
    stuckRoundMs: config.mailSendTimeoutSeconds * 3000,
    ...options.worker,
  });
  app.decorate('outbox', outbox);
  app.decorate('unsubscribeLinks', links);
  app.decorate('listCounts', new ListCounts());
  app.decorateRequest('user', null as unknown as UserRow);
  app.decorateRequest('scope', null as unknown as ProductScope);

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

  app.setErrorHandler((error, request, reply) => {
    const { status, body } = errorBody(error as Error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (status === 503) reply.header('Retry-After', '5');
    if (error instanceof InvalidUserError && error.noCredentials) reply.header('WWW-Authenticate', 'Basic realm="shiplog"');
    if (error instanceof TooManyRequestsError) reply.header('Retry-After', String(error.retryAfter));
    return reply.code(status).type('application/json; charset=utf-8').send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ code: 404, message: `No such endpoint: ${request.method} ${request.url.split('?')[0]}.` }),
  );

  // A POST may carry all its parameters in the query string and no body at all.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.method !== 'GET' && request.method !== 'HEAD') request.body = {};
  });

  await app.register(healthRoutes);
  await app.register(shortUrlRoutes);
  await app.register(unsubscribeRoutes);
  await app.register(invitationRoutes);
  await app.register(async (api) => {
    api.addHook('onRequest', requireUser(db));
    await api.register(userRoutes);
    await api.register(productRoutes);
    await api.register(async (member) => {
      member.addHook('onRequest', requireMember(db));
      await member.register(productMemberRoutes);
      await member.register(itemRoutes);
      await member.register(deployRoutes);
    });
  });

  if (options.startWorker) app.addHook('onReady', async () => outbox.start());
  app.addHook('onClose', async () => {
    await outbox.stop();
    transport.close();
  });
  return app;
}
