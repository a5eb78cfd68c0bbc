import { asBoolean, asList, invalid, type ParamValue } from '../http/params.js';

/** Environments one person may choose per product: more than any pipeline has, few enough to show on a page. */
export const MAX_CHOSEN_ENVIRONMENTS = 50;
/** As long as a deploy's `environment` may be (docs/INTERFACE.md §1). */
const MAX_ENVIRONMENT_LENGTH = 255;

/** Which deploy environments email a person about a product: every one (the default), or these. */
export type EnvironmentChoice = 'all' | string[];

/**
 * `environments` of notifications.json (docs/INTERFACE.md §9): `all`, or a list of environment
 * names (comma-separated, repeated, or a JSON array), each as a deploy's `environment` may be.
 * An empty list is refused rather than read as "none": no deploy mail at all is not a choice
 * this offers, and a form sent half-filled must not silence a person.
 */
export function parseEnvironmentChoice(p: Record<string, ParamValue>): EnvironmentChoice {
  const list = asList('environments', p.environments);
  if (list === undefined) invalid('environments', 'is required: all, or a list of environments');
  const chosen = [...new Set(list)];
  if (chosen.length === 0) invalid('environments', 'must be all, or name at least one environment');
  // `all` is the keyword in any case, so that ALL does not become an environment nobody deploys to.
  if (chosen.some((e) => e.toLowerCase() === 'all')) {
    if (chosen.length === 1) return 'all';
    invalid('environments', 'must be all on its own, or a list of environments without all');
  }
  const long = chosen.find((e) => [...e].length > MAX_ENVIRONMENT_LENGTH);
  if (long !== undefined)
    invalid(
      'environments',
      `"${[...long].slice(0, 40).join('')}..." is longer than ${MAX_ENVIRONMENT_LENGTH} characters`,
    );
  if (chosen.length > MAX_CHOSEN_ENVIRONMENTS)
    invalid('environments', `at most ${MAX_CHOSEN_ENVIRONMENTS} environments`);
  return chosen;
}

/** A person's mail choices for a product: which deploys, and whether comments, email them. */
export interface NotificationChoice {
  environments: EnvironmentChoice;
  comments: boolean;
}

/**
 * A change of notifications.json: `environments` (as parseEnvironmentChoice reads it), `comments`
 * (true or false), or both; what is not given stays as it is. Without either, environments is
 * what is missing.
 */
export function parseNotificationChoice(p: Record<string, ParamValue>): Partial<NotificationChoice> {
  const comments = asBoolean('comments', p.comments);
  if (comments !== undefined && (p.environments === undefined || p.environments === null)) return { comments };
  return { environments: parseEnvironmentChoice(p), ...(comments === undefined ? {} : { comments }) };
}
