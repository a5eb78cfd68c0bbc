import type { FastifyInstance } from 'fastify';
import { itemActivitiesOf, presentActivities } from '../../activities/index.js';
import { attachmentLimits, attachmentsOfItem, presentAttachments } from '../../attachments/index.js';
import {
  blocksOfItem,
  commentsOfItem,
  ownFavoriteOn,
  presentBlocks,
  presentComments,
} from '../../conversation/index.js';
import type { Db } from '../../db/connection.js';
import type { CommentRow, ItemRow } from '../../db/schema.js';
import { deployHistoryOf, type ItemDeploy } from '../../deploys/index.js';
import { asInteger, collectErrors, type ParamValue } from '../../http/params.js';
import type { ItemJson } from '../../items/index.js';
import { LruCache } from '../../lru.js';
import { textAsHtml } from '../../markdown.js';
import type { ProductScope } from '../../scope.js';
import { mergeTimeline, presentHistory, type TimelineEntry, type TimelineSource } from '../present.js';
import type { ItemPageData } from '../service.js';
import type { AttachmentLine, BlockLine, CommentForm, ConversationView } from '../views/conversation.js';
import { personName, type FormState } from '../views/parts.js';
import { emptyForm } from './common.js';

/** Entries of an item's timeline a page shows: an item may have thousands of comments. */
export const TIMELINE_PAGE = 50;
/** Blocks of each side and attachments an item page lists. */
export const CONVERSATION_LIST = 100;

/** Where each source of the timeline's page starts: how many of its newest entries newer pages showed. */
export type TimelineCursor = Record<(typeof SOURCES)[number], number>;

/** The timeline's sources, in the order that decides between entries of the same time. */
const SOURCES = ['created', 'change', 'deploy', 'comment'] as const;

/**
 * Activities of these kinds are on the timeline from a source that shows more of them (the item
 * itself, its deploys, its comments); every other change comes from the activity log.
 */
const SHOWN_ELSEWHERE = new Set(['created', 'deployed', 'rolled_back', 'commented']);

/** The timeline's page as the query names it (`skip_comment`, ...): none is its newest page. */
export function parseTimelineCursor(p: Record<string, ParamValue>): TimelineCursor {
  return collectErrors((field) => ({
    created: field(() => asInteger('skip_created', p.skip_created)) ?? 0,
    change: field(() => asInteger('skip_change', p.skip_change)) ?? 0,
    deploy: field(() => asInteger('skip_deploy', p.skip_deploy)) ?? 0,
    comment: field(() => asInteger('skip_comment', p.skip_comment)) ?? 0,
  }));
}

/** What each done change of the item's conversation says at the top of the page it leads back to. */
export const FLASH = {
  commented: 'Your comment is posted.',
  uncommented: 'Your comment is deleted.',
  favorited: 'Added to your favorites.',
  unfavorited: 'Removed from your favorites.',
  blocked: 'The block is added.',
  unblocked: 'The block is marked unblocked.',
  'block-removed': 'The block is removed.',
  attached: 'The file is attached.',
  detached: 'The attachment is deleted.',
  archived: 'The item is archived: it has left the board and the lists, and can still be found here.',
  saved: 'Your changes are saved.',
  followed: 'You follow this item.',
  unfollowed: 'You no longer follow this item.',
} as const;
export type Flash = keyof typeof FLASH;

/** The forms of the conversation as they come back after a refusal or a preview. */
export interface ConversationForms {
  comment?: CommentForm;
  blocks?: FormState;
  attachment?: FormState;
  /** A refusal that belongs to no form (deleting someone else's comment). */
  problem?: string;
}

/**
 * Comments as HTML, per database, by id (a comment is never edited): comments keep no HTML of
 * their own, so a page renders them through the same bounded renderer as descriptions, once.
 */
const renderedComments = new WeakMap<Db, LruCache<number, string>>();

async function commentHtml(app: FastifyInstance, row: CommentRow): Promise<string> {
  let kept = renderedComments.get(app.db);
  if (!kept) {
    kept = new LruCache(2048);
    renderedComments.set(app.db, kept);
  }
  const known = kept.get(row.id);
  if (known !== undefined) return known;
  const html = await app.markdown.render(row.body);
  // Not rendered now (the renderer busy): shown as text this once.
  if (html === null) return textAsHtml(row.body);
  kept.set(row.id, html);
  return html;
}

/** The newest `limit` comments older than the newest `skip`, newest first. */
async function commentEntries(
  app: FastifyInstance,
  o: { scope: ProductScope; row: ItemRow; skip: number; limit: number },
): Promise<TimelineSource> {
  const end = o.row.comments_count - o.skip;
  if (end <= 0) return { kind: 'comment', entries: [], more: false };
  const offset = Math.max(0, end - o.limit);
  const { rows } = await commentsOfItem(app.db, o.row, { offset, limit: end - offset });
  const [json, htmls] = await Promise.all([
    presentComments(app.db, o.scope, rows),
    Promise.all(rows.map((r) => commentHtml(app, r))),
  ]);
  const entries = json.map((c, n): TimelineEntry => {
    const by = personName(c.created_by);
    return { kind: 'comment', at: c.created_at, id: c.id, by, byId: c.created_by.id, html: htmls[n] };
  });
  return { kind: 'comment', entries: entries.reverse(), more: offset > 0 };
}

/** The newest `limit` deploys older than the newest `skip`: the page's own history when it holds them. */
async function deployEntries(
  app: FastifyInstance,
  o: { scope: ProductScope; data: ItemPageData; skip: number; limit: number },
): Promise<TimelineSource & { total: number }> {
  const { history } = o.data;
  let deploys: ItemDeploy[];
  if (history.total === 0) deploys = [];
  else if (o.skip + o.limit <= history.deploys.length) deploys = history.deploys.slice(o.skip, o.skip + o.limit);
  else
    deploys = (await deployHistoryOf(app.db, o.scope, o.data.row.id, { offset: o.skip, limit: o.limit, newest: true }))
      .deploys;
  return {
    kind: 'deploy',
    entries: presentHistory(deploys).map((deploy): TimelineEntry => ({ kind: 'deploy', at: deploy.at, deploy })),
    more: o.skip + deploys.length < history.total,
    total: history.total,
  };
}

/**
 * The item's changes from the activity log, past the newest `skip`: twice a page of them, since
 * those shown by another source are passed over (`hidden`).
 */
async function changeEntries(
  app: FastifyInstance,
  o: { scope: ProductScope; data: ItemPageData; skip: number; limit: number },
): Promise<TimelineSource & { total: number }> {
  const page = { offset: o.skip, limit: 2 * o.limit };
  if (!o.data.around.activities) return { kind: 'change', entries: [], more: false, total: 0 };
  const { rows, total } = await itemActivitiesOf(
    app.db,
    { productId: o.scope.product.id, itemId: o.data.row.id },
    page,
  );
  const json = await presentActivities(app.db, rows, o.scope.user.id);
  const entries = json.map((a) => ({
    kind: 'change' as const,
    at: a.created,
    by: personName(a.user),
    label: a.label,
    hidden: SHOWN_ELSEWHERE.has(a.action),
  }));
  return { kind: 'change', entries, more: o.skip + rows.length < total, total };
}

/** A page of the timeline: comments, deploys and the item's creation, merged by time. */
async function loadTimeline(
  app: FastifyInstance,
  o: { scope: ProductScope; data: ItemPageData; item: ItemJson; cursor: TimelineCursor },
): Promise<ConversationView['timeline']> {
  const { cursor } = o;
  const limit = TIMELINE_PAGE;
  const [comments, deploys, changes] = await Promise.all([
    commentEntries(app, { scope: o.scope, row: o.data.row, skip: cursor.comment, limit }),
    deployEntries(app, { scope: o.scope, data: o.data, skip: cursor.deploy, limit }),
    changeEntries(app, { scope: o.scope, data: o.data, skip: cursor.change, limit }),
  ]);
  const created: TimelineEntry[] =
    cursor.created === 0 ? [{ kind: 'created', at: o.item.created_at, by: personName(o.item.created_by) }] : [];
  const totals: TimelineCursor = {
    created: 1,
    change: changes.total,
    deploy: deploys.total,
    comment: o.data.row.comments_count,
  };
  const sources: TimelineSource[] = [{ kind: 'created', entries: created, more: false }, changes, deploys, comments];
  const { entries, taken } = mergeTimeline(sources, limit);
  const next = Object.fromEntries(SOURCES.map((k) => [k, cursor[k] + taken[k]])) as TimelineCursor;
  const older = SOURCES.some((k) => next[k] < totals[k]) ? next : undefined;
  const newest = SOURCES.some((k) => cursor[k] > 0);
  return { entries, older, newest };
}

/** The blocks of both sides, with what the viewer may do to each (as removeBlock decides). */
async function loadBlocks(app: FastifyInstance, scope: ProductScope, { row, around }: ItemPageData) {
  const none = { rows: [], total: 0 };
  const { blocking, blockedBy } =
    around.blocking || around.blockedBy
      ? await blocksOfItem(app.db, row.id, { offset: 0, limit: CONVERSATION_LIST })
      : { blocking: none, blockedBy: none };
  const json = await presentBlocks(app.db, scope, [...blocking.rows, ...blockedBy.rows], app.config);
  const line = (b: (typeof json)[number], other: 'item' | 'blocked'): BlockLine => ({
    id: b.id,
    from: b.item.number,
    number: b[other].number,
    title: b[other].title,
    status: b[other].status,
    unblocked: b.unblocked,
    by: personName(b.user),
    canRemove: b.user.id === scope.user.id,
    canUnblock: b.user.id !== scope.user.id && !b.unblocked && b.blocked.assigned_to?.id === scope.user.id,
  });
  return {
    blocking: json.slice(0, blocking.rows.length).map((b) => line(b, 'blocked')),
    blockingTotal: blocking.total,
    blockedBy: json.slice(blocking.rows.length).map((b) => line(b, 'item')),
    blockedByTotal: blockedBy.total,
  };
}

async function loadAttachments(app: FastifyInstance, scope: ProductScope, { row, around }: ItemPageData) {
  if (!around.attachments) return { attachments: [], attachmentsTotal: 0 };
  const { rows, total } = await attachmentsOfItem(app.db, row.id, { offset: 0, limit: CONVERSATION_LIST });
  const json = await presentAttachments(app.db, scope, app.config, row, rows);
  const lines = json.map(
    (a): AttachmentLine => ({
      id: a.id,
      name: a.name,
      size: a.size,
      at: a.created_at,
      by: personName(a.created_by),
      canDelete: a.created_by.id === scope.user.id || scope.admin,
    }),
  );
  return { attachments: lines, attachmentsTotal: total };
}

/**
 * What an item's page shows of the conversation around it: a page of its timeline, the star, the
 * blocks either way, the attachments, and the forms (as sent back after a refusal or a preview).
 */
export async function loadConversation(
  app: FastifyInstance,
  o: {
    scope: ProductScope;
    data: ItemPageData;
    item: ItemJson;
    cursor: TimelineCursor;
    forms: ConversationForms;
    flash?: Flash;
  },
): Promise<ConversationView> {
  const { scope } = o;
  const { row } = o.data;
  const [timeline, favorite, blocks, attachments] = await Promise.all([
    loadTimeline(app, o),
    ownFavoriteOn(app.db, scope, row),
    loadBlocks(app, scope, o.data),
    loadAttachments(app, scope, o.data),
  ]);
  return {
    timeline,
    comment: o.forms.comment ?? emptyForm(),
    favorites: { count: o.item.counts.favorites, mine: favorite !== undefined },
    ...blocks,
    blockForm: o.forms.blocks ?? emptyForm(),
    ...attachments,
    attachmentForm: o.forms.attachment ?? emptyForm(),
    attachmentMaxMb: attachmentLimits(app.config).fileBytes / (1024 * 1024),
    viewerId: scope.user.id,
    flash: o.flash ? { done: o.flash, text: FLASH[o.flash] } : undefined,
    problem: o.forms.problem,
  };
}
