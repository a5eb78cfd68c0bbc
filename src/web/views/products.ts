import type { ProductOverview } from '../present.js';
import { html, type Html } from './html.js';
import { csrfField, type Viewer } from './layout.js';
import { fieldError, invalidAttrs, type FormState } from './parts.js';

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

/** The products the signed-in person belongs to, and the form that makes a new one. */
export function productsPage(v: { products: ProductOverview[]; form: FormState; viewer: Viewer }): Html {
  const list = v.products.length
    ? html`<ul class="products">${v.products.map(productEntry)}</ul>`
    : html`<p>You are not a member of any product yet. An admin of a product can invite you, or make your own.</p>`;
  const invalid = invalidAttrs(v.form, 'name');
  return html`${list}
<section aria-labelledby="new-product"><h2 id="new-product">New product</h2>
<form class="new-product" method="post" action="/app/products">${csrfField(v.viewer)}
${v.form.message ? html`<p class="error" role="alert">${v.form.message}</p>` : ''}
<p><label for="product-name">Name</label> <input id="product-name" type="text" name="name" maxlength="255" \
required value="${v.form.values.name ?? ''}"${invalid}>${fieldError(v.form, 'name')}</p>
<p class="muted">You become its admin: you can then invite people to it.</p>
<p><button type="submit">Create product</button></p></form></section>`;
}
