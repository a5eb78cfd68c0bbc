import { escapeHtml } from '../http/html.js';
import { readableTime } from './format.js';

export const SIGNIN_SUBJECT = 'Your Shiplog sign-in link';

export interface SigninMessageParts {
  signInUrl: string;
  /** When the link stops working. */
  expiresAt: string;
}

/** The style of a message's closing words: small and grey. */
const FOOTNOTE_STYLE = 'color:#595959;font-size:12px;margin-top:24px';

/**
 * The text and HTML of a sign-in message: the link, how long and how often it works, and that a
 * message nobody asked for can be ignored (nothing happens without following the link).
 */
export function renderSigninEmail(parts: SigninMessageParts): { text: string; html: string } {
  const { signInUrl, expiresAt } = parts;
  const until = readableTime(expiresAt);
  const text = [
    `Sign in to Shiplog with this link (it works once, until ${until}):`,
    signInUrl,
    '',
    '-- ',
    'Someone asked for a sign-in link for this address. If it was not you, ignore this message:',
    'nobody can sign in without the link.',
    '',
  ].join('\n');
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(SIGNIN_SUBJECT)}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:14px;color:#222;line-height:1.4">
<p><a href="${escapeHtml(signInUrl)}">Sign in to Shiplog</a> (the link works once, until ${escapeHtml(until)}).</p>
<p style="${FOOTNOTE_STYLE}">Someone asked for a sign-in link for this address. If it was not you, ignore this message:
nobody can sign in without the link.</p>
</body></html>
`;
  return { text, html };
}
