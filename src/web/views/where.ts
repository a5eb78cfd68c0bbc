import type { EnvironmentEntry, HistoryEntry, MatrixCell, MatrixRow } from '../present.js';
import { html, type Html } from './html.js';
import { deployHref, fieldError, type FormState, itemHref, productNav, selectOptions, timeTag } from './parts.js';

type Product = { id: number; name: string };

/** A version as a link's text: deploys may name none. */
const versionText = (version: string): Html =>
  version ? html`${version}` : html`<span class="muted">no version</span>`;

/** Where an item is: each environment it went to, latest first, with what runs there now and what a rollback took out. */
export function environmentTimeline(productId: number, environments: EnvironmentEntry[]): Html {
  return html`<ol class="timeline">${environments.map(
    (e) => html`<li${e.reverted ? html` class="reverted"` : ''}>${timeTag(e.deployedAt)}
<p><strong class="environment">${e.environment}</strong> <a class="version" href="${deployHref(productId, e.deployId)}">${versionText(e.version)}</a>${e.by ? html` <span class="muted">deployed by ${e.by}</span>` : ''}</p>
${
  e.reverted
    ? html`<p class="reverted-note"><strong>Rolled back</strong> ${timeTag(e.reverted.at)}${e.reverted.by ? html` by ${e.reverted.by}` : ''}${e.reverted.rollbackId !== null ? html` (<a href="${deployHref(productId, e.reverted.rollbackId)}">the rollback</a>)` : ''}: not in ${e.environment} now.</p>`
    : ''
}</li>`,
  )}</ol>`;
}

/** What the last column of a history row says: a rollback and what it did to the item, or the rollback that undid the deploy. */
function historyNote(productId: number, d: HistoryEntry): Html | string {
  if (d.rollback) {
    return d.rollback.restoredVersion === null
      ? html`<strong>Rollback</strong>: took the item out`
      : html`<strong>Rollback</strong>: the item back to ${versionText(d.rollback.restoredVersion)}`;
  }
  if (d.reverted) {
    const link =
      d.reverted.rollbackId !== null
        ? html` (<a href="${deployHref(productId, d.reverted.rollbackId)}">rollback</a>)`
        : '';
    return html`<span class="reverted-note">Rolled back ${timeTag(d.reverted.at)}${link}</span>`;
  }
  return '';
}

/** An item's deploys in the order they happened, rollbacks marked. */
export function deployHistory(productId: number, deploys: HistoryEntry[], caption: string): Html {
  return html`<div class="table-scroll"><table class="deploys"><caption class="sr-only">${caption}</caption>
<thead><tr><th scope="col">When</th><th scope="col">Environment</th><th scope="col">Version</th><th scope="col">By</th><th scope="col">Note</th></tr></thead><tbody>
${deploys.map(
  (d) =>
    html`<tr${d.rollback ? html` class="rollback"` : ''}><th scope="row">${timeTag(d.at)}</th><td>${d.environment}</td><td><a href="${deployHref(productId, d.deployId)}">${versionText(d.version)}</a></td><td>${d.by}</td><td>${historyNote(productId, d)}</td></tr>`,
)}
</tbody></table></div>`;
}

/** A page of an item's environments or of its deploy history, beyond what the item's page shows. */
export interface ItemDeploysView {
  product: Product;
  item: { number: number; title: string };
  kind: 'environments' | 'history';
  environments: EnvironmentEntry[];
  history: HistoryEntry[];
  total: number;
  offset: number;
  pageSize: number;
}

export function itemDeploysPage(v: ItemDeploysView): Html {
  const p = v.product.id;
  const item = itemHref(p, v.item.number);
  const base = `${item}/${v.kind === 'environments' ? 'environments' : 'deploys'}`;
  const shown = v.kind === 'environments' ? v.environments.length : v.history.length;
  const end = v.offset + shown;
  const at = (offset: number) => (offset > 0 ? `${base}?offset=${offset}` : base);
  const [back, on] = v.kind === 'environments' ? ['Later', 'Earlier'] : ['Earlier', 'Later'];
  return html`${productNav(v.product, 'item')}
<p><a href="${item}">#${v.item.number} ${v.item.title}</a></p>
<p class="muted">${shown ? html`${v.offset + 1}\u2013${end} of ${v.total}` : html`None of ${v.total}`}, ${v.kind === 'environments' ? 'the latest deployed first' : 'oldest first'}.</p>
${v.kind === 'environments' ? environmentTimeline(p, v.environments) : deployHistory(p, v.history, `Deploys of #${v.item.number}`)}
<p class="pager">${v.offset > 0 ? html`<a href="${at(Math.max(0, v.offset - v.pageSize))}">${back}</a>` : ''}
${end < v.total ? html`<a href="${at(end)}">${on}</a>` : ''}</p>`;
}

/** The matrix's filters as they stand in the URL (non-empty ones only). */
export interface MatrixFilters {
  status?: string;
  not_deployed_to?: string;
}

export interface MatrixView {
  product: Product;
  /** The columns: the product's environments shown. */
  environments: string[];
  /** The product went to more environments than the columns hold. */
  moreEnvironments: boolean;
  /** Environments to suggest in the filter's field. */
  offered: string[];
  rows: MatrixRow[];
  total: number;
  offset: number;
  pageSize: number;
  filters: MatrixFilters;
  statuses: readonly string[];
  /** The filters' errors, next to their fields (a 400 page shows no rows). */
  form: FormState;
}

/** The statuses a person picks from: any, done (the two closed ones), or one. */
const statusChoices = (statuses: readonly string[]): [string, string][] => [
  ['', 'any'],
  ['completed,accepted', 'done (completed or accepted)'],
  ...statuses.map((s): [string, string] => [s, s]),
];

/** The matrix's address for these filters and a page. */
export function matrixHref(productId: number, filters: MatrixFilters, offset = 0): string {
  const q = new URLSearchParams();
  if (filters.status) q.set('status', filters.status);
  if (filters.not_deployed_to) q.set('not_deployed_to', filters.not_deployed_to);
  if (offset > 0) q.set('offset', String(offset));
  const s = q.toString();
  return `/app/products/${productId}/deploys/matrix${s ? `?${s}` : ''}`;
}

/** The two views of a product's deploys: every deploy, and what is where. */
export function deployTabs(productId: number, current: 'list' | 'matrix'): Html {
  const tab = (href: string, label: string, which: 'list' | 'matrix') =>
    html`<a href="${href}"${which === current ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<nav class="tabs" aria-label="Deploys">${tab(`/app/products/${productId}/deploys`, 'All deploys', 'list')} ${tab(matrixHref(productId, {}), 'What is where', 'matrix')}</nav>`;
}

function matrixCell(productId: number, c: MatrixCell | null): Html {
  if (!c) return html`<td class="never"><span aria-hidden="true">\u00b7</span><span class="sr-only">never</span></td>`;
  const link = html`<a href="${deployHref(productId, c.deployId)}">${versionText(c.version)}</a>`;
  return c.reverted
    ? html`<td class="reverted">${link} <span class="reverted-note">rolled back</span></td>`
    : html`<td>${link}</td>`;
}

function matrixFilterForm(v: MatrixView): Html {
  const s = v.form;
  const status = s.values.status ?? '';
  const choices = statusChoices(v.statuses);
  const known = choices.some(([value]) => value === status);
  const invalid = (name: string) => (s.errors[name] ? html` aria-invalid="true" aria-describedby="error-${name}"` : '');
  return html`<form class="filters" method="get" action="/app/products/${v.product.id}/deploys/matrix">
${s.message ? html`<p class="error">${s.message}</p>` : ''}
<p><label for="matrix-status">Status</label><select id="matrix-status" name="status"${invalid('status')}>${known ? '' : html`<option value="${status}" selected>${status}</option>`}${selectOptions(choices, status)}</select>${fieldError(s, 'status')}</p>
<p><label for="matrix-not-deployed-to">Not deployed to</label><input id="matrix-not-deployed-to" type="text" name="not_deployed_to" list="matrix-environments" value="${s.values.not_deployed_to ?? ''}" placeholder="production"${invalid('not_deployed_to')}>${fieldError(s, 'not_deployed_to')}
<datalist id="matrix-environments">${v.offered.map((e) => html`<option value="${e}"></option>`)}</datalist></p>
<p><button type="submit">Filter</button> <a href="${matrixHref(v.product.id, {})}">Clear</a></p>
</form>`;
}

/**
 * Which version of each item every environment runs: one row per item (newest first), one column
 * per environment, filtered as item lists are. A real table, scrolled sideways inside its box on
 * narrow screens.
 */
export function matrixPage(v: MatrixView): Html {
  const p = v.product.id;
  const end = v.offset + v.rows.length;
  const failed = Object.keys(v.form.errors).length > 0 || v.form.message !== undefined;
  return html`${productNav(v.product, 'deploys')}
${deployTabs(p, 'matrix')}
<p><a href="${matrixHref(p, { status: 'completed,accepted', not_deployed_to: 'production' })}">Done but not in production</a></p>
${matrixFilterForm(v)}
${
  failed
    ? ''
    : v.environments.length === 0
      ? html`<p class="muted">Nothing of this product has been deployed yet.</p>`
      : html`<p class="muted">Each cell is the version of the item's latest deploy to that environment.</p>
<div class="table-scroll" role="region" aria-labelledby="matrix-caption" tabindex="0"><table class="matrix">
<caption id="matrix-caption">${v.rows.length ? html`Items ${v.offset + 1}\u2013${end} of ${v.total}, newest first` : 'No items'}</caption>
<thead><tr><th scope="col">Item</th>${v.environments.map((e) => html`<th scope="col">${e}</th>`)}</tr></thead>
<tbody>${v.rows.map(
          (r) =>
            html`<tr id="row-${r.number}"><th scope="row"><a href="${itemHref(p, r.number)}">#${r.number} ${r.title}</a> <span class="muted">${r.type} \u00b7 ${r.status}</span></th>${r.cells.map((c) => matrixCell(p, c))}</tr>`,
        )}</tbody></table></div>
${v.moreEnvironments ? html`<p class="muted">The ${v.environments.length} environments deployed to most recently (and those filtered on) are shown.</p>` : ''}
<p class="pager">${v.offset > 0 ? html`<a href="${matrixHref(p, v.filters, Math.max(0, v.offset - v.pageSize))}">Newer items</a>` : ''}
${end < v.total ? html`<a href="${matrixHref(p, v.filters, end)}">Older items</a>` : ''}</p>`
}`;
}
