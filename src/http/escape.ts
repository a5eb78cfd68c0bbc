const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

// Most of what pages show (names, dates, values) has nothing to escape: a test costs less than a replace.
const SPECIAL = /[&<>"'`]/;
const SPECIALS = /[&<>"'`]/g;

/**
 * Text as HTML text or attribute value: the one escaper of pages, mail and Markdown kept as text.
 * The backtick too, which some old browsers took for an attribute's quote.
 */
export const escapeHtml = (s: string): string => (SPECIAL.test(s) ? s.replace(SPECIALS, (c) => HTML_ESCAPES[c]) : s);
