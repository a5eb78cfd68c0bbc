import { ValidationError } from '../errors.js';
import { asString, type ParamValue } from '../http/params.js';
import { validEmail } from '../users/index.js';

/** The address a sign-in link is asked for, lower case. */
export function parseSignInRequest(p: Record<string, ParamValue>): { email: string } {
  const email = asString('email', p.email)?.trim().toLowerCase();
  if (!email || !validEmail(email)) throw new ValidationError({ email: 'must be an email address' }, 'Enter an email address, such as ada@example.com.');
  return { email };
}

/** Tokens of sign-in links are 43 base64url characters; anything else names no link. */
export const wellFormedToken = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token);

/** The form token of a POST, as sent (checked against the session's). */
export const formToken = (p: Record<string, ParamValue>): string => (typeof p.csrf === 'string' ? p.csrf : '');
