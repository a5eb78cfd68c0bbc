/**
 * Every error the service answers with. Services throw these; the one classifier in http/errors.ts
 * turns them into `{"code", "message", "errors"?}` bodies for the API and into pages for the pages.
 * Anything else becomes a logged 500.
 */

/** What tells errors apart for a program: never the message, which is for people. */
export interface ErrorDetails {
  /** A machine code (`invalid_parameter`, `unknown_reference`, ...); by default the status's. */
  code?: string;
  /** The parameter the error concerns, which a page shows it next to. */
  parameter?: string;
}

/** The machine code of an error that gives none: its status's. */
const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  410: 'gone',
  412: 'precondition_failed',
  413: 'payload_too_large',
  422: 'unprocessable',
  429: 'too_many_requests',
  503: 'unavailable',
};

export class AppError extends Error {
  /** What went wrong, for programs and pages (the JSON's `code` is the status, as the interface has it). */
  readonly code: string;
  /** The parameter the error concerns, if one does: the first one `errors` names, unless given. */
  readonly parameter?: string;

  constructor(
    readonly statusCode: number,
    message: string,
    readonly errors?: Record<string, string>,
    details: ErrorDetails = {},
  ) {
    super(message);
    this.code = details.code ?? STATUS_CODES[statusCode] ?? 'error';
    this.parameter = details.parameter ?? (errors ? Object.keys(errors)[0] : undefined);
  }
}

/** 400: a parameter is missing or malformed; `errors` names each offending parameter. */
export class ValidationError extends AppError {
  constructor(errors: Record<string, string>, message?: string) {
    const first = Object.entries(errors)[0];
    const text = message ?? (first ? `Invalid parameter ${first[0]}: ${first[1]}.` : 'Invalid request.');
    super(400, text, errors, { code: 'invalid_parameter' });
  }
}

export class BadRequestError extends AppError {
  constructor(message: string) {
    super(400, message);
  }
}

/** 403 for bad or missing credentials: the message clients have always matched on. */
export class InvalidUserError extends AppError {
  constructor(readonly noCredentials = false) {
    super(403, 'Invalid or unknown user.', undefined, { code: 'invalid_user' });
  }
}

/** 401 for a bearer token that is missing or wrong where only a token is taken (`/metrics`). */
export class UnauthorizedError extends AppError {
  constructor(message: string) {
    super(401, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'You are not a member of this product.') {
    super(403, message);
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, details?: ErrorDetails) {
    super(404, message, undefined, details);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

/** 412: the request's precondition (If-Match) does not hold: the resource changed since the caller read it. */
export class PreconditionFailedError extends AppError {
  constructor(message: string) {
    super(412, message);
  }
}

/** 413: what was sent is more than may be stored (a file over its limit, a product over its total). */
export class PayloadTooLargeError extends AppError {
  constructor(message: string, details?: ErrorDetails) {
    super(413, message, undefined, details);
  }
}

export class UnprocessableError extends AppError {
  constructor(message: string) {
    super(422, message);
  }
}

export class GoneError extends AppError {
  constructor(message: string) {
    super(410, message);
  }
}

/** 429: a limit on how often something may be done; `retryAfter` seconds until it may again. */
export class TooManyRequestsError extends AppError {
  constructor(
    message: string,
    readonly retryAfter: number,
  ) {
    super(429, message);
  }
}

/**
 * 503: the service cannot do this now and will again without anyone changing the request: the
 * database is out of reach, out of space or not taking writes. `retryAfter` seconds.
 */
export class ServiceUnavailableError extends AppError {
  constructor(
    message: string,
    readonly retryAfter: number,
    code?: string,
  ) {
    super(503, message, undefined, { code });
  }
}

export const databaseUnreachable = () =>
  new ServiceUnavailableError(
    'The database cannot be reached right now; try again in a few seconds.',
    5,
    'database_unreachable',
  );
// Space and writability come back when an operator acts, not in seconds: clients need not hurry.
export const databaseFull = () =>
  new ServiceUnavailableError('The database is out of space; try again later.', 30, 'database_full');
export const databaseReadOnly = () =>
  new ServiceUnavailableError(
    'The database cannot take changes right now (its storage is read-only or failing); try again later.',
    30,
    'database_read_only',
  );

export const productNotFound = () => new NotFoundError('No product with that id.', { code: 'product_not_found' });
export const itemNotFound = (n: number | string) =>
  new NotFoundError(`No item number ${n} in this product.`, { code: 'item_not_found' });
export const attachmentNotFound = () =>
  new NotFoundError('No attachment with that id on this item.', { code: 'attachment_not_found' });
export const webhookNotFound = () =>
  new NotFoundError('No webhook with that id in this product.', { code: 'webhook_not_found' });
export const userNotFound = (param: string) =>
  new AppError(404, `Parameter ${param} names no known user.`, { [param]: 'unknown user' }, { code: 'unknown_user' });
/** 404: a parameter names something (a member, an item) that this product does not have. */
export const namesNothing = (param: string, what: string) =>
  new NotFoundError(`Parameter ${param} names ${what}.`, { code: 'unknown_reference', parameter: param });
