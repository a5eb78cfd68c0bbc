import { Type, type Static } from '@sinclair/typebox';
import type { NotificationChoice } from './input.js';

/** docs/INTERFACE.md §9: `{"environments": "all"}` or `{"environments": ["production", ...]}`. */
export const EnvironmentChoiceSchema = Type.Object(
  {
    environments: Type.Union([Type.Literal('all'), Type.Array(Type.String())], {
      description: '`all` (the default), or the environments whose deploys email the caller, sorted by code point.',
    }),
    comments: Type.Boolean({
      description: 'Whether comments on the items the caller follows email them (true unless they said no).',
    }),
  },
  {
    $id: 'EnvironmentChoice',
    description: "Which of the product's deploy environments email the caller, and whether comments do.",
  },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const NOTIFICATION_SCHEMAS = [EnvironmentChoiceSchema];

export function presentNotificationChoice(choice: NotificationChoice): Static<typeof EnvironmentChoiceSchema> {
  return { environments: choice.environments, comments: choice.comments };
}
