import type { TimelineEntry } from '../present.js';
import { html, raw, type Html } from './html.js';
import { csrfField, type Viewer } from './layout.js';
import { deployHref, fieldError, invalidAttrs, type FormState, itemHref, otherErrors, timeTag } from './parts.js';

/** The comment box as it comes back: the text kept, its errors, and a preview of it when one was asked for. */
export interface CommentForm extends FormState {
  /** The text rendered, as safe HTML. */
  preview?: string;
}

/** A block as an item page lists it: the other item, and what the viewer may do to it. */
export interface BlockLine {
  id: number;
  /** The number of the item that blocks (whose block it is, as the service names it). */
  from: number;
  /** The other item of the block. */
  number: number;
  title: string;
  status: string;
  unblocked: boolean;
  by: string;
  /** The viewer made it: they may remove it. */
  canRemove: boolean;
  /** The viewer has the blocked item (and did not make it): they may mark it unblocked. */
  canUnblock: boolean;
}

export interface AttachmentLine {
  id: number;
  name: string;
  size: number;
  at: string;
  by: string;
  canDelete: boolean;
}

export interface ConversationView {
  timeline: {
    /** Oldest first. */
    entries: TimelineEntry[];
    /** Where the next older page of each source starts, when there is one. */
    older?: Record<string, number>;
    /** This is an older page: a link back to the newest. */
    newest: boolean;
  };
  comment: CommentForm;
  favorites: { count: number; mine: boolean };
  blocking: BlockLine[];
  blockingTotal: number;
  blockedBy: BlockLine[];
  blockedByTotal: number;
  blockForm: FormState;
  attachments: AttachmentLine[];
  attachmentsTotal: number;
  attachmentForm: FormState;
  attachmentMaxMb: number;
  /** Who looks: their own comments have a Delete link. */
  viewerId: number;
  /** What the change just made says (after its redirect), and which change it was. */
  flash?: { done: string; text: string };
  /** A refusal that belongs to no form. */
  problem?: string;
}

/** What the conversation's parts need of the page. */
export interface ConversationContext {
  productId: number;
  number: number;
  viewer: Viewer;
  c: ConversationView;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The message of a change just made, for everyone (a status, read out by screen readers). */
export const flashMessage = ({ c }: ConversationContext): Html | '' =>
  c.flash ? html`<p class="notice" role="status" id="flash" data-done="${c.flash.done}">${c.flash.text}</p>` : '';

/** The star: how many favor the item, and the toggle of the viewer's own favorite. */
export function favoriteForm({ productId, number, viewer, c }: ConversationContext): Html {
  const { count, mine } = c.favorites;
  return html`<form class="favorite" method="post" action="${itemHref(productId, number)}/favorite">\
${csrfField(viewer)}<input type="hidden" name="favorite" value="${mine ? '0' : '1'}">\
<button type="submit" class="star" aria-pressed="${mine ? 'true' : 'false'}">\
<span aria-hidden="true">${mine ? '\u2605' : '\u2606'}</span> ${mine ? 'Favorited' : 'Favorite'}</button> \
<span class="muted" id="favorite-count">${plural(count, 'favorite')}</span></form>`;
}

function blockLine(ctx: ConversationContext, b: BlockLine): Html {
  const { productId, number, viewer } = ctx;
  const action = `${itemHref(productId, number)}/blocks/${b.id}/remove`;
  const button = (label: string, aria: string) =>
    html`<form method="post" action="${action}">${csrfField(viewer)}\
<input type="hidden" name="from" value="${b.from}">\
<button type="submit" class="small" aria-label="${aria}">${label}</button></form>`;
  const actions = b.canRemove
    ? button('Remove', `Remove the block with #${b.number}`)
    : b.canUnblock
      ? button('Mark unblocked', `Mark the block with #${b.number} unblocked`)
      : '';
  const unblocked = b.unblocked ? html` <span class="unblocked">(unblocked)</span>` : '';
  return html`<li><a href="${itemHref(productId, b.number)}">#${b.number} ${b.title}</a> \
<span class="muted">${b.status} \u00b7 by ${b.by}</span>${unblocked} ${actions}</li>`;
}

/** One side of the blocks: its list, and the number field that adds one. */
function blockSide(
  ctx: ConversationContext,
  o: { side: 'blocking' | 'blocked_by'; lines: BlockLine[]; total: number; field: 'blocked' | 'blocker' },
): Html {
  const s = ctx.c.blockForm;
  const heading = o.side === 'blocking' ? 'Blocks' : 'Blocked by';
  const label = o.side === 'blocking' ? 'This item blocks item number' : 'This item is blocked by item number';
  const list = o.lines.length
    ? html`<ul class="blocks">${o.lines.map((b) => blockLine(ctx, b))}</ul>`
    : html`<p class="muted">${o.side === 'blocking' ? 'Blocks nothing.' : 'Blocked by nothing.'}</p>`;
  const more = o.total > o.lines.length ? html`<p class="muted">The first ${o.lines.length} of ${o.total}.</p>` : '';
  const invalid = invalidAttrs(s, o.field);
  return html`<section aria-labelledby="${o.side}-heading"><h3 id="${o.side}-heading">${heading} \
<span class="count">${o.total}</span></h3>
${list}${more}
<form class="inline" method="post" action="${itemHref(ctx.productId, ctx.number)}/blocks">${csrfField(ctx.viewer)}
<label for="block-${o.field}">${label}</label><input id="block-${o.field}" type="number" min="1" \
name="${o.field}" value="${s.values[o.field] ?? ''}"${invalid}> <button type="submit">Add</button>\
${fieldError(s, o.field)}</form></section>`;
}

/** The blocks either way, each with add and the actions the viewer may take. */
export function blocksSection(ctx: ConversationContext): Html {
  const { c } = ctx;
  const shown = ['blocked', 'blocker'];
  return html`<section class="blocks" aria-labelledby="blocks-heading"><h2 id="blocks-heading">Blocking</h2>
${c.blockForm.message ? html`<p class="error">${c.blockForm.message}</p>` : ''}\
${otherErrors(c.blockForm, shown)}
${blockSide(ctx, { side: 'blocking', lines: c.blocking, total: c.blockingTotal, field: 'blocked' })}
${blockSide(ctx, { side: 'blocked_by', lines: c.blockedBy, total: c.blockedByTotal, field: 'blocker' })}
</section>`;
}

const sizeText = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${Math.ceil(bytes / 1024)} KiB`
      : `${(bytes / 1048576).toFixed(1)} MiB`;

/** The item's files: each to download (and delete, where the viewer may), and the upload form. */
export function attachmentsSection(ctx: ConversationContext): Html {
  const { c, productId, number, viewer } = ctx;
  const base = `${itemHref(productId, number)}/attachments`;
  const line = (a: AttachmentLine) =>
    html`<li><a href="${base}/${a.id}/file">${a.name}</a> <span class="muted">${sizeText(a.size)} \u00b7 \
${a.by} \u00b7 ${timeTag(a.at)}</span>${
      a.canDelete ? html` <a href="${base}/${a.id}/delete" aria-label="Delete ${a.name}">Delete</a>` : ''
    }</li>`;
  const list = c.attachments.length
    ? html`<ul class="attachments">${c.attachments.map(line)}</ul>`
    : html`<p class="muted">No attachments.</p>`;
  const s = c.attachmentForm;
  const invalid = invalidAttrs(s, 'file');
  return html`<section aria-labelledby="attachments-heading">\
<h2 id="attachments-heading">Attachments <span class="count">${c.attachmentsTotal}</span></h2>
${list}
<form method="post" action="${base}" enctype="multipart/form-data">${csrfField(viewer)}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, ['file'])}
<p><label for="attachment-file">Attach a file <span class="muted">(up to ${c.attachmentMaxMb} MiB)</span></label>\
<input id="attachment-file" type="file" name="file" required${invalid}> <button type="submit">Upload</button>\
${fieldError(s, 'file')}</p></form></section>`;
}

function timelineEntry(ctx: ConversationContext, e: TimelineEntry): Html {
  if (e.kind === 'change')
    return html`<li class="change">${timeTag(e.at)}<p><strong>${e.by}</strong>: ${e.label}</p></li>`;
  if (e.kind === 'created')
    return html`<li class="created">${timeTag(e.at)}<p><strong>${e.by}</strong> created the item.</p></li>`;
  if (e.kind === 'deploy') {
    const d = e.deploy;
    const what = d.rollback ? 'rolled back' : 'deployed';
    const version = d.version ? html` <a href="${deployHref(ctx.productId, d.deployId)}">${d.version}</a>` : '';
    const link = d.version ? '' : html` (<a href="${deployHref(ctx.productId, d.deployId)}">the deploy</a>)`;
    return html`<li class="deploy${d.rollback ? ' rollback' : ''}">${timeTag(d.at)}<p><strong>${d.by || 'Somebody'}\
</strong> ${what} ${d.rollback ? 'in' : 'to'} <strong class="environment">${d.environment}</strong>${version}${link}\
</p></li>`;
  }
  const own = ctx.c.viewerId === e.byId;
  const del = own
    ? html` <a class="delete" href="${itemHref(ctx.productId, ctx.number)}/comments/${e.id}/delete" \
aria-label="Delete your comment of ${e.at}">Delete</a>`
    : '';
  return html`<li class="comment" id="comment-${e.id}">${timeTag(e.at)}<p><strong>${e.by}</strong> commented:${del}\
</p><div class="markdown">${raw(e.html)}</div></li>`;
}

/** The timeline, newest last, with links to older and back to the newest entries. */
export function timelineSection(ctx: ConversationContext): Html {
  const { c, productId, number } = ctx;
  const t = c.timeline;
  const href = itemHref(productId, number);
  const older = t.older
    ? html`<p><a href="${href}?${new URLSearchParams(
        Object.entries(t.older).map(([k, v]) => [`skip_${k}`, String(v)]),
      ).toString()}#timeline">Older entries</a></p>`
    : '';
  const newest = t.newest ? html`<p><a href="${href}#timeline">Newest entries</a></p>` : '';
  return html`<section aria-labelledby="timeline"><h2 id="timeline">Timeline</h2>
${older}<ol class="conversation">${t.entries.map((e) => timelineEntry(ctx, e))}</ol>${newest}
${c.problem ? html`<p class="error">${c.problem}</p>` : ''}
${commentForm(ctx)}
</section>`;
}

/** The comment box: Markdown, a preview that works without script, and its errors next to it. */
function commentForm({ c, productId, number, viewer }: ConversationContext): Html {
  const s = c.comment;
  const preview =
    s.preview !== undefined
      ? html`<section class="preview" aria-labelledby="preview-heading"><h3 id="preview-heading">Preview</h3>
<div class="markdown">${s.preview ? raw(s.preview) : html`<p class="muted">Nothing to preview.</p>`}</div></section>`
      : '';
  const invalid = s.errors.body ? invalidAttrs(s, 'body', 'comment-keys') : '';
  return html`${preview}<form class="comment" id="comment-form" method="post" \
action="${itemHref(productId, number)}/comments">${csrfField(viewer)}
${s.message ? html`<p class="error">${s.message}</p>` : ''}${otherErrors(s, ['body'])}
<p><label for="comment-body">Comment <span class="muted">(Markdown)</span></label>\
<textarea id="comment-body" name="body" rows="5"${invalid}>
${s.values.body ?? ''}</textarea>${fieldError(s, 'body')}</p>
<p class="muted" id="comment-keys" hidden>Ctrl+Enter (\u2318+Enter on a Mac) posts the comment.</p>
<p><button type="submit" name="post" value="1">Post comment</button> \
<button type="submit" name="preview" value="1" class="secondary">Preview</button></p>
</form>`;
}

/** The step before deleting a comment or a file: what it is, and the button that deletes it. */
export function confirmPage(o: {
  product: { id: number; name: string };
  number: number;
  viewer: Viewer;
  what: string;
  shown: Html;
  action: string;
}): Html {
  const back = itemHref(o.product.id, o.number);
  return html`<p>Delete ${o.what} on <a href="${back}">#${o.number}</a>? This cannot be undone.</p>
${o.shown}
<form method="post" action="${o.action}">${csrfField(o.viewer)}
<p><button type="submit" class="danger">Delete ${o.what}</button> <a href="${back}">Cancel</a></p></form>`;
}
