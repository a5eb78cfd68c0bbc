import { html, type Html } from './html.js';

/** A form as sent back: the values the person typed, and the service's errors by field. */
export interface FormState {
  values: Record<string, string>;
  errors: Record<string, string>;
  /** What went wrong that belongs to no single field. */
  message?: string;
}

/** The service's reason next to its field (tied to it for screen readers by the field's id). */
export function fieldError(s: FormState, name: string): Html | '' {
  const reason = s.errors[name];
  return reason ? html`<span class="field-error" id="error-${name}" role="alert">${name.replace('_', ' ')} ${reason}</span>` : '';
}

export const itemHref = (productId: number, number: number): string => `/app/products/${productId}/items/${number}`;

/** How a person is named on a page: their name, or their address when they gave none. */
export function personName(user: { first_name: string; last_name: string; email: string }): string {
  return `${user.first_name} ${user.last_name}`.trim() || user.email;
}

/** `<option>`s with `selected` on the current value. */
export function selectOptions(options: readonly (readonly [string, string])[], current: string | undefined): Html[] {
  return options.map(([value, label]) => html`<option value="${value}"${value === current ? html` selected` : ''}>${label}</option>`);
}

/** The product's name and its pages. */
export function productNav(product: { id: number; name: string }, current: 'board' | 'deploys' | 'notifications' | 'item'): Html {
  const link = (page: 'board' | 'deploys' | 'notifications', label: string) =>
    html`<a href="/app/products/${product.id}/${page}"${page === current ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<nav class="product"><strong>${product.name}</strong> ${link('board', 'Board')} ${link('deploys', 'Deploys')} ${link('notifications', 'Notifications')}</nav>`;
}

/** `2026-11-22 10:04 UTC` from the interface's timestamp form. */
export function when(timestamp: string | undefined | null): string {
  if (!timestamp) return '';
  const d = new Date(timestamp);
  return Number.isNaN(d.getTime()) ? timestamp : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
