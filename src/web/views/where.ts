import type { EnvironmentEntry, HistoryEntry, MatrixCell, MatrixRow } from '../present.js';
import { html, type Html } from './html.js';
import {
  deployHref,
  fieldError,
  invalidAttrs,
  type FormState,
  itemHref,
  productNav,
  selectOptions,
  tableBox,
  timeTag,
} from './parts.js';

type Product = { id: number; name: string };

/** A version as a link's text: deploys may name none. */
const versionText = (version: string): Html =>
  version ? html`${version}` : html`<span class="muted">no version</span>`;

/** What a rollback did to one environment of the timeline: when, by whom, which rollback. */
function revertedNote(productId: number, e: EnvironmentEntry): Html | '' {
  const r = e.reverted;
  if (!r) return '';
  const by = r.by ? html` by ${r.by}` : '';
  const link = r.rollbackId !== null ? html` (<a href="${deployHref(productId, r.rollbackId)}">the rollback</a>)` : '';
  return html`<p class="reverted-note"><strong>Rolled back</strong> ${timeTag(r.at)}${by}${link}: \
not in ${e.environment} now.</p>`;
}

/**
 * Where an item is: each environment it went to, latest first, with what runs there now and what
 * a rollback took out.
 */
export function environmentTimeline({
  productId,
  environments,
}: {
  productId: number;
  environments: EnvironmentEntry[];
}): Html {
  const entry = (e: EnvironmentEntry) => {
    const by = e.by ? html` <span class="muted">deployed by ${e.by}</span>` : '';
    const version = html`<a class="version" href="${deployHref(productId, e.deployId)}">${versionText(e.version)}</a>`;
    return html`<li${e.reverted ? html` class="reverted"` : ''}>${timeTag(e.deployedAt)}
<p><strong class="environment">${e.environment}</strong> ${version}${by}</p>
${revertedNote(productId, e)}</li>`;
  };
  return html`<ol class="timeline">${environments.map(entry)}</ol>`;
}

/**
 * What the last column of a history row says: a rollback and what it did to the item, or the
 * rollback that undid the deploy.
 */
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
export function deployHistory({
  productId,
  deploys,
  caption,
}: {
  productId: number;
  deploys: HistoryEntry[];
  caption: string;
}): Html {
  const row = (d: HistoryEntry) =>
    html`<tr${d.rollback ? html` class="rollback"` : ''}><th scope="row">${timeTag(d.at)}</th>\
<td>${d.environment}</td><td><a href="${deployHref(productId, d.deployId)}">${versionText(d.version)}</a></td>\
<td>${d.by}</td><td>${historyNote(productId, d)}</td></tr>`;
  return tableBox(
    caption,
    html`<table class="deploys"><caption class="sr-only">${caption}</caption>
<thead><tr><th scope="col">When</th><th scope="col">Environment</th><th scope="col">Version</th>\
<th scope="col">By</th><th scope="col">Note</th></tr></thead><tbody>
${deploys.map(row)}
</tbody></table>`,
  );
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
  const environments = v.kind === 'environments';
  const base = `${item}/${environments ? 'environments' : 'deploys'}`;
  const shown = environments ? v.environments.length : v.history.length;
  const end = v.offset + shown;
  const at = (offset: number) => (offset > 0 ? `${base}?offset=${offset}` : base);
  const [back, on] = environments ? ['Later', 'Earlier'] : ['Earlier', 'Later'];
  const range = shown ? html`${v.offset + 1}\u2013${end} of ${v.total}` : html`None of ${v.total}`;
  const list = environments
    ? environmentTimeline({ productId: p, environments: v.environments })
    : deployHistory({ productId: p, deploys: v.history, caption: `Deploys of #${v.item.number}` });
  return html`${productNav(v.product, 'item')}
<p><a href="${item}">#${v.item.number} ${v.item.title}</a></p>
<p class="muted">${range}, ${environments ? 'the latest deployed first' : 'oldest first'}.</p>
${list}
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
  const list = tab(`/app/products/${productId}/deploys`, 'All deploys', 'list');
  const matrix = tab(matrixHref(productId, {}), 'What is where', 'matrix');
  return html`<nav class="tabs" aria-label="Deploys">${list} ${matrix}</nav>`;
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
  const typed = choices.some(([value]) => value === status)
    ? ''
    : html`<option value="${status}" selected>${status}</option>`;
  const invalid = (name: string) => invalidAttrs(s, name);
  return html`<form class="filters" method="get" action="/app/products/${v.product.id}/deploys/matrix">
${s.message ? html`<p class="error">${s.message}</p>` : ''}
<p><label for="matrix-status">Status</label><select id="matrix-status" name="status"${invalid('status')}>\
${typed}${selectOptions(choices, status)}</select>${fieldError(s, 'status')}</p>
<p><label for="matrix-not-deployed-to">Not deployed to</label><input id="matrix-not-deployed-to" type="text" \
name="not_deployed_to" list="matrix-environments" value="${s.values.not_deployed_to ?? ''}" placeholder="production"\
${invalid('not_deployed_to')}>${fieldError(s, 'not_deployed_to')}
<datalist id="matrix-environments">${v.offered.map((e) => html`<option value="${e}"></option>`)}</datalist></p>
<p><button type="submit">Filter</button> <a href="${matrixHref(v.product.id, {})}">Clear</a></p>
</form>`;
}

/** The table of the matrix: one row per item, one column per environment, and the pages around it. */
function matrixTable(v: MatrixView): Html {
  const p = v.product.id;
  const end = v.offset + v.rows.length;
  const caption = v.rows.length ? html`Items ${v.offset + 1}\u2013${end} of ${v.total}, newest first` : 'No items';
  const row = (r: MatrixRow) =>
    html`<tr id="row-${r.number}"><th scope="row"><a href="${itemHref(p, r.number)}">#${r.number} ${r.title}</a> \
<span class="muted">${r.type} \u00b7 ${r.status}</span></th>${r.cells.map((c) => matrixCell(p, c))}</tr>`;
  const more = v.moreEnvironments
    ? html`<p class="muted">The ${v.environments.length} environments deployed to most recently \
(and those filtered on) are shown.</p>`
    : '';
  const newer = Math.max(0, v.offset - v.pageSize);
  return html`<p class="muted">Each cell is the version of the item's latest deploy to that environment.</p>
<div class="table-scroll" role="region" aria-labelledby="matrix-caption" tabindex="0"><table class="matrix">
<caption id="matrix-caption">${caption}</caption>
<thead><tr><th scope="col">Item</th>${v.environments.map((e) => html`<th scope="col">${e}</th>`)}</tr></thead>
<tbody>${v.rows.map(row)}</tbody></table></div>
${more}
<p class="pager">${v.offset > 0 ? html`<a href="${matrixHref(p, v.filters, newer)}">Newer items</a>` : ''}
${end < v.total ? html`<a href="${matrixHref(p, v.filters, end)}">Older items</a>` : ''}</p>`;
}

/**
 * Which version of each item every environment runs: one row per item (newest first), one column
 * per environment, filtered as item lists are. A real table, scrolled sideways inside its box on
 * narrow screens.
 */
export function matrixPage(v: MatrixView): Html {
  const p = v.product.id;
  const failed = Object.keys(v.form.errors).length > 0 || v.form.message !== undefined;
  const done = matrixHref(p, { status: 'completed,accepted', not_deployed_to: 'production' });
  return html`${productNav(v.product, 'deploys')}
${deployTabs(p, 'matrix')}
<p><a href="${done}">Done but not in production</a></p>
${matrixFilterForm(v)}
${
  failed
    ? ''
    : v.environments.length === 0
      ? html`<p class="muted">Nothing of this product has been deployed yet.</p>`
      : matrixTable(v)
}`;
}
