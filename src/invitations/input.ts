import { ValidationError } from '../errors.js';
import { asBoolean, asString, asText, type ParamValue } from '../http/params.js';
import { validEmail } from '../users/index.js';

export interface InviteInput {
  email: string;
  firstName?: string;
  lastName?: string;
  /** The role accepting gives (or, for a member already, their new role); absent: as it was, or not an admin. */
  admin?: boolean;
}

export function parseInvite(p: Record<string, ParamValue>): InviteInput {
  const email = asString('email', p.email)?.trim().toLowerCase();
  if (!email || !validEmail(email)) throw new ValidationError({ email: 'must be an email address' });
  return {
    email,
    firstName: asText('first_name', p.first_name, 255)?.trim() || undefined,
    lastName: asText('last_name', p.last_name, 255)?.trim() || undefined,
    admin: asBoolean('admin', p.admin),
  };
}

/** Names a new user may give when accepting (an invitation may have been sent without). */
export function parseAcceptNames(p: Record<string, ParamValue>): { firstName?: string; lastName?: string } {
  return {
    firstName: asText('first_name', p.first_name, 255)?.trim() || undefined,
    lastName: asText('last_name', p.last_name, 255)?.trim() || undefined,
  };
}
