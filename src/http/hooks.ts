import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/connection.js';
import { itemNotFound } from '../errors.js';
import { productScope } from '../products/service.js';
import { authenticate } from './auth.js';
import { mergeParams, type ParamValue } from './params.js';

/** onRequest hook: the caller, before anything else is looked at (INTERFACE.md §2). */
export function requireUser(db: Db) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    request.user = await authenticate(db, request.headers.authorization);
  };
}

/** onRequest hook for `/api/products/{product_id}/...`: product exists (404), caller is a member (403). */
export function requireMember(db: Db) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const { product_id } = request.params as { product_id: string };
    request.scope = await productScope(db, request.user, product_id);
  };
}

const declared = new WeakMap<object, ReadonlySet<string>>();

/** The parameters a route reads: those its schema declares (body, or for GET the query string). */
function routeParamNames(request: FastifyRequest): ReadonlySet<string> {
  const schema = request.routeOptions.schema as { body?: object; querystring?: object } | undefined;
  const source = (request.method === 'GET' ? schema?.querystring : schema?.body) as { properties?: object } | undefined;
  if (!source) return new Set();
  let names = declared.get(source);
  if (!names) declared.set(source, (names = new Set(Object.keys(source.properties ?? {}))));
  return names;
}

/** The request's parameters: the query string, and for POST the body on top of it. */
export function requestParams(request: FastifyRequest): Record<string, ParamValue> {
  const names = routeParamNames(request);
  return request.method === 'GET' ? mergeParams(request.query, undefined, names) : mergeParams(request.query, request.body, names);
}

/** An item number from the path; anything but digits names no item. */
export function itemNumber(request: FastifyRequest): number {
  const raw = (request.params as { item_number: string }).item_number;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw itemNotFound(raw);
  return Number(raw);
}
