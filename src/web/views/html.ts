import { escapeHtml } from '../../http/escape.js';

/**
 * HTML that is safe by construction: `html` escapes every interpolated value unless it is
 * already Html (another template's result, or `raw`). Arrays are joined, each element treated
 * the same way; null, undefined and false render as nothing.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** The one escaper (http/escape.ts), for what is spliced into pages already rendered. */
export { escapeHtml };

/** Text that is already HTML (rendered elsewhere, and trusted). Never for anything a person typed. */
export const raw = (text: string): Html => new Html(text);
