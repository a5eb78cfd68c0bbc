import { html, type Html } from './html.js';

/** A form as sent back: the values the person typed, and the service's errors by field. */
export interface FormState {
  values: Record<string, string>;
  errors: Record<string, string>;
  /** What went wrong that belongs to no single field. */
  message?: string;
}

/**
 * The attributes of a field the service refused (`aria-invalid`, and `aria-describedby` naming its
 * reason, which fieldError puts next to it, and any other notes given by id): what the pages' one
 * form script (`/app/forms.js`) looks for to bring the first refused field into view and focus it.
 */
export function invalidAttrs(s: FormState, name: string, ...notes: string[]): Html | '' {
  const ids = [s.errors[name] ? `error-${name}` : '', ...notes].filter(Boolean).join(' ');
  return ids ? html` aria-invalid="true" aria-describedby="${ids}"` : '';
}

/**
 * The service's reason next to its field (tied to it for screen readers by the field's id), after
 * the field's name or the `label` given.
 */
export function fieldError(s: FormState, name: string, label = name.replaceAll('_', ' ')): Html | '' {
  const reason = s.errors[name];
  return reason ? html`<span class="field-error" id="error-${name}" role="alert">${label} ${reason}</span>` : '';
}

/**
 * The reasons of parameters a form has no field for (`shown` are those it has), which only a
 * request made by other means sends: said above the fields, so that no refusal goes unexplained.
 */
export function otherErrors(s: FormState, shown: readonly string[]): Html | '' {
  const rest = Object.entries(s.errors).filter(([name]) => !shown.includes(name));
  return rest.length
    ? html`<p class="error">${rest.map(([name, reason]) => `${name.replace('_', ' ')} ${reason}`).join('; ')}</p>`
    : '';
}

export const itemHref = (productId: number, number: number): string => `/app/products/${productId}/items/${number}`;
export const deployHref = (productId: number, id: number): string => `/app/products/${productId}/deploys/${id}`;

/** How a person is named on a page: their name, or their address when they gave none. */
export function personName(user: { first_name: string; last_name: string; email: string }): string {
  return `${user.first_name} ${user.last_name}`.trim() || user.email;
}

/** `<option>`s with `selected` on the current value. */
export function selectOptions(options: readonly (readonly [string, string])[], current: string | undefined): Html[] {
  return options.map(
    ([value, label]) => html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`,
  );
}

type ProductPage = 'board' | 'deploys' | 'notifications' | 'webhooks' | 'people';

/** The product's name and its pages; its admins also see theirs (people, webhooks). */
export function productNav(
  product: { id: number; name: string; admin?: boolean },
  current: ProductPage | 'item',
): Html {
  const link = (page: ProductPage, label: string) =>
    html`<a href="/app/products/${product.id}/${page}"${page === current ? html` aria-current="page"` : ''}>\
${label}</a>`;
  const admin = product.admin ? html` ${link('people', 'People')} ${link('webhooks', 'Webhooks')}` : '';
  return html`<nav class="product" aria-label="Product"><strong>${product.name}</strong> ${link('board', 'Board')} \
${link('deploys', 'Deploys')} ${link('notifications', 'Notifications')}${admin}</nav>`;
}

/** `2026-11-22 10:04 UTC` from the interface's timestamp form. */
export function when(timestamp: string | undefined | null): string {
  if (!timestamp) return '';
  const d = new Date(timestamp);
  return Number.isNaN(d.getTime()) ? timestamp : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A timestamp as `when` shows it, machine-readable too. */
export const timeTag = (timestamp: string): Html => html`<time datetime="${timestamp}">${when(timestamp)}</time>`;

/**
 * A table in a box of its own that scrolls sideways when the table is wider than the page (a phone),
 * so the page itself never does; a box that scrolls takes the keyboard's focus to be scrolled by it.
 */
export const tableBox = (label: string, table: Html): Html =>
  html`<div class="table-scroll" role="region" aria-label="${label}" tabindex="0">${table}</div>`;
