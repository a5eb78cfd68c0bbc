import type { DeployJson } from '../../deploys/index.js';
import type { ItemJson } from '../../items/index.js';
import { html, raw, type Html } from './html.js';
import {
  deployHref,
  fieldError,
  type FormState,
  invalidAttrs,
  itemHref,
  personName,
  productNav,
  when,
} from './parts.js';
import { deployTabs } from './where.js';

export interface DeploysView {
  product: { id: number; name: string };
  deploys: ShownDeploy[];
  total: number;
  offset: number;
  pageSize: number;
  environment?: string;
  /** The filter as sent, when its environment was refused (the deploys shown are then all of them). */
  form?: FormState;
}

export function deploysPage(v: DeploysView): Html {
  const p = v.product.id;
  const link = (offset: number) => {
    const q = new URLSearchParams();
    if (v.environment) q.set('environment', v.environment);
    if (offset > 0) q.set('offset', String(offset));
    const s = q.toString();
    return `/app/products/${p}/deploys${s ? `?${s}` : ''}`;
  };
  const end = v.offset + v.deploys.length;
  const count = html`${v.total} deploy${v.total === 1 ? '' : 's'}${v.environment ? html` to ${v.environment}` : ''}`;
  return html`${productNav(v.product, 'deploys')}
${deployTabs(p, 'list')}
<form class="filters" method="get" action="/app/products/${p}/deploys">
<span><label>Environment <input id="deploys-environment" type="text" name="environment" \
value="${v.form?.values.environment ?? v.environment ?? ''}" placeholder="production"\
${v.form ? invalidAttrs(v.form, 'environment') : ''}></label>${v.form ? fieldError(v.form, 'environment') : ''}</span>
<button type="submit">Filter</button> <a href="/app/products/${p}/deploys">All environments</a>
</form>
<p class="muted">${count}, newest first.</p>
${v.deploys.map((d) => deploySection(p, d))}
<p class="pager">${v.offset > 0 ? html`<a href="${link(Math.max(0, v.offset - v.pageSize))}">Newer</a>` : ''}
${end < v.total ? html`<a href="${link(end)}">Older</a>` : ''}</p>`;
}

type ShownDeploy = DeployJson & { notesHtml: string };

/** A deploy: where, which version, rollback or rolled back (linking to the rollback), by whom, its notes and items. */
function deploySection(p: number, d: ShownDeploy): Html {
  const rollback =
    d.reverted_by !== undefined ? html` (<a href="${deployHref(p, d.reverted_by)}">the rollback</a>)` : '';
  const rolledBack = d.reverted_at ? html`; rolled back ${when(d.reverted_at)}${rollback}` : '';
  const item = (i: ItemJson) =>
    html`<li><a href="${itemHref(p, i.number)}">#${i.number} ${i.title}</a> \
<span class="muted">${i.type} \u00b7 ${i.status}</span></li>`;
  return html`<section class="deploy" id="deploy-${d.id}">
<h2><a href="${deployHref(p, d.id)}">${d.environment}</a> <span class="version">${d.version}</span>\
${d.rollback ? html` <span class="muted">rollback</span>` : ''}</h2>
<p class="muted">by ${personName(d.user)}, ${when(d.created_at)}${rolledBack}</p>
${d.notes ? html`<div class="markdown">${raw(d.notesHtml)}</div>` : ''}
<ul class="deploy-items">${(d.items as ItemJson[]).map(item)}${omittedItems(p, d.omitted_numbers)}</ul>
</section>`;
}

/** Items past what a page may weigh (the same budget as the API's answers): numbers only, linked. */
function omittedItems(p: number, numbers: number[] | undefined): Html | string {
  if (!numbers?.length) return '';
  const links = numbers.map((n, i) => html`${i > 0 ? ', ' : ''}<a href="${itemHref(p, n)}">#${n}</a>`);
  return html`<li class="muted">and ${numbers.length} more: ${links}</li>`;
}

/** One deploy's page. */
export interface DeployView {
  product: { id: number; name: string };
  deploy: ShownDeploy;
}

/** One deploy, where the matrix's cells and the items' timelines link to. */
export function deployPage({ product, deploy }: DeployView): Html {
  const environment = encodeURIComponent(deploy.environment);
  return html`${productNav(product, 'deploys')}
${deploySection(product.id, deploy)}
<p><a href="/app/products/${product.id}/deploys?environment=${environment}">Deploys to ${deploy.environment}</a></p>`;
}
