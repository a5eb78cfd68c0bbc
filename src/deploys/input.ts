import { ForbiddenError, ValidationError } from '../errors.js';
import { asEnum, asList, asPage, asText, collectErrors, digitsToId, invalid, type ParamValue } from '../http/params.js';
import type { DeployFilter } from './repository.js';

/** Items one deploy may name: far more than any release, few enough for one transaction. */
export const MAX_DEPLOY_ITEMS = 1000;

/** Deploys per page of deploys.json: without `limit`, and at most. */
export const DEPLOY_PAGE = { default: 20, max: 100 } as const;
/**
 * Items one page of deploys.json may embed in all. A deploy holds up to MAX_DEPLOY_ITEMS, so a
 * page of full-size deploys would weigh a megabyte per deploy: a page ends before the deploy that
 * would take it past this many items (it always holds at least one deploy). Clients page on by
 * the number of deploys they got, as they must anyway when asking for more than the maximum.
 */
export const DEPLOY_PAGE_ITEMS = 1000;

export const DEPLOY_ORDERS = ['oldest', 'newest'] as const;

export interface DeployInput {
  environment: string;
  numbers: number[];
  version: string;
  notes: string;
}

/** Parameters of a new deploy; missing environment or numbers are 403, as the original service answers. */
export function parseDeploy(p: Record<string, ParamValue>): DeployInput {
  const environment = asText('environment', p.environment, 255);
  const rawNumbers = asList('numbers', p.numbers);
  if (environment === undefined || environment.trim() === '' || !rawNumbers?.length) {
    throw new ForbiddenError('Both environment and numbers are required to record a deploy.');
  }
  const numbers = rawNumbers.map((n) => digitsToId(n) ?? invalid('numbers', `"${n}" is not an item number`));
  if (new Set(numbers).size > MAX_DEPLOY_ITEMS) invalid('numbers', `at most ${MAX_DEPLOY_ITEMS} items per deploy`);
  return {
    environment,
    numbers: [...new Set(numbers)].sort((a, b) => a - b),
    version: asText('version', p.version, 255) ?? '',
    notes: asText('notes', p.notes, 65535) ?? '',
  };
}

/** Parameters of a deploy list (docs/INTERFACE.md §7.7); every malformed one is named in one 400. */
export function parseDeployList(p: Record<string, ParamValue>): { filter: DeployFilter; page: { offset: number; limit: number } } {
  return collectErrors((field) => {
    const page = field(() => asPage(p, DEPLOY_PAGE));
    const environment = field(() => asText('environment', p.environment, 255)) || undefined;
    const order = field(() => asEnum('order_by', p.order_by, DEPLOY_ORDERS));
    return { filter: { environment, newest: order === 'newest' }, page: page! };
  });
}

export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined || key === '') return undefined;
  if (key.length > 255) throw new ValidationError({ 'Idempotency-Key': 'must be at most 255 characters' });
  return key;
}
