import type { UserRow } from '../db/schema.js';

/** `"First Last" <email>`, quoted so that any name is a valid header. */
export function mailbox(user: UserRow): string {
  const name = `${user.first_name} ${user.last_name}`.trim().replace(/[\\"]/g, '\\$&').replace(/[\r\n]+/g, ' ');
  return name ? `"${name}" <${user.email}>` : user.email;
}

/** Text for a header or a line of its own: line breaks and tabs become spaces. */
export function oneLine(s: string): string {
  return s.replace(/[\r\n\t]+/g, ' ').trim();
}

/** `Sun, 22 Nov 2026 10:04 UTC` from the interface's timestamp form. */
export function readableTime(timestamp: string): string {
  return new Date(timestamp).toUTCString().replace(/:\d\d GMT$/, ' UTC');
}
