import type { ItemJson } from '../../items/index.js';
import { createForm } from './board.js';
import { csrfField, type Viewer } from './layout.js';
import { html, raw, type Html } from './html.js';
import type { EnvironmentEntry, HistoryEntry } from '../present.js';
import {
  fieldError,
  type FormState,
  itemHref,
  otherErrors,
  personName,
  productNav,
  selectOptions,
  when,
} from './parts.js';
import { deployHistory, environmentTimeline } from './where.js';

export interface ItemView {
  product: { id: number; name: string };
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
}

/** The fields of the edit form, each also carried as it was shown (`seen_<field>`), so that a save changes only what the person changed. */
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

export function itemPage(v: ItemView, viewer: Viewer): Html {
  const i = v.item;
  const p = v.product.id;
  const progress = [
    ['Created', i.created_at],
    ['Started', i.progress.started_at],
    ['Closed', i.progress.closed_at],
    ['Accepted', i.progress.accepted_at],
  ].filter(([, at]) => at);
  return html`${productNav(v.product, 'item')}
<article class="item">
<p class="meta">#${i.number} <span class="type type-${i.type}">${i.type}</span> \u00b7 <strong>${i.status}</strong>${i.close_reason ? html` (${i.close_reason})` : ''} \u00b7 score ${i.score}${i.archived ? html` \u00b7 <em>archived</em>` : ''}</p>
<h2 class="item-title">${i.title}</h2>
${i.tags.length ? html`<ul class="tags">${i.tags.map((t) => html`<li>${t}</li>`)}</ul>` : ''}
<div class="markdown">${i.description ? raw(v.descriptionHtml) : html`<p class="muted">No description.</p>`}</div>
<dl class="facts">
<dt>Created by</dt><dd>${personName(i.created_by)}</dd>
<dt>Assigned to</dt><dd>${i.assigned_to ? personName(i.assigned_to) : html`<span class="muted">nobody</span>`}</dd>
${i.parent ? html`<dt>Parent</dt><dd><a href="${itemHref(p, i.parent.number)}">#${i.parent.number} ${i.parent.title}</a></dd>` : ''}
${progress.map(([label, at]) => html`<dt>${label}</dt><dd>${when(at)}</dd>`)}
</dl>
<form method="post" action="${itemHref(p, i.number)}/follow">${csrfField(viewer)}
<input type="hidden" name="follow" value="${v.following ? '0' : '1'}">
<p>${v.followers.length} follower${v.followers.length === 1 ? '' : 's'}${v.followers.length ? html`: ${v.followers.join(', ')}` : ''}
<button type="submit">${v.following ? 'Unfollow' : 'Follow'}</button></p></form>
</article>
${subItems(v, viewer)}
${whereDeployed(v)}
<h2 id="edit">Edit</h2>
${editForm(v, viewer)}`;
}

/** Where the item is deployed, and how it got there; links to the rest when there is more than the page shows. */
function whereDeployed(v: ItemView): Html {
  const p = v.product.id;
  const item = itemHref(p, v.item.number);
  if (v.environmentsTotal === 0)
    return html`<h2 id="deployed">Deployed to</h2>\n<p class="muted">Not deployed yet.</p>`;
  const moreEnvironments = v.environmentsTotal > v.environments.length;
  const earlierDeploys = v.historyTotal > v.history.length;
  return html`<h2 id="deployed">Deployed to <span class="count">${v.environmentsTotal}</span></h2>
${environmentTimeline(p, v.environments)}
${moreEnvironments ? html`<p><a href="${item}/environments?offset=${v.environments.length}">Earlier environments</a> <span class="muted">(${v.environmentsTotal - v.environments.length} more)</span></p>` : ''}
<h2 id="history">Deploy history <span class="count">${v.historyTotal}</span></h2>
${earlierDeploys ? html`<p class="muted">The latest ${v.history.length}, oldest first. <a href="${item}/deploys">All ${v.historyTotal} deploys</a></p>` : ''}
${deployHistory(p, v.history, `Deploys of #${v.item.number}, oldest first`)}`;
}

function subItems(v: ItemView, viewer: Viewer): Html | '' {
  if (!v.subItems) return '';
  const p = v.product.id;
  return html`<h2>Sub-items <span class="count">${v.subItemsTotal}</span></h2>
${
  v.subItems.length
    ? html`<ul class="sub-items">${v.subItems.map((s) => html`<li><a href="${itemHref(p, s.number)}">#${s.number} ${s.title}</a> <span class="muted">${s.type} \u00b7 ${s.status}</span></li>`)}</ul>`
    : html`<p class="muted">No sub-items yet.</p>`
}
<details${Object.keys(v.newSubItem.errors).length || v.newSubItem.message ? html` open` : ''}><summary>New sub-item</summary>
${createForm(`/app/products/${p}/items`, v.newSubItem, viewer, { types: v.types.filter((t) => t !== 'story'), statuses: v.statuses, parent: v.item.number })}
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
  return html`<div class="conflict" id="conflict-${name}" role="alert"><p>Somebody else changed the ${FIELD_LABELS[name]} since you opened this form. Theirs:</p>
<blockquote class="theirs">${theirs === '' ? html`<span class="muted">(empty)</span>` : theirs}</blockquote>
<p>Yours is in the field. <label><input type="radio" name="keep_${name}" value="yours" checked> Keep yours</label> <label><input type="radio" name="keep_${name}" value="theirs"> Keep theirs</label></p></div>`;
}

function editForm(v: ItemView, viewer: Viewer): Html {
  const s = v.edit;
  const val = s.values;
  const i = v.item;
  const described = (name: string) => {
    const ids = [s.errors[name] ? `error-${name}` : '', s.conflicts.includes(name) ? `conflict-${name}` : '']
      .filter(Boolean)
      .join(' ');
    return ids ? html` aria-invalid="true" aria-describedby="${ids}"` : '';
  };
  const text = (name: EditField, label: string) =>
    html`<p><label for="edit-${name}">${label}</label><input id="edit-${name}" type="text" name="${name}" maxlength="255" value="${val[name] ?? ''}"${described(name)}>${fieldError(s, name)}</p>${conflictNote(v, name)}`;
  const shown: EditField[] = [
    ...(i.type === 'story' ? (['who', 'what', 'why'] as const) : (['title'] as const)),
    'description',
    'status',
    'score',
    'tags',
    'assigned_to',
  ];
  // A newline right after <textarea> is dropped by the parser: one is written so that a description's own first one stays.
  return html`<form class="item-form" method="post" action="${itemHref(v.product.id, i.number)}">${csrfField(viewer)}
<input type="hidden" name="version" value="${s.version}">${shown.map((name) => html`<input type="hidden" name="seen_${name}" value="${s.seen[name] ?? ''}">`)}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, shown)}
${i.type === 'story' ? [text('who', 'As a (who)'), text('what', 'I want (what)'), text('why', 'So that (why)')] : text('title', 'Title')}
<p><label for="edit-description">Description <span class="muted">(Markdown)</span></label><textarea id="edit-description" name="description" rows="8"${described('description')}>
${val.description ?? ''}</textarea>${fieldError(s, 'description')}</p>${conflictNote(v, 'description')}
<p><label for="edit-status">Status</label><select id="edit-status" name="status"${described('status')}>${v.statuses.includes(i.status) ? '' : html`<option value="">${i.status} (as it is)</option>`}${selectOptions(
    v.statuses.map((x) => [x, x]),
    val.status,
  )}</select>${fieldError(s, 'status')}</p>${conflictNote(v, 'status')}
<p><label for="edit-score">Score</label><select id="edit-score" name="score"${described('score')}>${selectOptions(
    v.scores.map((x) => [x, x]),
    val.score,
  )}</select>${fieldError(s, 'score')}</p>${conflictNote(v, 'score')}
${text('tags', 'Tags (comma-separated)')}
<p><label for="edit-assigned_to">Assignee</label><select id="edit-assigned_to" name="assigned_to"${described('assigned_to')}><option value="">nobody</option>${selectOptions(
    v.members.map((m) => [String(m.id), m.name]),
    val.assigned_to,
  )}</select>${fieldError(s, 'assigned_to')}</p>${conflictNote(v, 'assigned_to')}
<p><button type="submit">Save</button></p>
</form>`;
}

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
  };
}
