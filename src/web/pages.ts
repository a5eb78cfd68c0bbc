import type { FastifyRequest } from 'fastify';
import { AppError, ValidationError } from '../errors.js';
import type { ParamValue } from '../http/params.js';
import type { ProductScope } from '../scope.js';
import { requireFormToken } from './session.js';

/**
 * What a form's failure shows next to its fields: the service's own reasons (a 400 of the
 * parameters, a 404 of a person or parent named by one) keep the page and the typed values;
 * anything else is the page error it always is.
 */
export function formErrors(err: unknown): { errors: Record<string, string>; message?: string } | undefined {
  if (err instanceof ValidationError)
    return { errors: err.errors ?? {}, message: Object.keys(err.errors ?? {}).length ? undefined : err.message };
  if (err instanceof AppError && err.statusCode === 404) {
    const field = /Parameter (\w+)/.exec(err.message)?.[1];
    if (field) return { errors: { [field]: err.errors?.[field] ?? 'names nobody (or nothing) of this product' } };
  }
  return undefined;
}

export const sessionOf = (request: FastifyRequest) => request.webSession!;
export const viewerOf = (request: FastifyRequest) => ({
  email: sessionOf(request).user.email,
  csrfToken: sessionOf(request).csrfToken,
});
/** The product as pages show it; its admins see its admin pages in the navigation. */
export const productOf = (scope: ProductScope) => ({
  id: scope.product.id,
  name: scope.product.name,
  admin: scope.admin,
});
export const checkToken = (request: FastifyRequest) => requireFormToken(sessionOf(request), request);
/** The text values of a form as sent, to show them again. */
export const asText = (p: Record<string, ParamValue>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(p).flatMap(([k, v]) =>
      typeof v === 'string' ? [[k, v]] : typeof v === 'number' ? [[k, String(v)]] : [],
    ),
  );
