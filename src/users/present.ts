import { Type, type Static } from '@sinclair/typebox';
import type { UserProfile } from './profiles.js';

export const UserSchema = Type.Object({
  id: Type.Integer(),
  first_name: Type.String(),
  last_name: Type.String(),
  email: Type.String(),
  created_at: Type.String(),
  last_login: Type.Optional(Type.String()),
});
export type UserJson = Static<typeof UserSchema>;

export function presentUser(row: UserProfile): UserJson {
  const user: UserJson = {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    created_at: row.created_at,
  };
  if (row.last_login) user.last_login = row.last_login;
  return user;
}
