import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { databaseFailure } from '../db/storage.js';
import {
  AppError,
  InvalidUserError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
} from '../errors.js';
import { BODY_LIMIT, bodyLimitOf, tooLargeMessage } from './parsers.js';

/**
 * What an error means for the one who asked, whatever threw it: the API writes it as its error
 * body, a page shows it (next to a field, when it concerns one). Decided here only.
 */
export interface ErrorAnswer {
  status: number;
  /**
   * A machine code: an AppError's own, or for what Fastify refused `malformed_parameter` (a value
   * the route's schema refuses), `body_too_large`, `unreadable_body` or `client_error`; `internal`
   * for anything unknown.
   */
  code: string;
  /** For people; an unknown error's own text is never given, only that it was logged. */
  message: string;
  /** The parameter the error concerns, when one does. */
  parameter?: string;
  /** Each offending parameter with its problem, as the API's body names them. */
  errors?: Record<string, string>;
  /** Headers that go with the status (Retry-After, WWW-Authenticate). */
  headers: Record<string, string>;
}

const INTERNAL = 'Something went wrong on our side; it has been logged.';
const UNREADABLE_BODY =
  'The request body could not be read: send valid application/x-www-form-urlencoded or application/json.';

/** An error of ours, or the 503 of a database failure; undefined for anything else. */
export function knownError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  // What Fastify already found to be the client's doing stays that, whatever its code says.
  const status = (error as FastifyError | null)?.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return undefined;
  return databaseFailure(error);
}

/** The headers that go with an error of ours: when to come back, and how to authenticate. */
function headersOf(error: AppError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error instanceof TooManyRequestsError || error instanceof ServiceUnavailableError)
    headers['retry-after'] = String(error.retryAfter);
  if (error instanceof InvalidUserError && error.noCredentials) headers['www-authenticate'] = 'Basic realm="shiplog"';
  if (error instanceof UnauthorizedError) headers['www-authenticate'] = 'Bearer realm="shiplog"';
  return headers;
}

const plain = (status: number, code: string, message: string): ErrorAnswer => ({ status, code, message, headers: {} });

/** A value the route's schema refuses: each parameter named, the first one in the message. */
function schemaRefusal(validation: NonNullable<FastifyError['validation']>): ErrorAnswer {
  const errors: Record<string, string> = {};
  for (const v of validation) {
    const name =
      v.instancePath.replace(/^\//, '').split('/')[0] ||
      String((v.params as { missingProperty?: string }).missingProperty ?? 'request');
    errors[name] ??= v.message ?? 'is invalid';
  }
  const [first] = Object.entries(errors);
  const message = `Invalid parameter ${first[0]}: ${first[1]}.`;
  return { status: 400, code: 'malformed_parameter', message, parameter: first[0], errors, headers: {} };
}

/**
 * The one classification of anything thrown while answering a request (`request` gives the body
 * limit a 413 names). Only errors of ours and what Fastify found to be the client's doing say
 * what they are; everything else is a 500 that says nothing of itself.
 */
export function classifyError(error: unknown, request?: FastifyRequest): ErrorAnswer {
  const known = knownError(error);
  if (known) {
    const { statusCode: status, code, message, parameter, errors } = known;
    return { status, code, message, parameter, errors, headers: headersOf(known) };
  }
  const fe = error as FastifyError | null | undefined;
  if (fe?.validation) return schemaRefusal(fe.validation);
  if (fe?.statusCode === 413 || fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return plain(413, 'body_too_large', tooLargeMessage(request ? bodyLimitOf(request) : BODY_LIMIT));
  if (fe?.code?.startsWith('FST_ERR_CTP')) return plain(400, 'unreadable_body', UNREADABLE_BODY);
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500)
    return plain(fe.statusCode, 'client_error', fe.message);
  return plain(500, 'internal', INTERNAL);
}

/** The interface's error body (docs/INTERFACE.md §2). */
export const errorBody = (answer: ErrorAnswer): Record<string, unknown> => ({
  code: answer.status,
  message: answer.message,
  ...(answer.errors ? { errors: answer.errors } : {}),
});

/** The one error handler of the API, and the 404 for unknown routes: every error in the interface's shape. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const answer = classifyError(error, request);
    if (answer.status >= 500) request.log.error({ err: error }, 'request failed');
    return reply
      .code(answer.status)
      .headers(answer.headers)
      .type('application/json; charset=utf-8')
      .send(errorBody(answer));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ code: 404, message: `No such endpoint: ${request.method} ${request.url.split('?')[0]}.` }),
  );
}
