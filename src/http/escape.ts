const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/**
 * Text as HTML text or attribute value: the one escaper of pages, mail and Markdown kept as text.
 * The backtick too, which some old browsers took for an attribute's quote.
 */
export const escapeHtml = (s: string): string => s.replace(/[&<>"'`]/g, (c) => HTML_ESCAPES[c]);
