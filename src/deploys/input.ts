import { ForbiddenError, ValidationError } from '../errors.js';
import {
  asEnum,
  asList,
  asPage,
  asString,
  asText,
  collectErrors,
  digitsToId,
  invalid,
  type ParamValue,
} from '../http/params.js';
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
  /** The distinct numbers, in the order the request gave them. */
  numbers: number[];
  version: string;
  notes: string;
  /** The notes as HTML, rendered before the transaction opens (markdown.ts); without it the row waits for the fill. */
  notesHtml?: string;
  /** The environment runs `version` again, as an earlier deploy to it left it (docs/INTERFACE.md §7.8). */
  rollback: boolean;
  /** Answer what the deploy would do, write nothing. */
  dryRun: boolean;
}

/**
 * A flag of a deploy: `true`/`1` or `false`/`0` (empty is not given). Stricter than other
 * booleans: a deploy script's typo must not turn a rollback or a dry run into a real deploy.
 */
function deployFlag(name: string, value: ParamValue): boolean {
  const s = asString(name, value)?.trim().toLowerCase();
  if (s === undefined || s === '') return false;
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  return invalid(name, 'must be true, false, 1 or 0');
}

/**
 * Parameters of a new deploy or rollback. Missing environment (or numbers, which a rollback may
 * leave out) is 403, as the original service answers; every malformed parameter is named in one 400.
 */
export function parseDeploy(p: Record<string, ParamValue>): DeployInput {
  return collectErrors((field) => {
    const rollback = field(() => deployFlag('rollback', p.rollback));
    const environment = asText('environment', p.environment, 255);
    const rawNumbers = asList('numbers', p.numbers);
    // A malformed rollback flag leaves open whether numbers are needed: its 400 says enough.
    if (environment === undefined || environment.trim() === '' || (rollback === false && !rawNumbers?.length)) {
      throw new ForbiddenError(
        `${rollback ? 'An environment is' : 'Both environment and numbers are'} required to record a deploy.`,
      );
    }
    const numbers = field(() => {
      const parsed = (rawNumbers ?? []).map((n) => digitsToId(n) ?? invalid('numbers', `"${n}" is not an item number`));
      const distinct = [...new Set(parsed)];
      if (distinct.length > MAX_DEPLOY_ITEMS) invalid('numbers', `at most ${MAX_DEPLOY_ITEMS} items per deploy`);
      return distinct;
    });
    const version = field(() => asText('version', p.version, 255)) ?? '';
    if (rollback && version.trim() === '')
      field(() => invalid('version', 'is required with rollback: the version the environment runs again'));
    return {
      environment,
      numbers: numbers ?? [],
      version,
      notes: field(() => asText('notes', p.notes, 65535)) ?? '',
      rollback: rollback ?? false,
      dryRun: field(() => deployFlag('dry_run', p.dry_run)) ?? false,
    };
  });
}

/** Parameters of a deploy list (docs/INTERFACE.md §7.7); every malformed one is named in one 400. */
export function parseDeployList(p: Record<string, ParamValue>): {
  filter: DeployFilter;
  page: { offset: number; limit: number };
} {
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
