import { Type, type Static } from '@sinclair/typebox';
import type { UserProfile } from './profiles.js';

export const UserSchema = Type.Object(
  {
    id: Type.Integer(),
    first_name: Type.String(),
    last_name: Type.String(),
    email: Type.String(),
    created_at: Type.Optional(
      Type.String({ description: 'When the account was made; shown to the user themselves only.' }),
    ),
    last_login: Type.Optional(
      Type.String({
        description:
          "The user's last authenticated request (recorded at most once a minute); shown to the user themselves only.",
      }),
    ),
  },
  { $id: 'User', description: 'A person (docs/INTERFACE.md §4.1). Timestamps are ISO 8601 in UTC, to the second.' },
);
export type UserJson = Static<typeof UserSchema>;

/** The named schemas of the feature, registered on the app so that responses reference them. */
export const USER_SCHEMAS = [UserSchema];

/**
 * A user as the viewer (the caller) may see them. `created_at` and `last_login` are the user's
 * own: when the account was made and when it was last used, across all its products, including
 * those the viewer is no member of. Only the user themselves sees them; others, admins included,
 * get the name and email they work with.
 */
export function presentUser(row: UserProfile, viewerId: number): UserJson {
  const user: UserJson = {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
  };
  if (row.id !== viewerId) return user;
  user.created_at = row.created_at;
  if (row.last_login) user.last_login = row.last_login;
  return user;
}

/** How a person is named to others: their name, or their address when they gave none. */
export function fullName(user: Pick<UserProfile, 'first_name' | 'last_name' | 'email'>): string {
  return `${user.first_name} ${user.last_name}`.trim() || user.email;
}
