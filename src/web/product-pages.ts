import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ItemRow } from '../db/schema.js';
import {
  deployersOf,
  deployHistoryOf,
  findDeploys,
  getDeploy,
  notesHtmlOf,
  parseDeployList,
  presentDeploys,
} from '../deploys/index.js';
import { asPage, digitsToId, params, Param, type ParamValue } from '../http/params.js';
import { ValidationError } from '../errors.js';
import { requestParams } from '../http/request.js';
import { prefersJson } from '../http/negotiate.js';
import {
  childrenOfItem,
  createItem,
  deploymentsIn,
  deploymentsOfItem,
  descriptionHtmlOf,
  entityTag,
  knownDeploymentsOf,
  findItemsByNumbers,
  followersOf,
  getItem,
  moveItem,
  INPUT_STATUSES,
  ITEM_TYPES,
  listItems,
  type Deployment,
  type ListItemsInput,
  parseCreateItem,
  parseListItems,
  parseUpdateItem,
  presentItems,
  renderDescription,
  SCORES,
  setFollowing,
  STATUS_NAMES,
  subItemCounts,
  updateItem,
  type Seen,
  type Status,
} from '../items/index.js';
import {
  environmentChoice,
  parseEnvironmentChoice,
  setEnvironmentChoice,
  type EnvironmentChoice,
} from '../notifications/index.js';
import { listMembers, productScope } from '../products/index.js';
import type { ProductScope } from '../scope.js';
import { findProfiles } from '../users/index.js';
import {
  boardQueryString,
  matrixFilters,
  pagedItemNumber,
  parseBoardQuery,
  parseMove,
  returnFilters,
  type BoardQuery,
} from './input.js';
import { presentEnvironments, presentHistory, presentMatrixRows } from './present.js';
import { deployedEnvironments } from './repository.js';
import { webhookPages } from './webhook-pages.js';
import { asText, checkToken, formErrors, productOf, sessionOf, viewerOf } from './pages.js';
import { sendHtml, sendPage } from './session.js';
import { layout } from './views/layout.js';
import { RenderedPages } from './rendered-pages.js';
import type { Db } from '../db/connection.js';
import { LruCache } from '../lru.js';
import { boardPage, type BoardCard, type BoardColumn, type BoardView } from './views/board.js';
import { deployPage, deploysPage } from './views/deploys.js';
import { EDIT_FIELDS, editValues, itemPage, type EditForm } from './views/item.js';
import { notificationsPage, type NotificationForm } from './views/notifications.js';
import type { FormState } from './views/parts.js';
import { itemHref, personName } from './views/parts.js';
import { itemDeploysPage, matrixPage, type MatrixFilters } from './views/where.js';

/** Cards of a column page. */
export const BOARD_PAGE = 25;
/** Sub-items, environments, deploys and followers an item page lists (and its pages of environments and deploys). */
const ITEM_PAGE_LIST = 100;
/** Items per page of the matrix of what is deployed where. */
export const MATRIX_PAGE = 50;
/** Environments the matrix has columns for: the product's most recently deployed to, and those filtered on. */
export const MATRIX_ENVIRONMENTS = 12;
/** Environments the notifications page offers to tick: the product's most recently deployed to. */
const OFFERED_ENVIRONMENTS = 50;

const ProductPath = { params: { type: 'object', properties: { product_id: { type: 'string' } } } } as const;
const ItemPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, item_number: { type: 'string' } } },
} as const;
const DeployPath = {
  params: { type: 'object', properties: { product_id: { type: 'string' }, deploy_id: { type: 'string' } } },
} as const;
const boardQuery = params({
  type: Param,
  assignee: Param,
  creator: Param,
  tags: Param,
  mine: Param,
  status: Param,
  offset: Param,
});
/**
 * An item's form, twice over (the edit form sends the values it was opened with beside the new
 * ones): a description of 65,535 bytes at its widest once sent (line breaks, which browsers send
 * as CRLF percent-encoded, six bytes each: 384 KiB), title, who, what and why of 255 characters of
 * four bytes (3 KiB each), 100 tags of 64 such characters (75 KiB): about 950 KiB, with room.
 */
const ITEM_FORM_LIMIT = 1280 * 1024;
/** The choice of deploy environments: 50 of 255 characters, each up to 12 bytes percent-encoded. */
const ENVIRONMENTS_FORM_LIMIT = 256 * 1024;

const itemFields = params({
  csrf: Param,
  type: Param,
  title: Param,
  who: Param,
  what: Param,
  why: Param,
  description: Param,
  status: Param,
  score: Param,
  tags: Param,
  assigned_to: Param,
  parent: Param,
});
/** The edit form: its fields, each as it was shown (`seen_`) and, after a conflict, which value to keep (`keep_`), and the version it was opened at. */
const editFields = params({
  csrf: Param,
  title: Param,
  who: Param,
  what: Param,
  why: Param,
  description: Param,
  status: Param,
  score: Param,
  tags: Param,
  assigned_to: Param,
  version: Param,
  ...Object.fromEntries(
    EDIT_FIELDS.flatMap((f) => [
      [`seen_${f}`, Param],
      [`keep_${f}`, Param],
    ]),
  ),
});

/** Browsers send a textarea's line breaks as CRLF (HTML says so); what the API stores is what was typed. */
const lineBreaks = (v: ParamValue): ParamValue => (typeof v === 'string' ? v.replace(/\r\n?/g, '\n') : v);
const wantsJson = (request: FastifyRequest): boolean => prefersJson(request.headers.accept);
const emptyForm = (): FormState => ({ values: {}, errors: {} });

/** The edit form's fields as the update reads them: an unchanged status the form cannot name (someday) comes as none; textareas send CRLF. */
const editInput = (fields: Record<string, ParamValue>) =>
  parseUpdateItem({
    ...fields,
    status: fields.status || undefined,
    description: lineBreaks(fields.description),
    parent: undefined,
    type: undefined,
  });

/**
 * What the person saw when the form was opened: its version and the values its fields showed, read
 * as the fields are (a form without a version, from before forms carried one, saw nothing). A
 * field whose other value the person chose to keep after a conflict counts as left as shown.
 */
function seenByForm(p: Record<string, ParamValue>): { seen?: Seen; fields: Record<string, ParamValue> } {
  const fields: Record<string, ParamValue> = { ...p };
  if (typeof p.version !== 'string' || p.version === '') return { fields };
  const shown = Object.fromEntries(EDIT_FIELDS.map((f) => [f, p[`seen_${f}`]]));
  // Not sent on is not changed: whatever is stored stays, and is neither checked again nor
  // rendered again (a description stored before today's rules must not stop a title's change).
  for (const f of EDIT_FIELDS) if (p[`keep_${f}`] === 'theirs' || sameValue(p[f], shown[f])) fields[f] = undefined;
  const status =
    typeof shown.status === 'string' && (STATUS_NAMES as readonly string[]).includes(shown.status)
      ? shown.status
      : undefined;
  // The texts as shown are compared, never stored: read as they came, whatever rules they predate.
  const texts = Object.fromEntries(
    SEEN_AS_TEXT.flatMap((f) => (typeof shown[f] === 'string' ? [[f, lineBreaks(shown[f])]] : [])),
  );
  const untexted = Object.fromEntries(SEEN_AS_TEXT.map((f) => [f, undefined]));
  try {
    const parsed = editInput({ ...shown, ...untexted, status: undefined });
    return {
      fields,
      seen: { etags: [p.version], fields: { ...parsed, ...texts, status: status as Status | undefined } },
    };
  } catch (err) {
    if (err instanceof ValidationError)
      throw new ValidationError(
        {},
        'This form was not sent as the page made it: open the item again, and make your change there.',
      );
    throw err;
  }
}

/** Fields whose value as shown is compared as the text it was, not parsed as input. */
const SEEN_AS_TEXT = ['title', 'who', 'what', 'why', 'description'] as const;

/** A field sent as it was shown (line breaks aside: browsers send them as CRLF). */
const sameValue = (sent: ParamValue, shown: ParamValue): boolean =>
  sent !== undefined &&
  JSON.stringify(typeof sent === 'string' ? lineBreaks(sent) : sent) ===
    JSON.stringify(typeof shown === 'string' ? lineBreaks(shown) : shown);

const numberOf = (request: FastifyRequest) => pagedItemNumber((request.params as { item_number: string }).item_number);

/** Members' lists per database and product revision (every new member or change of role moves it; names never change). */
const memberLists = new WeakMap<Db, LruCache<string, { id: number; name: string }[]>>();

/** A product's members by name, for the assignee choices: the same on every page of a revision, so read once for it. */
const membersOf = (app: FastifyInstance, scope: ProductScope) => {
  let lists = memberLists.get(app.db);
  if (!lists) memberLists.set(app.db, (lists = new LruCache(256)));
  return lists.getOrMake(`${scope.product.id}:${scope.product.revision}`, async () =>
    (await listMembers(app.db, scope.product.id)).map((m) => ({ id: m.id, name: personName(m) })),
  );
};

/**
 * A product's pages (`/app/products/{id}/...`): the board, the items, the deploys, and which
 * deploys email the signed-in person. The signed-in person must be a member (403 page); an
 * unknown product is a 404 page. Every change goes through the same service operation as the
 * API, in one transaction.
 */
export async function productPages(
  app: FastifyInstance,
  options: { signIn: (request: FastifyRequest) => string },
): Promise<void> {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.webSession) return reply.header('cache-control', 'no-store').redirect(options.signIn(request), 303);
    request.scope = await productScope(
      app.db,
      request.webSession.user,
      (request.params as { product_id: string }).product_id,
    );
  });
  const boards = new RenderedPages(BOARDS_KEPT);
  await app.register(boardPages, { boards });
  await app.register(itemPages, { boards });
  await app.register(deployPages);
  await app.register(wherePages);
  await app.register(notificationPages);
  await app.register(webhookPages);
}

/** Board pages kept per product, revision, role and query (see RenderedPages). */
const BOARDS_KEPT = 32;

/**
 * The board, or one column of it, as the query asks; a form's errors go with the new-item form.
 * Every member of the same role asking the same query of the same revision sees the same board, so it is kept.
 */
async function renderBoard(
  app: FastifyInstance,
  boards: RenderedPages,
  request: FastifyRequest,
  reply: FastifyReply,
  query: BoardQuery,
  status: number,
  newItem?: FormState,
) {
  const scope = request.scope;
  // Admins' navigation has their pages too: they share boards with admins only.
  const role = scope.admin ? 'admin' : 'member';
  const key =
    status === 200 && newItem === undefined
      ? `${scope.product.id}:${scope.product.revision}:${role}:${JSON.stringify(query)}`
      : undefined;
  const title = `Board · ${scope.product.name}`;
  const page = await boards.render(key, viewerOf(sessionOf(request)), async (anybody) =>
    layout(title, boardPage(await boardView(app, scope, query, newItem), anybody), anybody),
  );
  return sendHtml(reply, status, page);
}

/** What the board shows: each column's page of cards with their neighbours, the filters, the members. */
async function boardView(
  app: FastifyInstance,
  scope: ProductScope,
  query: BoardQuery,
  newItem?: FormState,
): Promise<BoardView> {
  const statuses = query.status ? [query.status] : STATUS_NAMES;
  const columns: (BoardColumn & { rows: ItemRow[] })[] = [];
  for (const s of statuses) {
    // One row either side of the page: the cards a card at its edge moves past.
    const from = Math.max(0, query.offset - 1);
    const input = parseListItems({
      ...query.listParams,
      status: s,
      offset: String(from),
      limit: String(BOARD_PAGE + 2),
      order_by: 'priority',
    });
    const { rows, total } = await listItems(app.db, scope, input, app.listCounts);
    columns.push({ status: s, total, offset: query.offset, cards: [], rows });
  }
  const shownRows = columns.flatMap((c) => c.rows.slice(c.offset > 0 ? 1 : 0, (c.offset > 0 ? 1 : 0) + BOARD_PAGE));
  const [json, counts, people] = await Promise.all([
    presentItems(app.db, scope.product, shownRows, app.config, scope.user.id),
    subItemCounts(
      app.db,
      shownRows.map((r) => r.id),
    ),
    membersOf(app, scope),
  ]);
  const byId = new Map(shownRows.map((r, n) => [r.id, json[n]]));
  for (const c of columns) {
    const first = c.offset > 0 ? 1 : 0;
    c.cards = c.rows.slice(first, first + BOARD_PAGE).map(
      (row, n): BoardCard => ({
        item: byId.get(row.id)!,
        subItems: counts.get(row.id) ?? 0,
        above: c.rows[first + n - 1]?.number,
        below: c.rows[first + n + 1]?.number,
      }),
    );
  }
  const view: BoardView = {
    product: productOf(scope),
    columns: columns.map(({ rows: _rows, ...c }) => c),
    filters: query.filters,
    single: query.status !== undefined,
    pageSize: BOARD_PAGE,
    members: people,
    types: ITEM_TYPES,
    statuses: INPUT_STATUSES,
    newItem,
  };
  return view;
}

/** The board and its moves: the forms, and the board script, which posts the same forms. */
async function boardPages(app: FastifyInstance, { boards }: { boards: RenderedPages }): Promise<void> {
  app.get('/board', { schema: { ...ProductPath, querystring: boardQuery } }, async (request, reply) =>
    renderBoard(app, boards, request, reply, parseBoardQuery(requestParams(request), request.scope.user.id), 200),
  );

  app.post(
    '/items/:item_number/move',
    {
      schema: {
        ...ItemPath,
        body: params({ csrf: Param, to: Param, above: Param, below: Param, status: Param, back: Param }),
      },
    },
    // The board's script asks for JSON (it reloads the board itself); a form gets the board back.
    async (request, reply) => {
      checkToken(request);
      const p = requestParams(request);
      const move = parseMove(p);
      const number = numberOf(request);
      await app.db
        .transaction()
        .execute((trx) => moveItem(trx, request.scope, number, move, app.listCounts, app.config));
      if (wantsJson(request)) return reply.header('cache-control', 'no-store').send({ number });
      const back = boardQueryString(returnFilters(p));
      return reply
        .header('cache-control', 'no-store')
        .redirect(`/app/products/${request.scope.product.id}/board${back}#item-${number}`, 303);
    },
  );
}

/** Who made each deploy of the entries, and each rollback that reverted one, by deploy id. */
const environmentDeployers = (app: FastifyInstance, scope: ProductScope, deployments: Deployment[]) =>
  deployersOf(
    app.db,
    scope,
    deployments.flatMap((d) => (d.reverted_by === null ? [d.deploy_id] : [d.deploy_id, d.reverted_by])),
  );

/**
 * An item's page; a form's errors go next to its fields. Long because the page shows much: what it
 * reads runs in two parallel steps, then one view object is built for the template.
 */
async function renderItem(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  number: number,
  status: number,
  forms: { edit?: EditState; newSubItem?: FormState } = {},
) {
  const scope = request.scope;
  const row = await getItem(app.db, scope, number);
  const page = { offset: 0, limit: ITEM_PAGE_LIST };
  // The page's list of environments holds the item's `deployed_to` too.
  const deployments = await deploymentsOfItem(app.db, row, page);
  const known = knownDeploymentsOf(row.id, deployments.deployments, deployments.total);
  const [[item], descriptionHtml, children, history, followers, people] = await Promise.all([
    presentItems(app.db, scope.product, [row], app.config, scope.user.id, false, known),
    descriptionHtmlOf(app.db, row),
    row.type === 'story' ? childrenOfItem(app.db, row, page) : undefined,
    // Every deploy of an item leaves its entry for the environment (a rollback marks it reverted,
    // nothing removes it): an item deployed nowhere has no history to read.
    deployments.total === 0
      ? { deploys: [], total: 0 }
      : deployHistoryOf(app.db, scope, row.id, { ...page, newest: true }),
    followersOf(app.db, row, scope.user.id, ITEM_PAGE_LIST),
    membersOf(app, scope),
  ]);
  const [deployers, followerRows] = await Promise.all([
    environmentDeployers(app, scope, deployments.deployments),
    findProfiles(app.db, followers.userIds),
  ]);
  const followerNames = new Map([...followerRows.values()].map((u) => [u.id, personName(u)]));
  const view = {
    product: productOf(scope),
    item,
    descriptionHtml,
    subItems: children?.rows.map((c) => ({
      number: c.number,
      title: c.title,
      status: STATUS_NAMES[c.status],
      type: c.type,
    })),
    subItemsTotal: children?.total ?? 0,
    environments: presentEnvironments(deployments.deployments, deployers),
    environmentsTotal: deployments.total,
    // The latest deploys, shown in the order they happened.
    history: presentHistory(history.deploys).reverse(),
    historyTotal: history.total,
    followers: followers.userIds.map((id) => followerNames.get(id) ?? ''),
    following: followers.following,
    members: people,
    types: ITEM_TYPES,
    statuses: INPUT_STATUSES,
    scores: SCORES,
    edit: editForm(editValues(item), entityTag(row), forms.edit),
    newSubItem: forms.newSubItem ?? emptyForm(),
  };
  return sendPage(
    reply,
    status,
    `#${item.number} · ${scope.product.name}`,
    itemPage(view, viewerOf(sessionOf(request))),
    sessionOf(request),
  );
}

/**
 * How the edit form comes back after a save that did not go through: `refused` (values kept as
 * typed, and what the form was opened with, so that the next save still compares against that),
 * or in `conflict` on some fields (the item as it now is, with the person's own values in those).
 */
type EditState =
  | { refused: FormState; seen: Record<string, string>; version: string }
  | { conflicts: string[]; typed: Record<string, string> };

function editForm(current: Record<string, string>, version: string, state: EditState | undefined): EditForm {
  if (state === undefined) return { values: current, errors: {}, seen: current, version, conflicts: [] };
  if ('refused' in state) return { ...state.refused, seen: state.seen, version: state.version, conflicts: [] };
  const values = { ...current };
  for (const f of state.conflicts) values[f] = state.typed[f] ?? '';
  return { values, errors: {}, seen: current, version, conflicts: state.conflicts };
}

/**
 * Where a refused new item's form is shown again: the page of its parent when that is a story
 * (the page with the sub-item form), else the board, whose form shows what is wrong with `parent`.
 */
async function storyPageOf(app: FastifyInstance, scope: ProductScope, raw: ParamValue): Promise<number | undefined> {
  const number = typeof raw === 'string' ? digitsToId(raw) : undefined;
  if (number === undefined) return undefined;
  const [item] = await findItemsByNumbers(app.db, scope.product.id, [number]);
  return item?.type === 'story' ? number : undefined;
}

/**
 * Items: create one (from the board or a story), its page, its edit form, following it: four
 * short handlers side by side.
 */
async function itemPages(app: FastifyInstance, { boards }: { boards: RenderedPages }): Promise<void> {
  app.post(
    '/items',
    { bodyLimit: ITEM_FORM_LIMIT, schema: { ...ProductPath, body: itemFields } },
    async (request, reply) => {
      checkToken(request);
      const p = requestParams(request);
      const scope = request.scope;
      let row: ItemRow;
      try {
        const input = await renderDescription(
          app.markdown,
          parseCreateItem({ ...p, description: lineBreaks(p.description) }),
        );
        row = await app.db.transaction().execute((trx) => createItem(trx, scope, input, app.config));
      } catch (err) {
        const shown = formErrors(err);
        if (!shown) throw err;
        const state = { values: asText(p), ...shown };
        const story = await storyPageOf(app, scope, p.parent);
        if (story !== undefined) return renderItem(app, request, reply, story, 400, { newSubItem: state });
        return renderBoard(app, boards, request, reply, parseBoardQuery({}, scope.user.id), 400, state);
      }
      return reply.header('cache-control', 'no-store').redirect(itemHref(scope.product.id, row.number), 303);
    },
  );

  app.get('/items/:item_number', { schema: ItemPath }, async (request, reply) =>
    renderItem(app, request, reply, numberOf(request), 200),
  );

  // The edit form sends every field with the values it showed: updateItem saves those the person
  // changed, and names those somebody else changed meanwhile, shown again to choose from.
  app.post(
    '/items/:item_number',
    { bodyLimit: ITEM_FORM_LIMIT, schema: { ...ItemPath, body: editFields } },
    async (request, reply) => {
      checkToken(request);
      const number = numberOf(request);
      const p = requestParams(request);
      const scope = request.scope;
      let conflicts: string[];
      try {
        const { seen, fields } = seenByForm(p);
        const input = await renderDescription(app.markdown, editInput(fields));
        ({ conflicts } = await app.db
          .transaction()
          .execute((trx) => updateItem(trx, scope, number, input, app.config, seen)));
      } catch (err) {
        const shown = formErrors(err);
        if (!shown) throw err;
        const seen = Object.fromEntries(EDIT_FIELDS.map((f) => [f, asText(p)[`seen_${f}`] ?? '']));
        return renderItem(app, request, reply, number, 400, {
          edit: { refused: { values: asText(p), ...shown }, seen, version: asText(p).version ?? '' },
        });
      }
      if (conflicts.length)
        return renderItem(app, request, reply, number, 409, { edit: { conflicts, typed: asText(p) } });
      return reply.header('cache-control', 'no-store').redirect(itemHref(scope.product.id, number), 303);
    },
  );

  app.post(
    '/items/:item_number/follow',
    { schema: { ...ItemPath, body: params({ csrf: Param, follow: Param }) } },
    async (request, reply) => {
      checkToken(request);
      const number = numberOf(request);
      const follow = requestParams(request).follow !== '0';
      await app.db.transaction().execute((trx) => setFollowing(trx, request.scope, number, follow));
      return reply.header('cache-control', 'no-store').redirect(itemHref(request.scope.product.id, number), 303);
    },
  );
}

/** The product's deploys, newest first, by environment. */
async function deployPages(app: FastifyInstance): Promise<void> {
  app.get(
    '/deploys',
    { schema: { ...ProductPath, querystring: params({ environment: Param, offset: Param }) } },
    async (request, reply) => {
      const scope = request.scope;
      const p = requestParams(request);
      const { filter, page } = parseDeployList({ environment: p.environment, offset: p.offset, order_by: 'newest' });
      const { deploys, total } = await findDeploys(app.db, scope, filter, page);
      const [json, notes] = await Promise.all([
        presentDeploys(app.db, scope, deploys, app.config, app.config.maxAnswerBytes),
        notesHtmlOf(app.db, deploys),
      ]);
      const view = {
        product: productOf(scope),
        deploys: json.map((d) => ({ ...d, notesHtml: notes.get(d.id)! })),
        total,
        offset: page.offset,
        pageSize: page.limit,
        environment: filter.environment,
      };
      return sendPage(reply, 200, `Deploys · ${scope.product.name}`, deploysPage(view), sessionOf(request));
    },
  );

  app.get('/deploys/:deploy_id', { schema: DeployPath }, async (request, reply) => {
    const scope = request.scope;
    const raw = (request.params as { deploy_id: string }).deploy_id;
    const deploy = await getDeploy(app.db, scope, digitsToId(raw) ?? -1);
    const [[json], notes] = await Promise.all([
      presentDeploys(app.db, scope, [deploy], app.config, app.config.maxAnswerBytes),
      notesHtmlOf(app.db, [deploy]),
    ]);
    const title = `${json.rollback ? 'Rollback' : 'Deploy'} to ${json.environment} · ${scope.product.name}`;
    return sendPage(
      reply,
      200,
      title,
      deployPage(productOf(scope), { ...json, notesHtml: notes.get(deploy.id)! }),
      sessionOf(request),
    );
  });
}

/** The `offset` of a page of an item's environments or deploys (400 naming it when malformed). */
const itemListOffset = (request: FastifyRequest): number =>
  asPage({ offset: requestParams(request).offset }, { default: ITEM_PAGE_LIST, max: ITEM_PAGE_LIST }).offset;

/**
 * What is deployed where, beyond the item page: all of an item's environments and all of its
 * deploys, a page at a time; and the matrix of the product's items and environments.
 */
async function wherePages(app: FastifyInstance): Promise<void> {
  const pageQuery = { ...ItemPath, querystring: params({ offset: Param }) };

  app.get('/items/:item_number/environments', { schema: pageQuery }, async (request, reply) => {
    const scope = request.scope;
    const page = { offset: itemListOffset(request), limit: ITEM_PAGE_LIST };
    const row = await getItem(app.db, scope, numberOf(request));
    const { deployments, total } = await deploymentsOfItem(app.db, row, page);
    const environments = presentEnvironments(deployments, await environmentDeployers(app, scope, deployments));
    const view = {
      product: productOf(scope),
      item: row,
      kind: 'environments' as const,
      environments,
      history: [],
      total,
      offset: page.offset,
      pageSize: page.limit,
    };
    return sendPage(
      reply,
      200,
      `Where #${row.number} is deployed · ${scope.product.name}`,
      itemDeploysPage(view),
      sessionOf(request),
    );
  });

  app.get('/items/:item_number/deploys', { schema: pageQuery }, async (request, reply) => {
    const scope = request.scope;
    const page = { offset: itemListOffset(request), limit: ITEM_PAGE_LIST, newest: false };
    const row = await getItem(app.db, scope, numberOf(request));
    const { deploys, total } = await deployHistoryOf(app.db, scope, row.id, page);
    const view = {
      product: productOf(scope),
      item: row,
      kind: 'history' as const,
      environments: [],
      history: presentHistory(deploys),
      total,
      offset: page.offset,
      pageSize: page.limit,
    };
    return sendPage(
      reply,
      200,
      `Deploys of #${row.number} · ${scope.product.name}`,
      itemDeploysPage(view),
      sessionOf(request),
    );
  });

  app.get(
    '/deploys/matrix',
    { schema: { ...ProductPath, querystring: params({ status: Param, not_deployed_to: Param, offset: Param }) } },
    async (request, reply) => {
      const p = requestParams(request);
      let filters: MatrixFilters = {};
      let input: ListItemsInput;
      try {
        filters = matrixFilters(p);
        // The items list's own parser: the filters mean exactly what they mean on items.json.
        input = parseListItems({
          status: filters.status ?? STATUS_NAMES.join(','),
          not_deployed_to: filters.not_deployed_to,
          offset: p.offset,
          limit: String(MATRIX_PAGE),
          order_by: 'newest',
        });
      } catch (err) {
        const shown = formErrors(err);
        if (!shown) throw err;
        const other = Object.entries(shown.errors).find(([name]) => name !== 'status' && name !== 'not_deployed_to');
        const form = {
          values: asText(p),
          errors: shown.errors,
          message: shown.message ?? (other ? `The ${other[0]} ${other[1]}.` : undefined),
        };
        return renderMatrix(app, request, reply, 400, filters, form);
      }
      return renderMatrix(app, request, reply, 200, filters, { values: { ...filters }, errors: {} }, input);
    },
  );
}

/**
 * The matrix: one page of the product's items as the items list finds them, newest first, and
 * their latest deploy to each of the environments shown, in one query. Without `input` (its
 * filters were refused) the form alone, with the reasons.
 */
async function renderMatrix(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  filters: MatrixFilters,
  form: FormState,
  input?: ListItemsInput,
) {
  const scope = request.scope;
  const [deployed, list] = await Promise.all([
    deployedEnvironments(app.db, scope.product.id, OFFERED_ENVIRONMENTS),
    input ? listItems(app.db, scope, input, app.listCounts) : { rows: [], total: 0 },
  ]);
  const columns = [...new Set([...(input?.notDeployedTo ?? []), ...deployed])];
  const environments = columns.slice(0, MATRIX_ENVIRONMENTS).sort((a, b) => a.localeCompare(b));
  const deployments = await deploymentsIn(
    app.db,
    list.rows.map((r) => r.id),
    environments,
  );
  const view = {
    product: productOf(scope),
    environments,
    moreEnvironments: columns.length > MATRIX_ENVIRONMENTS,
    offered: [...deployed].sort((a, b) => a.localeCompare(b)),
    rows: presentMatrixRows(list.rows, environments, deployments),
    total: list.total,
    offset: input?.offset ?? 0,
    pageSize: MATRIX_PAGE,
    filters,
    statuses: STATUS_NAMES,
    form,
  };
  return sendPage(
    reply,
    status,
    `What is deployed where · ${scope.product.name}`,
    matrixPage(view),
    sessionOf(request),
  );
}

/** Deployed environments that cannot be chosen (a comma splits a list; `all` is the keyword) get no box. */
const choosable = (environment: string): boolean =>
  !environment.includes(',') && environment.trim().toLowerCase() !== 'all';
/** The text values of a form field (ticked boxes of one name come as several). */
const strings = (v: ParamValue): string[] => [v ?? []].flat().filter((x): x is string => typeof x === 'string');

/** The page's form for a choice as it is stored. */
const choiceForm = (choice: EnvironmentChoice): NotificationForm =>
  choice === 'all'
    ? { values: { choice: 'all' }, errors: {}, chosen: [] }
    : { values: { choice: 'some' }, errors: {}, chosen: choice };

async function renderNotifications(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  form: NotificationForm,
  saved = false,
) {
  const scope = request.scope;
  const deployed = (await deployedEnvironments(app.db, scope.product.id, OFFERED_ENVIRONMENTS))
    .map((e) => e.trim())
    .filter(choosable);
  const offered = [...new Set([...deployed, ...form.chosen])].sort((a, b) => a.localeCompare(b));
  const view = { product: productOf(scope), offered, form, saved };
  return sendPage(
    reply,
    status,
    `Notifications · ${scope.product.name}`,
    notificationsPage(view, viewerOf(sessionOf(request))),
    sessionOf(request),
  );
}

/**
 * Which deploy environments email the signed-in person about the product: the rule and its
 * checks are the API's (notifications.json); the form's ticked boxes and typed names are one list.
 */
async function notificationPages(app: FastifyInstance): Promise<void> {
  app.get(
    '/notifications',
    { schema: { ...ProductPath, querystring: params({ saved: Param }) } },
    async (request, reply) =>
      renderNotifications(
        app,
        request,
        reply,
        200,
        choiceForm(await environmentChoice(app.db, request.scope)),
        requestParams(request).saved === '1',
      ),
  );

  app.post(
    '/notifications',
    {
      bodyLimit: ENVIRONMENTS_FORM_LIMIT,
      schema: { ...ProductPath, body: params({ csrf: Param, choice: Param, environments: Param, other: Param }) },
    },
    async (request, reply) => {
      checkToken(request);
      const p = requestParams(request);
      const ticked = strings(p.environments);
      const other = strings(p.other).at(-1) ?? '';
      const all = p.choice === 'all';
      try {
        const choice = parseEnvironmentChoice({ environments: all ? 'all' : [...ticked, other] });
        await app.db.transaction().execute((trx) => setEnvironmentChoice(trx, request.scope, choice));
      } catch (err) {
        const shown = formErrors(err);
        if (!shown) throw err;
        return renderNotifications(app, request, reply, 400, {
          values: { choice: all ? 'all' : 'some', other },
          chosen: ticked,
          ...shown,
        });
      }
      return reply
        .header('cache-control', 'no-store')
        .redirect(`/app/products/${request.scope.product.id}/notifications?saved=1`, 303);
    },
  );
}
