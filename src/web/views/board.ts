import type { ItemJson } from '../../items/index.js';
import { boardQueryString } from '../input.js';
import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';
import { fieldError, type FormState, itemHref, otherErrors, personName, productNav, selectOptions } from './parts.js';

export interface BoardCard {
  item: ItemJson;
  subItems: number;
  /** The numbers of the cards next to it in the column (whatever page they are on), to move past. */
  above?: number;
  below?: number;
}

export interface BoardColumn {
  status: string;
  total: number;
  offset: number;
  cards: BoardCard[];
}

export interface BoardView {
  product: { id: number; name: string };
  columns: BoardColumn[];
  filters: Record<string, string>;
  /** One column paged on its own (`?status=...&offset=...`). */
  single: boolean;
  pageSize: number;
  members: { id: number; name: string }[];
  types: readonly string[];
  /** Where a card can be moved to (what clients may set). */
  statuses: readonly string[];
  newItem?: FormState;
}

export function boardPage(view: BoardView, viewer: Viewer): Html {
  const p = view.product;
  const back = boardQueryString(view.filters).replace(/^\?/, '');
  return html`${productNav(p, 'board')}
${filterForm(view)}
<div class="board">${view.columns.map((c) => column(view, c, back, viewer))}</div>
${newItemForm(view, viewer)}
<script src="/app/board.js" defer></script>`;
}

function filterForm(view: BoardView): Html {
  const f = view.filters;
  return html`<form class="filters" method="get" action="/app/products/${view.product.id}/board">
<label>Type <select name="type"><option value="">any</option>${selectOptions(
    view.types.map((t) => [t, t]),
    f.type,
  )}</select></label>
<label>Assignee <select name="assignee"><option value="">anyone</option>${selectOptions(
    view.members.map((m) => [String(m.id), m.name]),
    f.assignee,
  )}</select></label>
<label>Creator <select name="creator"><option value="">anyone</option>${selectOptions(
    view.members.map((m) => [String(m.id), m.name]),
    f.creator,
  )}</select></label>
<label>Tags <input type="text" name="tags" value="${f.tags ?? ''}" placeholder="ui, api"></label>
<label class="check"><input type="checkbox" name="mine" value="1"${f.mine && f.mine !== '0' ? html` checked` : ''}> Mine</label>
<button type="submit">Filter</button> <a href="/app/products/${view.product.id}/board">Clear</a>
</form>`;
}

function column(view: BoardView, c: BoardColumn, back: string, viewer: Viewer): Html {
  const base = `/app/products/${view.product.id}/board`;
  const end = c.offset + c.cards.length;
  const more =
    end < c.total
      ? html`<a class="more" href="${base}${boardQueryString(view.filters, { status: c.status, offset: end })}">More (${c.total - end} left)</a>`
      : '';
  const earlier =
    view.single && c.offset > 0
      ? html`<a class="more" href="${base}${boardQueryString(view.filters, { status: c.status, offset: Math.max(0, c.offset - view.pageSize) })}">Earlier cards</a>`
      : '';
  const heading = view.single
    ? html`${c.status}`
    : html`<a href="${base}${boardQueryString(view.filters, { status: c.status, offset: 0 })}">${c.status}</a>`;
  return html`<section class="column" data-status="${c.status}" aria-labelledby="col-${c.status}">
<h2 id="col-${c.status}">${heading} <span class="count">${c.total}</span></h2>
${earlier}
<ol class="cards" start="${c.offset + 1}">${c.cards.map((card) => cardHtml(view, card, back, viewer))}</ol>
${c.cards.length === 0 ? html`<p class="muted">No items.</p>` : ''}
${more}
</section>`;
}

/**
 * One card: what it is, and its own move form (the keyboard's way, and what a drop posts). Kept
 * lean, without whitespace between elements: a board shows a few hundred of them.
 */
function cardHtml(view: BoardView, card: BoardCard, back: string, viewer: Viewer): Html {
  const i = card.item;
  const p = view.product.id;
  const href = itemHref(p, i.number);
  const subs = card.subItems
    ? html` <span class="subs">${card.subItems} sub-item${card.subItems === 1 ? '' : 's'}</span>`
    : '';
  return html`<li class="card" id="item-${i.number}" data-number="${i.number}"><p class="meta"><a href="${href}">#${i.number}</a> <span class="type type-${i.type}">${i.type}</span> <span class="score">${i.score}</span>${subs}</p><p class="title"><a href="${href}">${i.title}</a></p>${i.tags.length ? html`<ul class="tags">${i.tags.map((t) => html`<li>${t}</li>`)}</ul>` : ''}${i.assigned_to ? html`<p class="muted">${personName(i.assigned_to)}</p>` : ''}<form class="move" method="post" action="/app/products/${p}/items/${i.number}/move">${csrfField(viewer)}${back ? html`<input type="hidden" name="back" value="${back}">` : ''}${card.above !== undefined ? html`<input type="hidden" name="above" value="${card.above}"><button name="to" value="up" aria-label="Move #${i.number} up">Up</button>` : ''}${card.above !== undefined || back ? html`<button name="to" value="top" aria-label="Move #${i.number} to the top of ${i.status}">Top</button>` : ''}${card.below !== undefined ? html`<input type="hidden" name="below" value="${card.below}"><button name="to" value="down" aria-label="Move #${i.number} down">Down</button>` : ''}<select name="status" aria-label="Status for #${i.number}">${selectOptions(
    view.statuses.map((s) => [s, s]),
    i.status,
  )}</select><button name="to" value="status" aria-label="Move #${i.number} to the chosen status">Move</button></form></li>`;
}

function newItemForm(view: BoardView, viewer: Viewer): Html {
  const s = view.newItem ?? { values: {}, errors: {} };
  return html`<h2 id="new-item">New item</h2>
${createForm(`/app/products/${view.product.id}/items`, s, viewer, { types: view.types, statuses: view.statuses })}`;
}

/** The form that creates an item (or, with a parent, a sub-item): a story is written as who / what / why. */
export function createForm(
  action: string,
  s: FormState,
  viewer: Viewer,
  o: { types: readonly string[]; statuses: readonly string[]; parent?: number },
): Html {
  const v = s.values;
  return html`<form class="item-form" method="post" action="${action}">${csrfField(viewer)}
${o.parent !== undefined ? html`<input type="hidden" name="parent" value="${o.parent}">` : ''}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, ['type', 'title', 'who', 'what', 'why', 'status', 'parent'])}
<p><label for="new-type">Type</label><select id="new-type" name="type">${selectOptions(
    o.types.map((t) => [t, t]),
    v.type ?? 'task',
  )}</select>${fieldError(s, 'type')}</p>
<p><label for="new-title">Title <span class="muted">(tasks, defects, tests)</span></label><input id="new-title" type="text" name="title" maxlength="255" value="${v.title ?? ''}">${fieldError(s, 'title')}</p>
<fieldset><legend>A story: as a <em>who</em>, I want <em>what</em> so that <em>why</em></legend>
<p><label for="new-who">Who</label><input id="new-who" type="text" name="who" maxlength="255" value="${v.who ?? ''}">${fieldError(s, 'who')}</p>
<p><label for="new-what">What</label><input id="new-what" type="text" name="what" maxlength="255" value="${v.what ?? ''}">${fieldError(s, 'what')}</p>
<p><label for="new-why">Why</label><input id="new-why" type="text" name="why" maxlength="255" value="${v.why ?? ''}">${fieldError(s, 'why')}</p>
</fieldset>
<p><label for="new-status">Status</label><select id="new-status" name="status">${selectOptions(
    o.statuses.map((t) => [t, t]),
    v.status ?? 'backlog',
  )}</select>${fieldError(s, 'status')}</p>
${fieldError(s, 'parent')}
<p><button type="submit">Create</button></p>
</form>`;
}
