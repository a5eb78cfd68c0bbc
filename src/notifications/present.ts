import { Type, type Static } from '@sinclair/typebox';
import type { EnvironmentChoice } from './input.js';

/** docs/INTERFACE.md §9: `{"environments": "all"}` or `{"environments": ["production", ...]}`. */
export const EnvironmentChoiceSchema = Type.Object({
  environments: Type.Union([Type.Literal('all'), Type.Array(Type.String())]),
});

export function presentEnvironmentChoice(choice: EnvironmentChoice): Static<typeof EnvironmentChoiceSchema> {
  return { environments: choice };
}
