import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ParamValue } from '../../http/params.js';
import { pagedItemNumber } from '../input.js';
import type { FormState } from '../views/parts.js';

/** What the product's pages have in common: their paths, and the few ways they answer. */

export const ProductPath = { params: { type: 'object', properties: { product_id: { type: 'string' } } } } as const;
export const ItemPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, item_number: { type: 'string' } } },
} as const;
export const DeployPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, deploy_id: { type: 'string' } } },
} as const;
export const WebhookPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, webhook_id: { type: 'string' } } },
} as const;

/** The item number of an `/items/{n}` path (a 404 page for anything but digits). */
export const numberOf = (request: FastifyRequest): number =>
  pagedItemNumber((request.params as { item_number: string }).item_number);

/** After a form's change: the page to see it on (a GET, so a reload does not post again). */
export const redirectAfterPost = (reply: FastifyReply, to: string) =>
  reply.header('cache-control', 'no-store').redirect(to, 303);

/** Browsers send a textarea's line breaks as CRLF (HTML says so); what the API stores is what was typed. */
export const lineBreaks = (v: ParamValue): ParamValue => (typeof v === 'string' ? v.replace(/\r\n?/g, '\n') : v);

/** The text values of a form field (ticked boxes of one name come as several). */
export const strings = (v: ParamValue): string[] => [v ?? []].flat().filter((x): x is string => typeof x === 'string');

export const emptyForm = (): FormState => ({ values: {}, errors: {} });

/** The page path of a product. */
export const productPath = (request: FastifyRequest, rest: string): string =>
  `/app/products/${request.scope.product.id}${rest}`;
