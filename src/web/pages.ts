import type { FastifyRequest } from 'fastify';
import { classifyError } from '../http/errors.js';
import type { ParamValue } from '../http/params.js';
import type { ProductScope } from '../scope.js';
import { requireFormToken, viewerOf } from './session.js';

/**
 * What a form's failure shows next to its fields: the service's own reasons (a 400 of the
 * parameters, a 404 of a person or parent named by one) keep the page and the typed values;
 * anything else is the page error it always is.
 */
export function formErrors(err: unknown): { errors: Record<string, string>; message?: string } | undefined {
  const { status, code, message, parameter, errors = {} } = classifyError(err);
  if (code === 'invalid_parameter') return { errors, message: Object.keys(errors).length ? undefined : message };
  if (status === 404 && parameter)
    return { errors: { [parameter]: errors[parameter] ?? 'names nobody (or nothing) of this product' } };
  return undefined;
}

export const sessionOf = (request: FastifyRequest) => request.webSession!;
/** The one viewerOf (session.ts), taken by the pages with the rest of their helpers. */
export { viewerOf };
/** The product as pages show it; its admins see its admin pages in the navigation. */
export const productOf = (scope: ProductScope) => ({
  id: scope.product.id,
  name: scope.product.name,
  admin: scope.admin,
});
export const checkToken = (request: FastifyRequest, fields?: Record<string, string>) =>
  requireFormToken(sessionOf(request), request, fields);
/** The text values of a form as sent, to show them again. */
export const asText = (p: Record<string, ParamValue>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(p).flatMap(([k, v]) =>
      typeof v === 'string' ? [[k, v]] : typeof v === 'number' ? [[k, String(v)]] : [],
    ),
  );
