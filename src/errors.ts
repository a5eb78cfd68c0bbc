/**
 * Every error the service answers with. Services throw these; the one error handler in app.ts
 * turns them into `{"code", "message", "errors"?}` bodies. Anything else becomes a logged 500.
 */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly errors?: Record<string, string>,
  ) {
    super(message);
  }
}

/** 400: a parameter is missing or malformed; `errors` names each offending parameter. */
export class ValidationError extends AppError {
  constructor(errors: Record<string, string>, message?: string) {
    const first = Object.entries(errors)[0];
    super(400, message ?? (first ? `Invalid parameter ${first[0]}: ${first[1]}.` : 'Invalid request.'), errors);
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
    super(403, 'Invalid or unknown user.');
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
  constructor(message: string) {
    super(404, message);
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
  ) {
    super(503, message);
  }
}

export const databaseUnreachable = () =>
  new ServiceUnavailableError('The database cannot be reached right now; try again in a few seconds.', 5);
// Space and writability come back when an operator acts, not in seconds: clients need not hurry.
export const databaseFull = () => new ServiceUnavailableError('The database is out of space; try again later.', 30);
export const databaseReadOnly = () =>
  new ServiceUnavailableError(
    'The database cannot take changes right now (its storage is read-only or failing); try again later.',
    30,
  );

export const productNotFound = () => new NotFoundError('No product with that id.');
export const itemNotFound = (n: number | string) => new NotFoundError(`No item number ${n} in this product.`);
export const webhookNotFound = () => new NotFoundError('No webhook with that id in this product.');
export const userNotFound = (param: string) =>
  new AppError(404, `Parameter ${param} names no known user.`, { [param]: 'unknown user' });
