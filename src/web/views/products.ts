import type { ProductOverview } from '../present.js';
import { html, type Html } from './html.js';

export function productsPage(products: ProductOverview[]): Html {
  if (products.length === 0)
    return html`<p>You are not a member of any product yet. An admin of a product can invite you.</p>`;
  return html`<ul class="products">${products.map(
    (
      p,
    ) => html`<li><a class="name" href="/app/products/${p.id}/board">${p.name}</a>${p.archived ? html` <span class="muted">(archived)</span>` : ''}${p.admin ? html` <span class="muted">\u00b7 admin</span>` : ''}
<ul class="counts">${p.counts.map((c) => html`<li>${c.status}: <strong>${c.count}</strong></li>`)}</ul><p class="muted"><a href="/app/products/${p.id}/board">Board</a> \u00b7 <a href="/app/products/${p.id}/deploys">Deploys</a> \u00b7 <a href="/app/products/${p.id}/notifications">Notifications</a></p></li>`,
  )}</ul>`;
}
