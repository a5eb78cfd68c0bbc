import type { UserRow } from '../db/schema.js';

/** `"First Last" <email>`, quoted so that any name is a valid header. */
export function mailbox(user: UserRow): string {
  const name = `${user.first_name} ${user.last_name}`
    .trim()
    .replace(/[\\"]/g, '\\$&')
    .replace(/[\r\n]+/g, ' ');
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

/** The most of a name chosen by someone else that a message shows. */
export const QUOTED_NAME_MAX = 60;
/** Marks that change the order text is shown in: a name could move its own closing quote, or the words after it. */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/**
 * A name someone else chose (a product's, named by whoever invites), as a message shows it: on one
 * line, in quotes that it cannot close itself (its own curly double quotes become straight ones),
 * without bidirectional controls, and cut to QUOTED_NAME_MAX characters with an ellipsis. So a
 * name cannot read as a sentence of Shiplog's own: `“Payroll” has been suspended; sign in at …`.
 */
export function quotedName(name: string): string {
  const plain = oneLine(name.replace(BIDI_CONTROLS, '').replace(/[\u201c\u201d]/g, '"'));
  const characters = Array.from(graphemes.segment(plain), (g) => g.segment);
  const shown =
    characters.length > QUOTED_NAME_MAX
      ? `${characters
          .slice(0, QUOTED_NAME_MAX - 1)
          .join('')
          .trimEnd()}…`
      : plain;
  return `“${shown}”`;
}
