import type { FastifyRequest } from 'fastify';
import { mergeParams, type ParamValue } from './params.js';

const declared = new WeakMap<object, ReadonlySet<string>>();

/** The parameters a route reads: those its schema declares (body, or for GET the query string). */
function routeParamNames(request: FastifyRequest): ReadonlySet<string> {
  const schema = request.routeOptions.schema as { body?: object; querystring?: object } | undefined;
  const source = (request.method === 'GET' ? schema?.querystring : schema?.body) as { properties?: object } | undefined;
  if (!source) return new Set();
  let names = declared.get(source);
  if (!names) {
    names = new Set(Object.keys(source.properties ?? {}));
    declared.set(source, names);
  }
  return names;
}

/** The request's parameters: the query string, and for POST the body on top of it. */
export function requestParams(request: FastifyRequest): Record<string, ParamValue> {
  const names = routeParamNames(request);
  return request.method === 'GET'
    ? mergeParams(request.query, undefined, names)
    : mergeParams(request.query, request.body, names);
}
