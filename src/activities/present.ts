import { Type, type Static } from '@sinclair/typebox';
import type { Db } from '../db/connection.js';
import type { ActivityRow } from '../db/schema.js';
import { ref } from '../http/documentation.js';
import { findProfiles, presentUser, UserSchema } from '../users/index.js';
import { ACTIVITY_ACTIONS, labelOf } from './model.js';

export const ActivitySchema = Type.Object(
  {
    id: Type.Integer({ description: 'Activities of a product are numbered in the order they happened.' }),
    action: Type.String({ enum: [...ACTIVITY_ACTIONS], description: 'What happened (docs/INTERFACE.md §13).' }),
    label: Type.String({ description: 'A short text of what happened, for people; programs read `action`.' }),
    created: Type.String({ description: 'When it happened.' }),
    user: ref(UserSchema, { description: 'Who made the change.' }),
    item: Type.Array(Type.Integer(), {
      minItems: 1,
      maxItems: 1,
      description: "The item's number, in a list as Sprint.ly gave it.",
    }),
    meta: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'What changed, by action: `changes` (each field `before` and `after`), a deploy, a comment, ...; ' +
          'long texts cut to 1,000 characters and `…`, with `truncated` naming them.',
      },
    ),
  },
  { $id: 'Activity', description: 'One change of an item (docs/INTERFACE.md §13).' },
);
export type ActivityJson = Static<typeof ActivitySchema>;

export const ActivitiesSchema = Type.Object(
  {
    activities: Type.Array(ref(ActivitySchema), { description: 'The page, newest first.' }),
    total_count: Type.Array(Type.Integer(), {
      minItems: 1,
      maxItems: 1,
      description: 'How many activities there are in all, before paging, in a list as Sprint.ly gave it.',
    }),
  },
  { $id: 'Activities', description: 'A page of activities, and how many there are.' },
);

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const ACTIVITY_SCHEMAS = [ActivitySchema, ActivitiesSchema];

/** Activities as `viewerId` sees them, their people read in one query (or remembered). */
export async function presentActivities(db: Db, rows: ActivityRow[], viewerId: number): Promise<ActivityJson[]> {
  const people = await findProfiles(
    db,
    rows.map((r) => r.user_id),
  );
  return rows.map((row) => {
    const meta = JSON.parse(row.meta) as Record<string, unknown>;
    return {
      id: row.id,
      action: row.action as ActivityJson['action'],
      label: labelOf(row.action, row.item_number, meta),
      created: row.created_at,
      user: presentUser(people.get(row.user_id)!, viewerId),
      item: [row.item_number],
      meta,
    };
  });
}
