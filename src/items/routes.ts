import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Trx } from '../db/connection.js';
import type { ItemRow } from '../db/schema.js';
import { Type } from '@sinclair/typebox';
import { productNotFound } from '../errors.js';
import { boundedPage, NEXT_OFFSET, nextOffsetHeader, serializerOf } from '../http/answer-size.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref, type Explained } from '../http/documentation.js';
import { requestParams } from '../http/request.js';
import { asPage, digitsToId, params, type ParamValue } from '../http/params.js';
import { ItemParams, ProductParams } from '../http/schemas.js';
import type { ProductScope } from '../scope.js';
import {
  parseIfMatch,
  pathItemNumber,
  parseCreateItem,
  parseListItems,
  parseResort,
  parseUpdateItem,
  type IfMatch,
} from './input.js';
import {
  CHILDREN_PAGE,
  CLOSE_REASONS,
  DEPLOYED_TO_PAGE,
  entityTag,
  INPUT_STATUSES,
  ITEM_TYPES,
  LIMITS,
  MAX_CHILDREN_OFFSET,
  MAX_ENVIRONMENT_FILTER,
  MAX_LIST_OFFSET,
  MAX_TAG_FILTER,
  MAX_TAGS,
  ORDERS,
  SCORES,
  STATUSES,
} from './model.js';
import { itemPagePath } from './urls.js';
import {
  DeploymentSchema,
  ItemSchema,
  presentDeployment,
  presentItems,
  rowsThatMayFit,
  type ItemJson,
} from './present.js';
import { knownDeploymentsOf, type KnownRelations } from './repository.js';
import {
  archiveItem,
  childrenOf,
  createItem,
  deploymentsOf,
  getItem,
  getItemToShow,
  listItems,
  renderDescription,
  resortItem,
  setFollowing,
  updateItem,
} from './service.js';

/** What an item's parameters mean (docs/INTERFACE.md §7.2, §7.4); `type` only counts on creation. */
const itemFields = {
  type: doc.choice(ITEM_TYPES, "Ignored: an item's type never changes."),
  title: doc.text(
    'Required for a task, defect or test, and not empty; ignored for a story, whose title is built from who, what and why.',
    LIMITS.title,
  ),
  who: doc.text('A story\'s "As a …"; required for a story, and not empty.', LIMITS.who),
  what: doc.text('A story\'s "I want …"; required for a story, and not empty.', LIMITS.what),
  why: doc.text('A story\'s "so that …"; required for a story, and not empty.', LIMITS.why),
  description: doc.text(`Markdown; at most ${LIMITS.description} bytes of UTF-8.`, LIMITS.description),
  score: doc.choice(SCORES, '`~` unless given.'),
  status: doc.choice(
    INPUT_STATUSES,
    '`backlog` for a new item unless given; a change moves the item to the bottom of its new status.',
  ),
  assigned_to: doc.reference(
    'A user id, of a member of the product, who starts following the item; empty or null unassigns.',
    'id',
  ),
  created_by: doc.reference(
    'Accepted for compatibility: it must name a user, but the creator is always the caller.',
    'id',
  ),
  tags: doc.list(
    `Each at most ${LIMITS.tag} characters, at most ${MAX_TAGS}; on an update the whole set, and empty removes every tag.`,
  ),
  parent: doc.reference(
    'The number of a story of this product, under which the item is placed (not for a story); empty or null detaches it.',
    'number',
  ),
  close_reason: doc.choice(CLOSE_REASONS, 'Used while the status is completed or accepted; `fixed` unless given.'),
};
const createFields = { ...itemFields, type: doc.required(doc.choice(ITEM_TYPES, 'The kind of item; never changes.')) };
const listFields = {
  type: doc.list('Only items of these types.', ITEM_TYPES),
  status: doc.list('Only items in these statuses; `backlog,in-progress` by default.', STATUSES),
  offset: doc.integer(
    `Entries to skip: at most ${MAX_LIST_OFFSET} (${MAX_CHILDREN_OFFSET} with children=true); 0 by default.`,
  ),
  limit: doc.integer('Page size: 20 by default, above 500 taken as 500.', 1),
  order_by: doc.choice(ORDERS, '`priority` by default (docs/INTERFACE.md §6).'),
  assigned_to: doc.integer('Only items assigned to this user id; empty is no filter.'),
  created_by: doc.integer('Only items this user id created; empty is no filter.'),
  tags: doc.list(`Only items that carry every one of these tags (at most ${MAX_TAG_FILTER}).`),
  children: doc.flag(
    'Also list, right after each story, its sub-items that are not archived, whatever their status; false by default.',
  ),
  deployed_to: doc.list(
    `Only items that these environments run now (their entry there is not reverted); at most ${MAX_ENVIRONMENT_FILTER}.`,
  ),
  not_deployed_to: doc.list(
    `Only items none of these environments runs now (never deployed there, or reverted); at most ${MAX_ENVIRONMENT_FILTER}.`,
  ),
};

/** One item, serialized on its own to fit a page within the size bound of an answer. */
const ONE_ITEM = ref(ItemSchema);
/** The total of an item list, before paging. */
const ITEM_COUNT = 'X-Sprintly-Item-Count';
const ITEM_MISSING = { 404: 'No item with that number in the product.' };
const count = (header: string, what: string) => ({
  [header]: { type: 'integer', description: `How many ${what} there are in all, before paging.` },
});

/** The item routes under `/api/products/{id}`: the lists, then the changes to one item. */
export async function itemRoutes(app: FastifyInstance): Promise<void> {
  await app.register(itemListRoutes);
  await app.register(itemChangeRoutes);
}

/** The caller's view of one item, as every single-item route answers, with its version as the ETag. */
const presentOne = async (
  app: FastifyInstance,
  reply: FastifyReply,
  scope: ProductScope,
  row: ItemRow,
  known?: KnownRelations,
) => {
  reply.header('ETag', `"${entityTag(row)}"`);
  const options = { product: scope.product, rows: [row], urls: app.config, viewerId: scope.user.id, known };
  return (await presentItems(app.db, options))[0];
};

/** The header every answer of one item carries. */
const ETAG = {
  ETag: {
    type: 'string',
    description:
      "The item's version, a strong entity tag: it changes with every change to the item (fields, status, order, tags, assignee, parent, archiving, deploys, follows). Send it in If-Match to change the item only as you saw it.",
  },
};

// Only documents the header: parseIfMatch reads and checks it.
const IfMatchHeader = documentAs(
  Type.Object({}),
  Type.Object({
    'If-Match': Type.Optional(
      Type.String({
        description:
          'The ETag of the item as you last read it (several may be listed), or `*` for any version: the change is made only if the item is still at that version, else 412. Without it the change is made whatever happened since.',
      }),
    ),
  }),
);
const IF_MATCH_ERRORS: Explained = {
  400: 'If-Match is neither `*` nor a list of quoted entity tags.',
  412: "If-Match names none of the item's current version: somebody changed it since; nothing was changed.",
};
const ifMatchOf = (request: FastifyRequest): IfMatch | undefined => parseIfMatch(request.headers['if-match']);

/** Lists: the items of a product, a story's sub-items, an item's environments. */
async function itemListRoutes(app: FastifyInstance): Promise<void> {
  const page = (size: { default: number; max: number }) =>
    params({
      offset: doc.integer('Entries to skip; 0 by default.'),
      limit: doc.integer(`Page size: ${size.default} by default, above ${size.max} taken as ${size.max}.`, 1),
    });
  const items = (description: string) =>
    Type.Array(ref(ItemSchema), { description, headers: { ...count(ITEM_COUNT, 'entries'), ...nextOffsetHeader } });
  /**
   * A page of items as JSON within the size bound of an answer, with the total and, when entries
   * remain after it, where the next page starts (it can end before `limit`).
   */
  const boundedItems = async (
    reply: FastifyReply,
    items: ItemJson[],
    offset: number,
    total: number,
  ): Promise<Buffer> => {
    const page = await boundedPage(items, serializerOf<ItemJson>(reply, ONE_ITEM), app.config.maxAnswerBytes);
    reply.header(ITEM_COUNT, String(total));
    if (offset + page.count < total) reply.header(NEXT_OFFSET, String(offset + page.count));
    return Buffer.from(page.json);
  };

  app.get(
    '/api/products/:product_id/items.json',
    {
      schema: {
        summary: 'List items',
        description:
          'Top-level items that are not archived, a page at a time, which ends early rather than pass the size bound of an answer (docs/INTERFACE.md §7.1).',
        operationId: 'listItems',
        tags: ['items'],
        params: ProductParams,
        querystring: params(listFields),
        response: { 200: items('The page of items.') },
        errors: errorAnswers([
          {
            400: `An invalid type, status, order_by, offset, limit or children; more than ${MAX_TAG_FILTER} tags, or ${MAX_ENVIRONMENT_FILTER} environments in deployed_to or not_deployed_to, or one longer than 255 characters; offset above ${MAX_LIST_OFFSET} (${MAX_CHILDREN_OFFSET} with children=true).`,
            404: 'assigned_to or created_by names no user.',
          },
        ]),
      },
    },
    async (request, reply) => {
      const input = parseListItems(requestParams(request));
      return app.keptAnswers.answer(
        request,
        reply,
        `items:${JSON.stringify(input)}`,
        [ITEM_COUNT, NEXT_OFFSET],
        async () => {
          const { rows, total } = await listItems(
            app.db,
            request.scope,
            input,
            app.listCounts,
            app.config.maxAnswerBytes,
          );
          const shown = rowsThatMayFit(rows, app.config.maxAnswerBytes);
          return boundedItems(
            reply,
            await presentItems(app.db, {
              product: request.scope.product,
              rows: shown,
              urls: app.config,
              viewerId: request.scope.user.id,
            }),
            input.offset,
            total,
          );
        },
      );
    },
  );

  app.get(
    '/api/products/:product_id/items/:item_number/children.json',
    {
      schema: {
        summary: "List a story's sub-items",
        description: 'Sub-items that are not archived, in priority order, whatever their status.',
        operationId: 'listChildren',
        tags: ['items'],
        params: ItemParams,
        querystring: page(CHILDREN_PAGE),
        response: { 200: items('The page of sub-items.') },
        errors: errorAnswers([{ 400: 'A malformed offset or limit; the item is not a story.' }, ITEM_MISSING]),
      },
    },
    async (request, reply) => {
      const page = asPage(requestParams(request), CHILDREN_PAGE);
      const { rows, total } = await childrenOf(
        app.db,
        request.scope,
        pathItemNumber(request),
        page,
        app.config.maxAnswerBytes,
      );
      reply.type('application/json; charset=utf-8');
      const shown = rowsThatMayFit(rows, app.config.maxAnswerBytes);
      return boundedItems(
        reply,
        await presentItems(app.db, {
          product: request.scope.product,
          rows: shown,
          urls: app.config,
          viewerId: request.scope.user.id,
        }),
        page.offset,
        total,
      );
    },
  );

  // Every environment an item went to; the item itself shows only the latest (deployed_to).
  app.get(
    '/api/products/:product_id/items/:item_number/deployed_to.json',
    {
      schema: {
        summary: 'List every environment an item went to',
        description: "The item's latest deploy to each environment, newest first; the item shows only the latest few.",
        operationId: 'listDeployedTo',
        tags: ['items'],
        params: ItemParams,
        querystring: page(DEPLOYED_TO_PAGE),
        response: {
          200: Type.Array(ref(DeploymentSchema), {
            description: 'The page of environments.',
            headers: count('X-Sprintly-Deployed-To-Count', 'environments'),
          }),
        },
        errors: errorAnswers([{ 400: 'A malformed offset or limit.' }, ITEM_MISSING]),
      },
    },
    async (request, reply) => {
      const page = asPage(requestParams(request), DEPLOYED_TO_PAGE);
      const { deployments, total } = await deploymentsOf(app.db, request.scope, pathItemNumber(request), page);
      reply.header('X-Sprintly-Deployed-To-Count', String(total));
      return deployments.map(presentDeployment);
    },
  );
}

/**
 * One item: fetch it, and each change, made in one transaction by its named service operation
 * and answered with the item as it is then.
 */
async function itemChangeRoutes(app: FastifyInstance): Promise<void> {
  const item = '/api/products/:product_id/items/:item_number.json';
  const answer = (description: string, ...errors: Explained[]) => ({
    response: { 200: ref(ItemSchema, { description, headers: ETAG }) },
    errors: errorAnswers(errors),
  });
  const tags = ['items'];
  const change =
    <T>(
      parse: (p: Record<string, ParamValue>) => T,
      run: (trx: Trx, scope: ProductScope, number: number, input: T, ifMatch: IfMatch | undefined) => Promise<ItemRow>,
      options: { conditional?: boolean; prepare?: (input: T) => Promise<T> } = {},
    ) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const parsed = parse(requestParams(request));
      const ifMatch = options.conditional ? ifMatchOf(request) : undefined;
      const number = pathItemNumber(request);
      // What is worked out before the transaction opens: the description's HTML.
      const input = options.prepare ? await options.prepare(parsed) : parsed;
      const row = await app.db.transaction().execute((trx) => run(trx, request.scope, number, input, ifMatch));
      return presentOne(app, reply, request.scope, row);
    };
  const noInput = () => undefined;

  app.post(
    '/api/products/:product_id/items.json',
    {
      schema: {
        summary: 'Create an item',
        description:
          "The item gets the product's next number and goes to the bottom of its status; the creator and the assignee follow it.",
        operationId: 'createItem',
        tags,
        params: ProductParams,
        body: params(createFields),
        ...answer(
          'The new item.',
          {
            400: 'A missing or invalid type; an invalid status, score or close_reason; a missing title (task, defect, test) or who, what or why (story); a value too long; too many tags; a parent for a story, or one that is not a story.',
            404: 'assigned_to names no member of the product, created_by no user, or parent no item of the product.',
          },
          BODY_ERRORS,
        ),
      },
    },
    async (request, reply) => {
      const input = await renderDescription(app.markdown, parseCreateItem(requestParams(request)));
      const row = await app.db.transaction().execute((trx) => createItem(trx, request.scope, input, app.config));
      // An item made just now was deployed nowhere: none of its deployments to read.
      return presentOne(app, reply, request.scope, row, knownDeploymentsOf(row.id, [], 0));
    },
  );
  app.get(
    item,
    {
      schema: {
        summary: 'Fetch an item',
        operationId: 'getItem',
        tags,
        params: ItemParams,
        ...answer('The item, archived or not.', ITEM_MISSING),
      },
    },
    async (request, reply) => {
      const { row, known } = await getItemToShow(app.db, request.scope, pathItemNumber(request));
      return presentOne(app, reply, request.scope, row, known);
    },
  );
  app.post(
    item,
    {
      schema: {
        summary: 'Update an item',
        description:
          'Only the parameters given change anything, and only when they differ from what is stored (docs/INTERFACE.md §7.4).',
        operationId: 'updateItem',
        tags,
        params: ItemParams,
        headers: IfMatchHeader,
        body: params(itemFields),
        ...answer(
          'The item as it now is.',
          {
            400: 'An invalid status, score or close_reason; an empty title, who, what or why; a value too long; too many tags; a parent the rules do not allow.',
            404: 'No item with that number in the product; assigned_to names no member of the product, or parent no item of it.',
          },
          IF_MATCH_ERRORS,
          BODY_ERRORS,
        ),
      },
    },
    change(
      parseUpdateItem,
      async (trx, scope, n, input, ifMatch) =>
        (await updateItem(trx, scope, n, input, app.config, ifMatch && { etags: ifMatch })).row,
      { conditional: true, prepare: (input) => renderDescription(app.markdown, input) },
    ),
  );
  app.delete(
    item,
    {
      schema: {
        summary: 'Archive an item',
        description: 'Archived items leave every list but can still be fetched, updated and deployed.',
        operationId: 'archiveItem',
        tags,
        params: ItemParams,
        ...answer('The archived item.', ITEM_MISSING, BODY_ERRORS),
      },
    },
    change(noInput, (trx, scope, n) => archiveItem(trx, scope, n, app.config)),
  );
  app.post(
    '/api/products/:product_id/items/:item_number/resort.json',
    {
      schema: {
        summary: 'Move an item within its status',
        description: 'docs/INTERFACE.md §6: with both before and after, the item lands between them.',
        operationId: 'resortItem',
        tags,
        params: ItemParams,
        headers: IfMatchHeader,
        body: params({
          before: doc.integer('The number of the item that is to stand directly before this one.'),
          after: doc.integer('The number of the item that is to come directly after this one.'),
        }),
        ...answer(
          'The item.',
          { 400: 'Neither before nor after given; one in another status than the item, or the item itself.' },
          { 404: 'No item with that number in the product, or before or after names none.' },
          IF_MATCH_ERRORS,
          BODY_ERRORS,
        ),
      },
    },
    change(parseResort, resortItem, { conditional: true }),
  );
  for (const [method, follow, summary, operationId] of [
    ['POST', true, 'Follow an item', 'followItem'],
    ['DELETE', false, 'Stop following an item', 'unfollowItem'],
  ] as const) {
    app.route({
      method,
      url: '/api/products/:product_id/items/:item_number/follow.json',
      schema: {
        summary,
        operationId,
        tags,
        params: ItemParams,
        ...answer('The item; repeating is harmless.', ITEM_MISSING, BODY_ERRORS),
      },
      handler: change(noInput, (trx, scope, n) => setFollowing(trx, scope, n, follow)),
    });
  }
}

/**
 * How much an Accept header wants a media type: its own q, else its type's wildcard, else `*\/*`.
 * A missing header accepts everything equally.
 */
function acceptQuality(accept: string | undefined, type: string): number {
  if (!accept) return 1;
  let best: { rank: number; q: number } = { rank: -1, q: 0 };
  for (const part of accept.split(',')) {
    const [range, ...parameters] = part.split(';').map((s) => s.trim().toLowerCase());
    const rank = range === type ? 2 : range === `${type.split('/')[0]}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (rank <= best.rank) continue;
    const q = Number(/^q=([0-9.]+)$/.exec(parameters.find((p) => p.startsWith('q=')) ?? 'q=1')?.[1] ?? 1);
    best = { rank, q: Number.isFinite(q) ? q : 0 };
  }
  return best.q;
}

/** A browser following a link: it asks for HTML by name, above JSON (`*\/*` alone, as curl sends, is not that). */
export const prefersHtml = (accept: string | undefined): boolean =>
  acceptQuality(accept, 'text/html') > acceptQuality(accept, 'application/json');

/**
 * `short_url`s (`/i/{product}/{number}/`) lead to the item: a browser asking for HTML to its page
 * (which asks it to sign in), any other client to its API address, which asks for credentials as
 * usual. No lookup here, so the redirect tells nothing about what exists.
 */
export async function shortUrlRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/i/:product_id/:item_number/',
    {
      schema: {
        summary: "Follow an item's short_url",
        description: 'Needs no credentials and looks nothing up; the address it leads to asks for them as usual.',
        operationId: 'followShortUrl',
        tags: ['links'],
        params: ItemParams,
        response: {
          302: {
            type: 'null',
            description:
              "A browser asking for HTML goes to the item's page, any other client to the item's API address.",
            headers: { Location: { type: 'string', description: 'The absolute address of the item.' } },
          },
        },
        errors: errorAnswers([{ 404: 'The product id or the item number is not a number.' }]),
      },
    },
    async (request, reply) => {
      const productId = digitsToId((request.params as { product_id: string }).product_id);
      const number = pathItemNumber(request);
      if (productId === undefined) throw productNotFound();
      reply.header('vary', 'Accept');
      if (prefersHtml(request.headers.accept))
        return reply.redirect(`${app.config.publicUrl}${itemPagePath(productId, number)}`, 302);
      return reply.redirect(`${app.config.publicUrl}/api/products/${productId}/items/${number}.json`, 302);
    },
  );
}
