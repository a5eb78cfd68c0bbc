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
  viewer: Viewer;
}

/** What each column and card of a board is drawn with: the board, and its filters as a query string. */
interface BoardContext {
  view: BoardView;
  back: string;
}

export function boardPage(view: BoardView): Html {
  const p = view.product;
  const context = { view, back: boardQueryString(view.filters).replace(/^\?/, '') };
  return html`${productNav(p, 'board')}
${filterForm(view)}
<div class="board">${view.columns.map((c) => column(context, c))}</div>
${newItemForm(view)}
<script src="/app/board.js" defer></script>`;
}

function filterForm(view: BoardView): Html {
  const f = view.filters;
  const people = view.members.map((m): [string, string] => [String(m.id), m.name]);
  const mine = f.mine && f.mine !== '0' ? html` checked` : '';
  return html`<form class="filters" method="get" action="/app/products/${view.product.id}/board">
<label>Type <select name="type"><option value="">any</option>${selectOptions(
    view.types.map((t) => [t, t]),
    f.type,
  )}</select></label>
<label>Assignee <select name="assignee"><option value="">anyone</option>${selectOptions(people, f.assignee)}\
</select></label>
<label>Creator <select name="creator"><option value="">anyone</option>${selectOptions(people, f.creator)}\
</select></label>
<label>Tags <input type="text" name="tags" value="${f.tags ?? ''}" placeholder="ui, api"></label>
<label class="check"><input type="checkbox" name="mine" value="1"${mine}> Mine</label>
<button type="submit">Filter</button> <a href="/app/products/${view.product.id}/board">Clear</a>
</form>`;
}

function column(context: BoardContext, c: BoardColumn): Html {
  const { view } = context;
  const base = `/app/products/${view.product.id}/board`;
  const at = (offset: number) => `${base}${boardQueryString(view.filters, { status: c.status, offset })}`;
  const end = c.offset + c.cards.length;
  const more = end < c.total ? html`<a class="more" href="${at(end)}">More (${c.total - end} left)</a>` : '';
  const earlier =
    view.single && c.offset > 0
      ? html`<a class="more" href="${at(Math.max(0, c.offset - view.pageSize))}">Earlier cards</a>`
      : '';
  const heading = view.single ? html`${c.status}` : html`<a href="${at(0)}">${c.status}</a>`;
  return html`<section class="column" data-status="${c.status}" aria-labelledby="col-${c.status}">
<h2 id="col-${c.status}">${heading} <span class="count">${c.total}</span></h2>
${earlier}
<ol class="cards" start="${c.offset + 1}">${c.cards.map((card) => cardHtml(context, card))}</ol>
${c.cards.length === 0 ? html`<p class="muted">No items.</p>` : ''}
${more}
</section>`;
}

/**
 * One card: what it is, and its own move form (the keyboard's way, and what a drop posts). Kept
 * lean, without whitespace between elements: a board shows a few hundred of them.
 */
function cardHtml(context: BoardContext, card: BoardCard): Html {
  const i = card.item;
  const href = itemHref(context.view.product.id, i.number);
  const subs = card.subItems
    ? html` <span class="subs">${card.subItems} sub-item${card.subItems === 1 ? '' : 's'}</span>`
    : '';
  const blockers = i.counts.blockers;
  const blocked = blockers
    ? html` <span class="mark blocked">Blocked\
<span class="sr-only"> by ${blockers} item${blockers === 1 ? '' : 's'}</span></span>`
    : '';
  const n = i.counts.comments;
  const comments = n
    ? html` <span class="mark comments">${n}\
<span class="sr-only"> comment${n === 1 ? '' : 's'}</span></span>`
    : '';
  const tags = i.tags.length ? html`<ul class="tags">${i.tags.map((t) => html`<li>${t}</li>`)}</ul>` : '';
  const assignee = i.assigned_to ? html`<p class="muted">${personName(i.assigned_to)}</p>` : '';
  return html`<li class="card" id="item-${i.number}" data-number="${i.number}"><p class="meta">\
<a href="${href}">#${i.number}</a> <span class="type type-${i.type}">${i.type}</span> \
<span class="score">${i.score}</span>${subs}${blocked}${comments}</p>\
<p class="title"><a href="${href}">${i.title}</a></p>${tags}${assignee}${moveForm(context, card)}</li>`;
}

/** A card's move form: up, to the top, down, or to another status. */
function moveForm({ view, back }: BoardContext, card: BoardCard): Html {
  const i = card.item;
  const n = i.number;
  const up =
    card.above !== undefined
      ? html`<input type="hidden" name="above" value="${card.above}">\
<button name="to" value="up" aria-label="Move #${n} up">Up</button>`
      : '';
  const top =
    card.above !== undefined || back
      ? html`<button name="to" value="top" aria-label="Move #${n} to the top of ${i.status}">Top</button>`
      : '';
  const down =
    card.below !== undefined
      ? html`<input type="hidden" name="below" value="${card.below}">\
<button name="to" value="down" aria-label="Move #${n} down">Down</button>`
      : '';
  const statuses = selectOptions(
    view.statuses.map((s) => [s, s]),
    i.status,
  );
  return html`<form class="move" method="post" action="/app/products/${view.product.id}/items/${n}/move">\
${csrfField(view.viewer)}${back ? html`<input type="hidden" name="back" value="${back}">` : ''}${up}${top}${down}\
<select name="status" aria-label="Status for #${n}">${statuses}</select>\
<button name="to" value="status" aria-label="Move #${n} to the chosen status">Move</button></form>`;
}

function newItemForm(view: BoardView): Html {
  const form = view.newItem ?? { values: {}, errors: {} };
  const action = `/app/products/${view.product.id}/items`;
  return html`<h2 id="new-item">New item</h2>
${createForm({ action, form, viewer: view.viewer, types: view.types, statuses: view.statuses })}`;
}

/** The form that creates an item (or, with a parent, a sub-item), as shown with what was typed and what was wrong. */
export interface CreateFormOptions {
  action: string;
  form: FormState;
  viewer: Viewer;
  types: readonly string[];
  statuses: readonly string[];
  parent?: number;
}

/** A text field of the create form. */
const createText = (s: FormState, name: 'title' | 'who' | 'what' | 'why', label: Html | string): Html =>
  html`<p><label for="new-${name}">${label}</label>\
<input id="new-${name}" type="text" name="${name}" maxlength="255" value="${s.values[name] ?? ''}">\
${fieldError(s, name)}</p>`;

/** The form that creates an item (or, with a parent, a sub-item): a story is written as who / what / why. */
export function createForm(o: CreateFormOptions): Html {
  const s = o.form;
  const v = s.values;
  const parent = o.parent !== undefined ? html`<input type="hidden" name="parent" value="${o.parent}">` : '';
  const shown = ['type', 'title', 'who', 'what', 'why', 'status', 'parent'];
  return html`<form class="item-form" method="post" action="${o.action}">${csrfField(o.viewer)}
${parent}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, shown)}
<p><label for="new-type">Type</label><select id="new-type" name="type">${selectOptions(
    o.types.map((t) => [t, t]),
    v.type ?? 'task',
  )}</select>${fieldError(s, 'type')}</p>
${createText(s, 'title', html`Title <span class="muted">(tasks, defects, tests)</span>`)}
<fieldset><legend>A story: as a <em>who</em>, I want <em>what</em> so that <em>why</em></legend>
${createText(s, 'who', 'Who')}
${createText(s, 'what', 'What')}
${createText(s, 'why', 'Why')}
</fieldset>
<p><label for="new-status">Status</label><select id="new-status" name="status">${selectOptions(
    o.statuses.map((t) => [t, t]),
    v.status ?? 'backlog',
  )}</select>${fieldError(s, 'status')}</p>
${fieldError(s, 'parent')}
<p><button type="submit">Create</button></p>
</form>`;
}
