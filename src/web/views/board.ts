import type { ItemJson } from '../../items/index.js';
import { boardQueryString } from '../input.js';
import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';
import {
  fieldError,
  invalidAttrs,
  type FormState,
  itemHref,
  otherErrors,
  personName,
  productNav,
  selectOptions,
} from './parts.js';

export interface BoardCard {
  item: ItemJson;
  subItems: number;
  /** A story's live sub-items, shown under it. */
  children: ItemJson[];
  /** The numbers of the cards next to it in the column (whatever page they are on), to move past. */
  above?: number;
  below?: number;
}

export interface BoardColumn {
  status: string;
  total: number;
  offset: number;
  /** Whether its cards are in the team's order (moved up and down), or newest first (done work). */
  ordered: boolean;
  cards: BoardCard[];
  /** Sub-items of the person the board is filtered by, as cards naming their story. */
  subCards: BoardCard[];
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
  /** The product's revision the board shows: its live changes are those after it. */
  revision: number;
  /** What the last change made from the board was, said once at its top. */
  notice?: string;
  /** The filter form as sent, when its filters were refused (the board shown is then unfiltered). */
  filterForm?: FormState;
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
  const notice = view.notice ? html`<p class="notice" role="status" id="notice">${view.notice}</p>` : '';
  return html`${productNav(p, 'board')}
${notice}${filterForm(view)}
<p class="board-help muted">Keys: <kbd>j</kbd>/<kbd>k</kbd> between cards, <kbd>Shift</kbd>+arrows to move one, \
<kbd>c</kbd> new item, <kbd>f</kbd> filter, <kbd>/</kbd> search, <kbd>?</kbd> <a href="#board-keys">all keys</a>.</p>
${columnTabs(view)}<div class="board" data-product="${p.id}" data-revision="${view.revision}" \
data-live="/app/products/${p.id}/events?since=${view.revision}">${view.columns.map((c) => column(context, c))}</div>
<p id="board-live" class="sr-only" aria-live="polite"></p>
${newItemForm(view)}
${keysPanel()}
<script src="/app/board.js" defer></script><script src="/app/live.js" defer></script>`;
}

function filterForm(view: BoardView): Html {
  const s = view.filterForm ?? { values: view.filters, errors: {} };
  const f = s.values;
  const people = view.members.map((m): [string, string] => [String(m.id), m.name]);
  const mine = f.mine && f.mine !== '0' ? html` checked` : '';
  // A value no option has (a person who is not a member, typed into the URL) is kept, to be said wrong.
  const chosen = (options: [string, string][], value?: string): [string, string][] =>
    value && !options.some(([v]) => v === value) ? [...options, [value, value]] : options;
  // Each field with its label around it, as one box of the row, its reason (when refused) beside it.
  const choice = (name: string, label: string, any: string, options: [string, string][]) =>
    html`<span><label>${label} <select id="filter-${name}" name="${name}"${invalidAttrs(s, name)}>\
<option value="">${any}</option>${selectOptions(chosen(options, f[name]), f[name])}</select></label>\
${fieldError(s, name)}</span>`;
  const tagsNotes = s.errors.tags ? invalidAttrs(s, 'tags', 'tags-hint') : html` aria-describedby="tags-hint"`;
  const qNotes = s.errors.q ? invalidAttrs(s, 'q', 'q-hint') : html` aria-describedby="q-hint"`;
  return html`<form class="filters" method="get" action="/app/products/${view.product.id}/board">
<span><label>Query <input id="filter-q" type="search" name="q" maxlength="500" value="${f.q ?? ''}" \
placeholder="login is:open"${qNotes}><small id="q-hint" class="sr-only">words and terms of the search</small></label>\
${fieldError(s, 'q', 'The query')}</span>
${choice(
  'type',
  'Type',
  'any',
  view.types.map((t) => [t, t]),
)}
${choice('assignee', 'Assignee', 'anyone', people)}
${choice('creator', 'Creator', 'anyone', people)}
<span><label>Tags <input id="filter-tags" type="text" name="tags" value="${f.tags ?? ''}" placeholder="ui, api"\
${tagsNotes}> <small id="tags-hint" class="muted">any case: ui finds UI; every tag listed must match</small></label>\
${fieldError(s, 'tags')}</span>
<label class="check"><input type="checkbox" name="mine" value="1"${mine}> Mine</label>
<button type="submit">Filter</button> <a href="/app/products/${view.product.id}/board">Clear</a>
</form>`;
}

/** On a phone the columns are shown one at a time: these links pick which (the script makes them tabs). */
function columnTabs(view: BoardView): Html | '' {
  if (view.columns.length < 2) return '';
  return html`<nav class="column-tabs" aria-label="Columns">${view.columns.map(
    (c) =>
      html`<a href="#col-${c.status}" data-status="${c.status}">${c.status} <span class="count">${c.total}</span></a>`,
  )}</nav>`;
}

/** Every key of the board, in one panel (`?` shows it; without script it is a section at the bottom). */
function keysPanel(): Html {
  const keys: [string, string][] = [
    ['j / k', 'next / previous card'],
    ['Shift+\u2191 / Shift+\u2193', 'move the card up / down its column'],
    ['Shift+\u2190 / Shift+\u2192', 'move the card to the previous / next status'],
    ['Enter', 'open the card'],
    ['c', 'new item'],
    ['f', 'the filter'],
    ['/', 'the search box'],
    ['?', 'this list'],
    ['Esc', 'close this list'],
  ];
  return html`<section id="board-keys" class="keys" aria-labelledby="board-keys-title" tabindex="-1">
<h2 id="board-keys-title">Keyboard</h2>\
<dl>${keys.map(([k, what]) => html`<dt><kbd>${k}</kbd></dt><dd>${what}</dd>`)}</dl>
</section>`;
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
  const order = c.ordered ? '' : html` <span class="muted order">newest first</span>`;
  const subs = c.subCards.length
    ? html`<h3 class="sub-cards">Sub-items</h3><ul class="cards sub-cards">${c.subCards.map((card) =>
        cardHtml(context, card),
      )}</ul>`
    : '';
  return html`<section class="column" data-status="${c.status}" aria-labelledby="col-${c.status}" \
id="column-${c.status}">
<h2 id="col-${c.status}">${heading} <span class="count">${c.total}</span>${order}</h2>
${earlier}
<ol class="cards" start="${c.offset + 1}">${c.cards.map((card) => cardHtml(context, card))}</ol>
${c.cards.length === 0 ? html`<p class="muted">No items.</p>` : ''}
${more}${subs}
</section>`;
}

/** A person's initials, with their name for those who point at it and for screen readers. */
function initials(user: ItemJson['assigned_to']): Html | '' {
  if (!user) return '';
  const name = personName(user);
  const short = `${user.first_name.charAt(0)}${user.last_name.charAt(0)}` || user.email.charAt(0);
  return html` <span class="who" title="${name}"><span aria-hidden="true">${short.toUpperCase()}</span>\
<span class="sr-only">assigned to ${name}</span></span>`;
}

/** A card's marks: blocked, comments. */
function marks(i: ItemJson): Html {
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
  return html`${blocked}${comments}`;
}

/** A story's sub-items under it, folded: their number, title and status. */
function childrenHtml(productId: number, card: BoardCard): Html | '' {
  if (!card.children.length) return '';
  const n = card.subItems;
  return html`<details class="subs"><summary>${n} sub-item${n === 1 ? '' : 's'}</summary><ul>${card.children.map(
    (c) => html`<li><a href="${itemHref(productId, c.number)}">#${c.number} ${c.title}</a> \
<span class="muted">${c.status}</span>${initials(c.assigned_to)}</li>`,
  )}</ul></details>`;
}

/**
 * One card: number, type, score, title, tags, assignee, marks, and one move menu. Kept lean,
 * without whitespace between elements: a board shows a few hundred of them.
 */
function cardHtml(context: BoardContext, card: BoardCard): Html {
  const i = card.item;
  const productId = context.view.product.id;
  const href = itemHref(productId, i.number);
  const tags = i.tags.length ? html` <span class="tags">${i.tags.map((t) => html`<span>${t}</span>`)}</span>` : '';
  const parent = i.parent
    ? html`<p class="parent muted">in <a href="${itemHref(productId, i.parent.number)}">#${i.parent.number} \
${i.parent.title}</a></p>`
    : '';
  return html`<li class="card" id="item-${i.number}" data-number="${i.number}" tabindex="-1"><p class="meta">\
#${i.number} <span class="type type-${i.type}">${i.type}</span> \
<span class="score">${i.score}</span>${marks(i)}${initials(i.assigned_to)}${tags}</p>\
<p class="title"><a href="${href}">${i.title}</a></p>${parent}${childrenHtml(productId, card)}\
${i.parent ? '' : moveMenu(context, card)}</li>`;
}

/** A card's one move menu: up, to the top, down (in ordered columns), or to another status. */
function moveMenu({ view, back }: BoardContext, card: BoardCard): Html {
  const i = card.item;
  const n = i.number;
  const up =
    card.above !== undefined
      ? html`<input type="hidden" name="above" value="${card.above}">\
<button name="to" value="up">Up</button>`
      : '';
  const ordered = card.above !== undefined || card.below !== undefined || back;
  const top = ordered && card.above !== undefined ? html`<button name="to" value="top">Top</button>` : '';
  const down =
    card.below !== undefined
      ? html`<input type="hidden" name="below" value="${card.below}">\
<button name="to" value="down">Down</button>`
      : '';
  const others = view.statuses.filter((s) => s !== i.status);
  const statuses = others.map((s) => html`<button name="status" value="${s}" data-to="status">To ${s}</button>`);
  return html`<details class="move"><summary aria-label="Move #${n}">Move</summary>\
<form class="move" method="post" action="/app/products/${view.product.id}/items/${n}/move">\
${csrfField(view.viewer)}${back ? html`<input type="hidden" name="back" value="${back}">` : ''}\
${top}${up}${down}${statuses}</form></details>`;
}

function newItemForm(view: BoardView): Html {
  const form = view.newItem ?? { values: {}, errors: {} };
  const action = `/app/products/${view.product.id}/items`;
  return html`<h2 id="new-item">New item</h2>
${createForm({ action, form, viewer: view.viewer, types: view.types, statuses: view.statuses, board: true })}`;
}

/** The form that creates an item (or, with a parent, a sub-item), as shown with what was typed and what was wrong. */
export interface CreateFormOptions {
  action: string;
  form: FormState;
  viewer: Viewer;
  types: readonly string[];
  statuses: readonly string[];
  parent?: number;
  /** Made on the board: the new item's page is not where one goes next, the board is. */
  board?: boolean;
}

const firstRefused = invalidAttrs;

/** A text field of the create form. */
const createText = (s: FormState, name: 'title' | 'who' | 'what' | 'why', label: Html | string): Html =>
  html`<p><label for="new-${name}">${label}</label>\
<input id="new-${name}" type="text" name="${name}" maxlength="255" value="${s.values[name] ?? ''}"\
${firstRefused(s, name)}>${fieldError(s, name)}</p>`;

/** The form that creates an item (or, with a parent, a sub-item): a story is written as who / what / why. */
export function createForm(o: CreateFormOptions): Html {
  const s = o.form;
  const v = s.values;
  const parent = o.parent !== undefined ? html`<input type="hidden" name="parent" value="${o.parent}">` : '';
  const shown = ['type', 'title', 'who', 'what', 'why', 'status', 'parent'];
  return html`<form class="item-form" method="post" action="${o.action}">${csrfField(o.viewer)}
${parent}${o.board ? html`<input type="hidden" name="from" value="board">` : ''}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, shown)}
<p><label for="new-type">Type</label><select id="new-type" name="type"${firstRefused(s, 'type')}>${selectOptions(
    o.types.map((t) => [t, t]),
    v.type ?? 'task',
  )}</select>${fieldError(s, 'type')}</p>
${createText(s, 'title', html`Title <span class="muted">(tasks, defects, tests)</span>`)}
<fieldset><legend>A story: as a <em>who</em>, I want <em>what</em> so that <em>why</em></legend>
${createText(s, 'who', 'Who')}
${createText(s, 'what', 'What')}
${createText(s, 'why', 'Why')}
</fieldset>
<p><label for="new-status">Status</label>\
<select id="new-status" name="status"${firstRefused(s, 'status')}>${selectOptions(
    o.statuses.map((t) => [t, t]),
    v.status ?? 'backlog',
  )}</select>${fieldError(s, 'status')}</p>
${fieldError(s, 'parent')}
<p><button type="submit">Create</button></p>
</form>`;
}
