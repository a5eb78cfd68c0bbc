import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { databaseFailure } from '../db/storage.js';
import {
  AppError,
  InvalidUserError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
} from '../errors.js';
import { bodyLimitOf, tooLargeMessage } from './parsers.js';

/** An error of ours, or the 503 of a database failure; undefined for anything else. */
export function knownError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  // What Fastify already found to be the client's doing stays that, whatever its code says.
  const status = (error as FastifyError | null)?.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return undefined;
  return databaseFailure(error);
}

/** The seconds of `Retry-After` that go with an error, if any. */
export function retryAfter(error: AppError | undefined): number | undefined {
  return error instanceof TooManyRequestsError || error instanceof ServiceUnavailableError
    ? error.retryAfter
    : undefined;
}

/** Turns anything thrown into the interface's error body; only unknown errors are 500s. */
function errorBody(
  error: FastifyError | Error,
  known: AppError | undefined,
  request: FastifyRequest,
): { status: number; body: Record<string, unknown> } {
  if (known) {
    return {
      status: known.statusCode,
      body: { code: known.statusCode, message: known.message, ...(known.errors ? { errors: known.errors } : {}) },
    };
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const errors: Record<string, string> = {};
    for (const v of fe.validation) {
      const name =
        v.instancePath.replace(/^\//, '').split('/')[0] ||
        String((v.params as { missingProperty?: string }).missingProperty ?? 'request');
      errors[name] ??= v.message ?? 'is invalid';
    }
    const [first] = Object.entries(errors);
    return { status: 400, body: { code: 400, message: `Invalid parameter ${first[0]}: ${first[1]}.`, errors } };
  }
  if (fe.statusCode === 413 || fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, body: { code: 413, message: tooLargeMessage(bodyLimitOf(request)) } };
  }
  if (fe.code?.startsWith('FST_ERR_CTP')) {
    const message =
      'The request body could not be read: send valid application/x-www-form-urlencoded or application/json.';
    return { status: 400, body: { code: 400, message } };
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: { code: fe.statusCode, message: fe.message } };
  }
  return { status: 500, body: { code: 500, message: 'Something went wrong on our side; it has been logged.' } };
}

/** The one error handler, and the 404 for unknown routes: every error in the interface's shape. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const known = knownError(error);
    const { status, body } = errorBody(error as Error, known, request);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    const seconds = retryAfter(known);
    if (seconds !== undefined) reply.header('Retry-After', String(seconds));
    if (error instanceof InvalidUserError && error.noCredentials)
      reply.header('WWW-Authenticate', 'Basic realm="shiplog"');
    if (error instanceof UnauthorizedError) reply.header('WWW-Authenticate', 'Bearer realm="shiplog"');
    return reply.code(status).type('application/json; charset=utf-8').send(body);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ code: 404, message: `No such endpoint: ${request.method} ${request.url.split('?')[0]}.` }),
  );
}
