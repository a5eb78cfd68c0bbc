import type { ProductOverview } from '../present.js';
import { html, type Html } from './html.js';

/** One product of the list: its name, its counts by status, its pages. */
function productEntry(p: ProductOverview): Html {
  const archived = p.archived ? html` <span class="muted">(archived)</span>` : '';
  const admin = p.admin ? html` <span class="muted">\u00b7 admin</span>` : '';
  const counts = p.counts.map((c) => html`<li>${c.status}: <strong>${c.count}</strong></li>`);
  return html`<li><a class="name" href="/app/products/${p.id}/board">${p.name}</a>${archived}${admin}
<ul class="counts">${counts}</ul><p class="muted"><a href="/app/products/${p.id}/board">Board</a> \u00b7 \
<a href="/app/products/${p.id}/deploys">Deploys</a> \u00b7 \
<a href="/app/products/${p.id}/notifications">Notifications</a></p></li>`;
}

/** The products the signed-in person belongs to. */
export function productsPage({ products }: { products: ProductOverview[] }): Html {
  if (products.length === 0)
    return html`<p>You are not a member of any product yet. An admin of a product can invite you.</p>`;
  return html`<ul class="products">${products.map(productEntry)}</ul>`;
}
