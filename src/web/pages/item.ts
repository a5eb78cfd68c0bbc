import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { params, Param } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  entityTag,
  INPUT_STATUSES,
  ITEM_TYPES,
  knownDeploymentsOf,
  presentItems,
  SCORES,
  setFollowing,
  STATUS_NAMES,
} from '../../items/index.js';
import { checkToken, productOf, sessionOf, viewerOf } from '../pages.js';
import { presentEnvironments, presentHistory } from '../present.js';
import { itemPageOf, membersOf } from '../service.js';
import { sendPage } from '../session.js';
import { editValues, itemPage, type EditForm, type ItemView } from '../views/item.js';
import { itemHref, type FormState } from '../views/parts.js';
import { emptyForm, ItemPath, numberOf, redirectAfterPost } from './common.js';
import {
  FLASH,
  loadConversation,
  parseTimelineCursor,
  type ConversationForms,
  type Flash,
  type TimelineCursor,
} from './conversation.js';

/** Sub-items, environments, deploys and followers an item page lists (and its pages of environments and deploys). */
export const ITEM_PAGE_LIST = 100;

/**
 * How the edit form comes back after a save that did not go through: `refused` (values kept as
 * typed, and what the form was opened with, so that the next save still compares against that),
 * or in `conflict` on some fields (the item as it now is, with the person's own values in those).
 */
export type EditState =
  | { refused: FormState; seen: Record<string, string>; version: string }
  | { conflicts: string[]; typed: Record<string, string> };

/** The forms of an item's page as they come back after a refused save. */
export interface ItemForms extends ConversationForms {
  edit?: EditState;
  newSubItem?: FormState;
}

/** What a GET of the page names besides the item: a page of its timeline, the message of a change just made. */
export interface ItemPageQuery {
  cursor: TimelineCursor;
  flash?: Flash;
}

const NEWEST: ItemPageQuery = { cursor: { comment: 0, deploy: 0, change: 0, created: 0 } };

function editForm(current: Record<string, string>, version: string, state: EditState | undefined): EditForm {
  if (state === undefined) return { values: current, errors: {}, seen: current, version, conflicts: [] };
  if ('refused' in state) return { ...state.refused, seen: state.seen, version: state.version, conflicts: [] };
  const values = { ...current };
  for (const f of state.conflicts) values[f] = state.typed[f] ?? '';
  return { values, errors: {}, seen: current, version, conflicts: state.conflicts };
}

/** What an item's page shows: the item, its sub-items, where it is deployed, its followers, its forms. */
export async function loadItem(
  app: FastifyInstance,
  {
    request,
    number,
    forms,
    query = NEWEST,
  }: { request: FastifyRequest; number: number; forms: ItemForms; query?: ItemPageQuery },
): Promise<ItemView> {
  const scope = request.scope;
  const data = await itemPageOf(app.db, scope, number, ITEM_PAGE_LIST);
  const { row, environments, children, history } = data;
  // The page's list of environments holds the item's `deployed_to` too.
  const deployments = environments.entries.map(({ deployer: _d, reverter: _r, ...d }) => d);
  const known = knownDeploymentsOf(row.id, deployments, environments.total);
  const [[item], members] = await Promise.all([
    presentItems(app.db, { product: scope.product, rows: [row], urls: app.config, viewerId: scope.user.id, known }),
    membersOf(app.db, scope),
  ]);
  const conversation = await loadConversation(app, { scope, data, item, forms, ...query });
  return {
    product: productOf(scope),
    revision: Number(scope.product.revision),
    item,
    descriptionHtml: data.descriptionHtml,
    subItems: children?.rows.map((c) => ({
      number: c.number,
      title: c.title,
      status: STATUS_NAMES[c.status],
      type: c.type,
    })),
    subItemsTotal: children?.total ?? 0,
    environments: presentEnvironments({ deployments: environments.entries }),
    environmentsTotal: environments.total,
    // The latest deploys, shown in the order they happened.
    history: presentHistory(history.deploys).reverse(),
    historyTotal: history.total,
    followers: data.followers.names,
    following: data.followers.following,
    members,
    types: ITEM_TYPES,
    statuses: INPUT_STATUSES,
    scores: SCORES,
    edit: editForm(editValues(item), entityTag(row), forms.edit),
    newSubItem: forms.newSubItem ?? emptyForm(),
    viewer: viewerOf(sessionOf(request)),
    conversation,
  };
}

/** An item's page; a form's errors go next to its fields. */
export async function renderItem(
  app: FastifyInstance,
  o: {
    request: FastifyRequest;
    reply: FastifyReply;
    number: number;
    status: number;
    forms?: ItemForms;
    query?: ItemPageQuery;
  },
) {
  const view = await loadItem(app, { request: o.request, number: o.number, forms: o.forms ?? {}, query: o.query });
  const title = `#${view.item.number} · ${o.request.scope.product.name}`;
  return sendPage(o.reply, o.status, title, itemPage(view), sessionOf(o.request));
}

/** An item's page, and following it. */
export async function itemRoutes(app: FastifyInstance): Promise<void> {
  const query = params({
    skip_comment: Param,
    skip_deploy: Param,
    skip_change: Param,
    skip_created: Param,
    done: Param,
  });
  app.get('/items/:item_number', { schema: { ...ItemPath, querystring: query } }, async (request, reply) => {
    const p = requestParams(request);
    const flash = typeof p.done === 'string' && Object.hasOwn(FLASH, p.done) ? (p.done as Flash) : undefined;
    const number = numberOf(request);
    return renderItem(app, { request, reply, number, status: 200, query: { cursor: parseTimelineCursor(p), flash } });
  });

  app.post(
    '/items/:item_number/follow',
    { schema: { ...ItemPath, body: params({ csrf: Param, follow: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const number = numberOf(request);
      const follow = requestParams(request).follow !== '0';
      await app.db.transaction().execute((trx) => setFollowing(trx, request.scope, number, follow));
      return redirectAfterPost(
        reply,
        `${itemHref(request.scope.product.id, number)}?done=${follow ? '' : 'un'}followed`,
      );
    },
  );
}
