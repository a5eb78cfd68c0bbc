import { html, type Html } from './html.js';
import { csrfField, type Viewer } from './layout.js';
import { itemHref } from './parts.js';

/** The step before archiving an item: what it does, and the button that does it. */
export function archiveConfirmPage(o: {
  product: { id: number; name: string };
  item: { number: number; title: string };
  viewer: Viewer;
}): Html {
  const back = itemHref(o.product.id, o.item.number);
  return html`<p>Archive <a href="${back}">#${o.item.number} ${o.item.title}</a>?</p>
<p>It leaves the board and every list; its page, its number and its deploys stay, and it can still be \
changed and deployed. Archiving cannot be undone.</p>
<form method="post" action="${back}/archive">${csrfField(o.viewer)}
<p><button type="submit" class="danger">Archive #${o.item.number}</button> <a href="${back}">Keep it</a></p></form>`;
}
