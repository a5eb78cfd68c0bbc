import type { ItemJson } from '../../items/index.js';
import { createForm } from './board.js';
import { csrfField, type Viewer } from './layout.js';
import { html, raw, type Html } from './html.js';
import type { EnvironmentEntry, HistoryEntry } from '../present.js';
import {
  fieldError,
  invalidAttrs,
  type FormState,
  itemHref,
  otherErrors,
  personName,
  productNav,
  selectOptions,
  when,
} from './parts.js';
import { deployHistory, environmentTimeline } from './where.js';
import {
  attachmentsSection,
  blocksSection,
  favoriteForm,
  flashMessage,
  timelineSection,
  type ConversationContext,
  type ConversationView,
} from './conversation.js';

export interface ItemView {
  product: { id: number; name: string };
  /** The product's revision the page shows: its live changes are those after it. */
  revision?: number;
  item: ItemJson;
  /** The description, already rendered as safe HTML (Markdown, raw HTML shown as text). */
  descriptionHtml: string;
  subItems?: { number: number; title: string; status: string; type: string }[];
  subItemsTotal: number;
  /** The environments the item went to, the latest first. */
  environments: EnvironmentEntry[];
  environmentsTotal: number;
  /** The item's latest deploys, in the order they happened. */
  history: HistoryEntry[];
  historyTotal: number;
  followers: string[];
  following: boolean;
  members: { id: number; name: string }[];
  types: readonly string[];
  statuses: readonly string[];
  scores: readonly string[];
  edit: EditForm;
  newSubItem: FormState;
  viewer: Viewer;
  conversation: ConversationView;
}

/**
 * The fields of the edit form, each also carried as it was shown (`seen_<field>`), so that a save
 * changes only what the person changed.
 */
export const EDIT_FIELDS = [
  'title',
  'who',
  'what',
  'why',
  'description',
  'status',
  'score',
  'tags',
  'assigned_to',
  'parent',
] as const;
export type EditField = (typeof EDIT_FIELDS)[number];

/**
 * The edit form: the values in its fields, the values it was opened with (`seen`) and the item's
 * version then, and the fields somebody else changed meanwhile that the person changed too
 * (`conflicts`), whose other value the page shows beside theirs.
 */
export interface EditForm extends FormState {
  seen: Record<string, string>;
  version: string;
  conflicts: readonly string[];
}

/** Where the page's script follows the product's changes from (the revision shown), and says so. */
const liveMark = (v: ItemView): Html =>
  v.revision === undefined
    ? html``
    : html`<p id="live-note" class="sr-only" aria-live="polite" data-item="${v.item.number}" \
data-revision="${v.revision}" data-live="/app/products/${v.product.id}/events?since=${v.revision}"></p>`;

/** An item's page: the item, its sub-items, where it is deployed, and its edit form. */
export function itemPage(v: ItemView): Html {
  const ctx: ConversationContext = {
    productId: v.product.id,
    number: v.item.number,
    viewer: v.viewer,
    c: v.conversation,
  };
  return html`${productNav(v.product, 'item')}
${flashMessage(ctx)}
<article class="item">
${itemFacts(v)}
<div class="item-actions">${favoriteForm(ctx)}
${followForm(v)}
${
  v.item.archived
    ? ''
    : html`<p><a class="button secondary" href="${itemHref(v.product.id, v.item.number)}/archive">\
Archive\u2026</a></p>`
}</div>
</article>
${subItems(v)}
${blocksSection(ctx)}
${attachmentsSection(ctx)}
${whereDeployed(v)}
${timelineSection(ctx)}
<h2 id="edit">Edit</h2>
${editForm(v)}
${liveMark(v)}<script src="/app/item.js" defer></script><script src="/app/live.js" defer></script>`;
}

/** What the item is: its kind and state, title, tags, description, people, parent and progress. */
function itemFacts(v: ItemView): Html {
  const i = v.item;
  const progress = [
    ['Created', i.created_at],
    ['Started', i.progress.started_at],
    ['Closed', i.progress.closed_at],
    ['Accepted', i.progress.accepted_at],
  ].filter(([, at]) => at);
  const reason = i.close_reason ? html` (${i.close_reason})` : '';
  const archived = i.archived ? html` \u00b7 <em>archived</em>` : '';
  const assignee = i.assigned_to ? personName(i.assigned_to) : html`<span class="muted">nobody</span>`;
  const parent = i.parent
    ? html`<dt>Parent</dt><dd><a href="${itemHref(v.product.id, i.parent.number)}">#${i.parent.number} \
${i.parent.title}</a></dd>`
    : '';
  const description = i.description ? raw(v.descriptionHtml) : html`<p class="muted">No description.</p>`;
  return html`<p class="meta">#${i.number} <span class="type type-${i.type}">${i.type}</span> \u00b7 \
<strong>${i.status}</strong>${reason} \u00b7 score ${i.score}${archived}</p>
<h2 class="item-title">${i.title}</h2>
${i.tags.length ? html`<ul class="tags">${i.tags.map((t) => html`<li>${t}</li>`)}</ul>` : ''}
<div class="markdown">${description}</div>
<dl class="facts">
<dt>Created by</dt><dd>${personName(i.created_by)}</dd>
<dt>Assigned to</dt><dd>${assignee}</dd>
${parent}
${progress.map(([label, at]) => html`<dt>${label}</dt><dd>${when(at)}</dd>`)}
</dl>`;
}

/** Who follows the item, and the button to follow it or stop. */
function followForm(v: ItemView): Html {
  const count = v.followers.length;
  return html`<form method="post" action="${itemHref(v.product.id, v.item.number)}/follow">${csrfField(v.viewer)}
<input type="hidden" name="follow" value="${v.following ? '0' : '1'}">
<p>${count} follower${count === 1 ? '' : 's'}${count ? html`: ${v.followers.join(', ')}` : ''}
<button type="submit">${v.following ? 'Unfollow' : 'Follow'}</button></p></form>`;
}

/** Where the item is deployed, and how it got there; links to the rest when there is more than the page shows. */
function whereDeployed(v: ItemView): Html {
  const p = v.product.id;
  const item = itemHref(p, v.item.number);
  if (v.environmentsTotal === 0)
    return html`<h2 id="deployed">Deployed to</h2>\n<p class="muted">Not deployed yet.</p>`;
  const moreEnvironments =
    v.environmentsTotal > v.environments.length
      ? html`<p><a href="${item}/environments?offset=${v.environments.length}">Earlier environments</a> \
<span class="muted">(${v.environmentsTotal - v.environments.length} more)</span></p>`
      : '';
  const earlierDeploys =
    v.historyTotal > v.history.length
      ? html`<p class="muted">The latest ${v.history.length}, oldest first. \
<a href="${item}/deploys">All ${v.historyTotal} deploys</a></p>`
      : '';
  return html`<h2 id="deployed">Deployed to <span class="count">${v.environmentsTotal}</span></h2>
${environmentTimeline({ productId: p, environments: v.environments })}
${moreEnvironments}
<h2 id="history">Deploy history <span class="count">${v.historyTotal}</span></h2>
${earlierDeploys}
${deployHistory({ productId: p, deploys: v.history, caption: `Deploys of #${v.item.number}, oldest first` })}`;
}

function subItems(v: ItemView): Html | '' {
  if (!v.subItems) return '';
  const p = v.product.id;
  const list = v.subItems.length
    ? html`<ul class="sub-items">${v.subItems.map(
        (s) => html`<li><a href="${itemHref(p, s.number)}">#${s.number} ${s.title}</a> \
<span class="muted">${s.type} \u00b7 ${s.status}</span></li>`,
      )}</ul>`
    : html`<p class="muted">No sub-items yet.</p>`;
  const open = Object.keys(v.newSubItem.errors).length || v.newSubItem.message ? html` open` : '';
  const form = createForm({
    action: `/app/products/${p}/items`,
    form: v.newSubItem,
    viewer: v.viewer,
    types: v.types.filter((t) => t !== 'story'),
    statuses: v.statuses,
    parent: v.item.number,
  });
  return html`<h2>Sub-items <span class="count">${v.subItemsTotal}</span></h2>
${list}
<details${open}><summary>New sub-item</summary>
${form}
</details>`;
}

const FIELD_LABELS: Record<EditField, string> = {
  title: 'title',
  who: '"As a"',
  what: '"I want"',
  why: '"So that"',
  description: 'description',
  status: 'status',
  score: 'score',
  tags: 'tags',
  assigned_to: 'assignee',
  parent: 'parent story',
};

/**
 * Beside a field somebody else changed since the form was opened, that the person changed too:
 * their value, and the choice of which to keep (the person's own stays in the field).
 */
function conflictNote(v: ItemView, name: EditField): Html | '' {
  if (!v.edit.conflicts.includes(name)) return '';
  const raw = editValues(v.item)[name];
  const theirs =
    name === 'assigned_to'
      ? (v.members.find((m) => String(m.id) === raw)?.name ?? (raw ? `user ${raw}` : 'nobody'))
      : raw;
  return html`<div class="conflict" id="conflict-${name}" role="alert"><p>Somebody else changed the \
${FIELD_LABELS[name]} since you opened this form. Theirs:</p>
<blockquote class="theirs">${theirs === '' ? html`<span class="muted">(empty)</span>` : theirs}</blockquote>
<p>Yours is in the field. <label><input type="radio" name="keep_${name}" value="yours" checked> Keep yours</label> \
<label><input type="radio" name="keep_${name}" value="theirs"> Keep theirs</label></p></div>`;
}

/** The edit form's parts: its state, and how a field says it is wrong or in conflict. */
interface EditParts {
  v: ItemView;
  s: EditForm;
  described: (name: string) => Html | '';
}

function editParts(v: ItemView): EditParts {
  const s = v.edit;
  const described = (name: string) => invalidAttrs(s, name, s.conflicts.includes(name) ? `conflict-${name}` : '');
  return { v, s, described };
}

/** A text field of the edit form, with its reason and its conflict. */
const editText = ({ v, s, described }: EditParts, name: EditField, label: string): Html =>
  html`<p><label for="edit-${name}">${label}</label><input id="edit-${name}" type="text" name="${name}" \
maxlength="255" value="${s.values[name] ?? ''}"${described(name)}>${fieldError(s, name)}</p>${conflictNote(v, name)}`;

/** A choice of the edit form (status, score, assignee): `first`, the options, the current value. */
function editSelect(
  { v, s, described }: EditParts,
  o: { name: EditField; label: string; first: Html | ''; options: [string, string][] },
): Html {
  const name = o.name;
  return html`<p><label for="edit-${name}">${o.label}</label>\
<select id="edit-${name}" name="${name}"${described(name)}>\
${o.first}${selectOptions(o.options, s.values[name])}</select>${fieldError(s, name)}</p>${conflictNote(v, name)}`;
}

/**
 * The description's field. A newline right after <textarea> is dropped by the parser: one is
 * written so that a description's own first one stays.
 */
const editDescription = ({ v, s, described }: EditParts): Html =>
  html`<p><label for="edit-description">Description <span class="muted">(Markdown)</span></label>\
<textarea id="edit-description" name="description" rows="8"${described('description')}>
${s.values.description ?? ''}</textarea>${fieldError(s, 'description')}</p>${conflictNote(v, 'description')}`;

function editForm(v: ItemView): Html {
  const parts = editParts(v);
  const s = v.edit;
  const i = v.item;
  const story = i.type === 'story';
  const shown: EditField[] = [
    ...(story ? (['who', 'what', 'why'] as const) : (['title'] as const)),
    'description',
    'status',
    'score',
    'tags',
    'assigned_to',
    ...(story ? [] : (['parent'] as const)),
  ];
  const seen = shown.map((name) => html`<input type="hidden" name="seen_${name}" value="${s.seen[name] ?? ''}">`);
  const texts = story
    ? [
        editText(parts, 'who', 'As a (who)'),
        editText(parts, 'what', 'I want (what)'),
        editText(parts, 'why', 'So that (why)'),
      ]
    : editText(parts, 'title', 'Title');
  const asItIs = v.statuses.includes(i.status) ? '' : html`<option value="">${i.status} (as it is)</option>`;
  const options = (values: readonly string[]) => values.map((x): [string, string] => [x, x]);
  const people = v.members.map((m): [string, string] => [String(m.id), m.name]);
  const nobody = html`<option value="">nobody</option>`;
  return html`<form class="item-form" method="post" action="${itemHref(v.product.id, i.number)}">${csrfField(v.viewer)}
<input type="hidden" name="version" value="${s.version}">${seen}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, shown)}
${texts}
${editDescription(parts)}
${editSelect(parts, { name: 'status', label: 'Status', first: asItIs, options: options(v.statuses) })}
${editSelect(parts, { name: 'score', label: 'Score', first: '', options: options(v.scores) })}
${editText(parts, 'tags', 'Tags (comma-separated)')}
${editSelect(parts, { name: 'assigned_to', label: 'Assignee', first: nobody, options: people })}
${story ? '' : editParent(parts)}
<p class="muted">${typeNote(i.type)}</p>
<p><button type="submit">Save</button></p>
</form>`;
}

/** The parent story's field of a task, defect or test: a story's number, or empty for none. */
const editParent = ({ v, s, described }: EditParts): Html =>
  html`<p><label for="edit-parent">Parent story <span class="muted">(its number; empty for none)</span></label>\
<input id="edit-parent" type="text" inputmode="numeric" name="parent" value="${s.values.parent ?? ''}"\
${described('parent')}>${fieldError(s, 'parent')}</p>${conflictNote(v, 'parent')}`;

/**
 * Why there is no field for the type: the interface sets it when an item is made and never changes
 * it (clients rely on a number keeping its kind), so the page says how to get another kind.
 */
const typeNote = (type: string): string =>
  `This is a ${type}: an item keeps the type it was made with. For another type, make a new item ` +
  'and archive this one.';

/** The edit form's values for an item as it is. */
export function editValues(i: ItemJson): Record<string, string> {
  return {
    title: i.title,
    who: i.who ?? '',
    what: i.what ?? '',
    why: i.why ?? '',
    description: i.description,
    status: i.status,
    score: i.score,
    tags: i.tags.join(', '),
    assigned_to: i.assigned_to ? String(i.assigned_to.id) : '',
    parent: i.parent ? String(i.parent.number) : '',
  };
}
