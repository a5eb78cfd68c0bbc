import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse, RouteOptions } from 'fastify';
import fc from 'fast-check';
import { insertMembership } from '../src/products/repository.js';
import {
  changesBetween,
  encodeLoosely,
  formComponent,
  fuzzParameters,
  jsonText,
  numberText,
  oddText,
  pageSession,
  signInPath,
  snapshot,
  type Snapshot,
} from './fuzz.js';
import {
  assertError,
  client,
  deliveredMail,
  invitationPath,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  type TestContext,
  type TestUser,
} from './helpers.js';

/**
 * Property: bad input never hurts. Every route of the app gets requests with random parameters
 * (in the query string, form and JSON bodies, the path), bodies of other types, and callers of
 * every kind; none is answered with a 5xx, every 4xx is in the interface's error shape (an HTML
 * page under /app/), and neither a 4xx nor a GET changes anything in the database.
 */

/** Who may call a route: API credentials, a page session, or anyone (the path holds a token, or nothing). */
type Access = 'api' | 'page' | 'open';

interface RouteSpec {
  access: Access;
  /** The parameters the route reads: its schema's querystring (GET) or body (other methods) properties. */
  params: string[];
  /** Parameters read from the query string outside the schema. */
  query?: string[];
  /** Request headers the route reads. */
  headers?: string[];
  /**
   * Parameters of a request that succeeds: half the cases change a few of them, so that they get
   * past the first check.
   */
  example?: Record<string, string>;
}

/** Stands in a generated request for the form token of the session it is sent with, put in when it is sent. */
const CSRF = 'CSRF-OF-THE-SESSION';

/**
 * A webhook target that needs no name lookup and is no private address: it is never called here
 * (the webhook worker does not run).
 */
const WEBHOOK_URL = 'https://93.184.216.34/hook';
/** /metrics answers this bearer token only. */
const METRICS_TOKEN = 'fuzz-metrics-token-0123456789abcdef';

const ITEM_FIELDS = [
  'type',
  'title',
  'who',
  'what',
  'why',
  'description',
  'score',
  'status',
  'assigned_to',
  'created_by',
  'tags',
  'parent',
  'close_reason',
];
const LIST_FIELDS = [
  'type',
  'status',
  'offset',
  'limit',
  'order_by',
  'assigned_to',
  'created_by',
  'tags',
  'children',
  'deployed_to',
  'not_deployed_to',
];
const WEBHOOK_FIELDS = ['url', 'events', 'format', 'secret', 'enabled'];
const PAGE_ITEM_FIELDS = [
  'csrf',
  'type',
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
];
const EDITED = ['title', 'who', 'what', 'why', 'description', 'status', 'score', 'tags', 'assigned_to', 'parent'];
/**
 * The edit form: its fields, each as shown (`seen_`) and which value to keep after a conflict
 * (`keep_`), and its version.
 */
const PAGE_EDIT_FIELDS = ['csrf', 'version', ...EDITED, ...EDITED.flatMap((f) => [`seen_${f}`, `keep_${f}`])];
const PAGE = ['offset', 'limit'];

/**
 * Every route of the app (HEAD ones come with their GET), with what it reads. The first test fails
 * for a route missing here, naming it: a new route is fuzzed once it has its line.
 */
const ROUTES: Record<string, RouteSpec> = {
  'GET /': { access: 'open', params: [] },
  'GET /health': { access: 'open', params: [] },
  'GET /health/live': { access: 'open', params: [] },
  'GET /health/ready': { access: 'open', params: [] },
  'GET /metrics': { access: 'open', params: [], headers: ['authorization'] },
  'GET /openapi.json': { access: 'open', params: [] },
  'GET /docs': { access: 'open', params: [] },
  'GET /docs/json': { access: 'open', params: [] },
  'GET /docs/static/theme/shiplog.css': { access: 'open', params: [] },
  'GET /docs/yaml': { access: 'open', params: [] },
  'GET /docs/static/index.html': { access: 'open', params: [] },
  'GET /docs/static/swagger-initializer.js': { access: 'open', params: [] },
  'GET /docs/static/*': { access: 'open', params: [] },
  'GET /i/:product_id/:item_number/': { access: 'open', params: [] },
  'GET /unsubscribe/:token': { access: 'open', params: [] },
  'POST /unsubscribe/:token': { access: 'open', params: [] },
  'GET /invitations/:token': { access: 'open', params: [] },
  'POST /invitations/:token': {
    access: 'open',
    params: ['first_name', 'last_name'],
    example: { first_name: 'Ivy', last_name: 'Invitee' },
  },

  'GET /app': { access: 'page', params: [] },
  'GET /app/board.js': { access: 'page', params: [] },
  'GET /app/item.js': { access: 'page', params: [] },
  'GET /app/notifications.js': { access: 'page', params: [] },
  'GET /app/live.js': { access: 'page', params: [] },
  'GET /app/forms.js': { access: 'page', params: [] },
  'GET /app/style.css': { access: 'page', params: [] },
  'GET /app/sign-in': { access: 'page', params: ['next'], example: { next: '/app/settings' } },
  'POST /app/sign-in': { access: 'page', params: ['email', 'next'], example: { email: 'someone@example.com' } },
  'GET /app/sign-in/:token': { access: 'page', params: [] },
  'POST /app/sign-in/:token': { access: 'page', params: [], query: ['next'] },
  'POST /app/sign-out': { access: 'page', params: ['csrf'], example: { csrf: CSRF } },
  'GET /app/products': { access: 'page', params: [] },
  'POST /app/products': { access: 'page', params: ['csrf', 'name'], example: { csrf: CSRF, name: 'Made on a page' } },
  'GET /app/products/:product_id/people': { access: 'page', params: ['done'], example: { done: 'invited' } },
  'POST /app/products/:product_id/people': {
    access: 'page',
    params: ['csrf', 'email', 'first_name', 'last_name', 'admin'],
    example: { csrf: CSRF, email: 'invited.on.a.page@example.com', first_name: 'Ivy' },
  },
  'POST /app/products/:product_id/people/invitations/:invitation_id/resend': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'GET /app/products/:product_id/people/invitations/:invitation_id/cancel': { access: 'page', params: [] },
  'POST /app/products/:product_id/people/invitations/:invitation_id/cancel': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'GET /app/products/:product_id/items/:item_number/archive': { access: 'page', params: [] },
  'POST /app/products/:product_id/items/:item_number/archive': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'POST /app/products/:product_id/webhooks/:webhook_id/deliveries/:delivery_id/replay': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'GET /app/settings': { access: 'page', params: [] },
  'GET /app/search': {
    access: 'page',
    params: ['q', 'product', 'sort', 'offset', 'limit'],
    example: { q: 'fuzz status:backlog', sort: 'number' },
  },
  'POST /app/settings/api-key': { access: 'page', params: ['csrf', 'confirm'], example: { csrf: CSRF } },
  'POST /app/settings/sign-out-everywhere': { access: 'page', params: ['csrf'], example: { csrf: CSRF } },
  'GET /app/products/:product_id/board': {
    access: 'page',
    params: ['q', 'type', 'assignee', 'creator', 'tags', 'mine', 'status', 'offset', 'created', 'moved'],
    example: { q: 'fuzz is:open', type: 'task', tags: 'a', created: '1' },
  },
  'GET /app/products/:product_id/events': { access: 'page', params: ['since'], example: { since: '1' } },
  'POST /app/products/:product_id/items': {
    access: 'page',
    params: [...PAGE_ITEM_FIELDS, 'from'],
    example: { csrf: CSRF, type: 'task', title: 'From the board', from: 'board' },
  },
  'GET /app/products/:product_id/items/:item_number': {
    access: 'page',
    params: ['skip_comment', 'skip_deploy', 'skip_change', 'skip_created', 'done'],
    example: { skip_comment: '1', done: 'commented' },
  },
  'POST /app/products/:product_id/items/:item_number/comments': {
    access: 'page',
    params: ['csrf', 'body', 'preview', 'post'],
    example: { csrf: CSRF, body: 'A comment from the page', post: '1' },
  },
  'GET /app/products/:product_id/items/:item_number/comments/:comment_id/delete': { access: 'page', params: [] },
  'POST /app/products/:product_id/items/:item_number/comments/:comment_id/delete': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'POST /app/products/:product_id/items/:item_number/favorite': {
    access: 'page',
    params: ['csrf', 'favorite'],
    example: { csrf: CSRF, favorite: '1' },
  },
  'POST /app/products/:product_id/items/:item_number/blocks': {
    access: 'page',
    params: ['csrf', 'blocked', 'blocker'],
    example: { csrf: CSRF, blocked: '2' },
  },
  'POST /app/products/:product_id/items/:item_number/blocks/:block_id/remove': {
    access: 'page',
    params: ['csrf', 'from'],
    example: { csrf: CSRF, from: '1' },
  },
  'POST /app/products/:product_id/items/:item_number/attachments': { access: 'page', params: [] },
  'GET /app/products/:product_id/items/:item_number/attachments/:attachment_id/delete': { access: 'page', params: [] },
  'POST /app/products/:product_id/items/:item_number/attachments/:attachment_id/delete': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },
  'POST /app/products/:product_id/items/:item_number': {
    access: 'page',
    params: PAGE_EDIT_FIELDS,
    example: { csrf: CSRF, title: 'Edited', status: 'in-progress' },
  },
  'POST /app/products/:product_id/items/:item_number/move': {
    access: 'page',
    params: ['csrf', 'to', 'above', 'below', 'status', 'back'],
    example: { csrf: CSRF, to: 'place', status: 'backlog', above: '3' },
  },
  'POST /app/products/:product_id/items/:item_number/follow': {
    access: 'page',
    params: ['csrf', 'follow'],
    example: { csrf: CSRF, follow: '1' },
  },
  'GET /app/products/:product_id/deploys': {
    access: 'page',
    params: ['environment', 'offset'],
    example: { environment: 'production' },
  },
  'GET /app/products/:product_id/deploys/:deploy_id': { access: 'page', params: [] },
  'GET /app/products/:product_id/deploys/matrix': {
    access: 'page',
    params: ['status', 'not_deployed_to', 'offset'],
    example: { status: 'completed,accepted', not_deployed_to: 'production' },
  },
  'GET /app/products/:product_id/items/:item_number/environments': { access: 'page', params: ['offset'] },
  'GET /app/products/:product_id/items/:item_number/deploys': { access: 'page', params: ['offset'] },
  'GET /app/products/:product_id/items/:item_number/attachments/:attachment_id/file': { access: 'page', params: [] },
  'GET /app/products/:product_id/notifications': { access: 'page', params: ['saved'] },
  'POST /app/products/:product_id/notifications': {
    access: 'page',
    params: ['csrf', 'choice', 'environments', 'other', 'comments', 'confirmed'],
    example: { csrf: CSRF, choice: 'some', environments: 'production', other: 'staging', confirmed: 'staging' },
  },
  'GET /app/products/:product_id/webhooks': { access: 'page', params: ['done'], example: { done: 'deleted' } },
  'POST /app/products/:product_id/webhooks': {
    access: 'page',
    params: ['csrf', 'url', 'events', 'format', 'secret'],
    example: { csrf: CSRF, url: WEBHOOK_URL, events: 'deploy.created' },
  },
  'GET /app/products/:product_id/webhooks/:webhook_id': { access: 'page', params: ['offset', 'replayed'] },
  'POST /app/products/:product_id/webhooks/:webhook_id/delete': {
    access: 'page',
    params: ['csrf', 'confirm'],
    example: { csrf: CSRF, confirm: 'yes' },
  },
  'POST /app/products/:product_id/webhooks/:webhook_id/enable': {
    access: 'page',
    params: ['csrf'],
    example: { csrf: CSRF },
  },

  'GET /api/user/whoami.json': { access: 'api', params: [] },
  'GET /api/products.json': { access: 'api', params: ['offset'] },
  'GET /api/items/search.json': {
    access: 'api',
    params: ['q', 'products', 'sort', 'order', 'offset', 'limit', 'facets'],
    example: { q: 'task tag:x -is:closed', facets: 'true' },
  },
  'POST /api/products.json': { access: 'api', params: ['name'], example: { name: 'A product' } },
  'GET /api/products/:product_id/invitations.json': { access: 'api', params: [] },
  'POST /api/products/:product_id/invitations/:invitation_id/resend.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/invitations/:invitation_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/people.json': { access: 'api', params: ['offset'] },
  'POST /api/products/:product_id/people.json': {
    access: 'api',
    params: ['email', 'first_name', 'last_name', 'admin'],
    example: { email: 'new@example.com', first_name: 'New' },
  },
  'GET /api/products/:product_id/items.json': {
    access: 'api',
    params: LIST_FIELDS,
    example: { status: 'backlog,completed', children: 'true' },
  },
  'POST /api/products/:product_id/items.json': {
    access: 'api',
    params: ITEM_FIELDS,
    example: { type: 'task', title: 'A task' },
  },
  'GET /api/products/:product_id/items/:item_number.json': { access: 'api', params: [] },
  'POST /api/products/:product_id/items/:item_number.json': {
    access: 'api',
    params: ITEM_FIELDS,
    headers: ['if-match'],
    example: { title: 'Renamed', status: 'completed' },
  },
  'DELETE /api/products/:product_id/items/:item_number.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/children.json': {
    access: 'api',
    params: PAGE,
    example: { limit: '10' },
  },
  'GET /api/products/:product_id/items/:item_number/deployed_to.json': {
    access: 'api',
    params: PAGE,
    example: { limit: '10' },
  },
  'GET /api/products/:product_id/items/:item_number/activities.json': {
    access: 'api',
    params: PAGE,
    example: { limit: '10' },
  },
  'GET /api/products/:product_id/activities.json': { access: 'api', params: PAGE, example: { offset: '1' } },
  'POST /api/products/:product_id/items/:item_number/resort.json': {
    access: 'api',
    params: ['before', 'after'],
    headers: ['if-match'],
    example: { before: '7' },
  },
  'POST /api/products/:product_id/items/:item_number/follow.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/items/:item_number/follow.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/notifications.json': { access: 'api', params: [] },
  'POST /api/products/:product_id/notifications.json': {
    access: 'api',
    params: ['environments', 'comments'],
    example: { environments: 'production,staging' },
  },
  'GET /api/products/:product_id/webhooks.json': { access: 'api', params: [] },
  'POST /api/products/:product_id/webhooks.json': {
    access: 'api',
    params: WEBHOOK_FIELDS,
    example: { url: WEBHOOK_URL, events: 'item.created,deploy.created' },
  },
  'GET /api/products/:product_id/webhooks/:webhook_id.json': { access: 'api', params: [] },
  'POST /api/products/:product_id/webhooks/:webhook_id.json': {
    access: 'api',
    params: WEBHOOK_FIELDS,
    example: { enabled: 'true', format: 'slack' },
  },
  'DELETE /api/products/:product_id/webhooks/:webhook_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/webhooks/:webhook_id/deliveries.json': { access: 'api', params: PAGE },
  'GET /api/products/:product_id/items/:item_number/comments.json': { access: 'api', params: PAGE },
  'POST /api/products/:product_id/items/:item_number/comments.json': {
    access: 'api',
    params: ['body'],
    example: { body: 'A *comment*' },
  },
  'GET /api/products/:product_id/items/:item_number/comments/:comment_id.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/items/:item_number/comments/:comment_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/favorites.json': { access: 'api', params: PAGE },
  'POST /api/products/:product_id/items/:item_number/favorites.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/favorites/:favorite_id.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/items/:item_number/favorites/:favorite_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/blocking.json': { access: 'api', params: PAGE },
  'GET /api/products/:product_id/items/:item_number/blocked_by.json': { access: 'api', params: PAGE },
  'POST /api/products/:product_id/items/:item_number/blocking.json': {
    access: 'api',
    params: ['blocked'],
    example: { blocked: '3' },
  },
  'GET /api/products/:product_id/items/:item_number/blocking/:block_id.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/items/:item_number/blocking/:block_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/annotations.json': { access: 'api', params: PAGE },
  'POST /api/products/:product_id/items/:item_number/annotations.json': {
    access: 'api',
    params: ['label', 'action', 'body'],
    example: { label: 'CI', action: 'passed', body: 'green' },
  },
  'GET /api/products/:product_id/items/:item_number/attachments.json': {
    access: 'api',
    params: PAGE,
    example: { limit: '10' },
  },
  'POST /api/products/:product_id/items/:item_number/attachments.json': { access: 'api', params: [], query: ['name'] },
  'GET /api/products/:product_id/items/:item_number/attachments/:attachment_id.json': { access: 'api', params: [] },
  'DELETE /api/products/:product_id/items/:item_number/attachments/:attachment_id.json': { access: 'api', params: [] },
  'GET /api/products/:product_id/items/:item_number/attachments/:attachment_id/file': { access: 'api', params: [] },
  'GET /api/products/:product_id/deploys.json': {
    access: 'api',
    params: ['environment', 'offset', 'limit', 'order_by'],
    example: { environment: 'production', order_by: 'newest' },
  },
  'POST /api/products/:product_id/deploys.json': {
    access: 'api',
    params: ['environment', 'numbers', 'version', 'notes', 'dry_run', 'rollback'],
    headers: ['idempotency-key'],
    example: { environment: 'staging', numbers: '1,2' },
  },
};

/** Cases per route: some 1,800 requests over the 120 routes, well under half a minute. */
const RUNS_PER_ROUTE = 15;

/** Routes as the app registers them: "METHOD url", and the parameter names their schema declares. */
const registered = new Map<string, string[]>();
function noteRoute(route: RouteOptions): void {
  for (const method of [route.method].flat()) {
    if (method === 'HEAD') continue;
    const schema = route.schema as
      | { body?: { properties?: object }; querystring?: { properties?: object } }
      | undefined;
    const source = method === 'GET' ? schema?.querystring : schema?.body;
    registered.set(`${method} ${route.url}`, Object.keys(source?.properties ?? {}).sort());
  }
}

let t: TestContext;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;
/** Page users: an admin and a non-member, each with a session; neither calls the API (a page may rotate their key). */
let web: TestUser;
let webOutsider: TestUser;
let productId: number;
let otherProductId: number;
let numbers: number[];
let deployId: number;
let webhookId: number;
let attachmentId: number;
/** Of item 1, by the owner: for the paths that name one. */
const conversation = { comment: 0, favorite: 0, block: 0 };
const sessions = new Map<string, { cookie: string; csrf: string }>();
const tokens = { invitation: '', unsubscribe: '', signIn: '' };

async function addWebhook(): Promise<void> {
  const webhook = await client(t.app, owner).post(`/api/products/${productId}/webhooks.json`, {
    url: WEBHOOK_URL,
    events: 'deploy.created,item.created',
  });
  assert.equal(webhook.statusCode, 200, webhook.body);
  webhookId = webhook.json().id;
}

/**
 * The owner's comment, favorite and block (of item 2) on item 1, for the paths that name one;
 * made again when deleted.
 */
async function addConversation(kind?: keyof typeof conversation): Promise<void> {
  const at = `/api/products/${productId}/items/1`;
  const api = client(t.app, owner);
  if (!kind || kind === 'comment')
    conversation.comment = (await api.post(`${at}/comments.json`, { body: 'Hi' })).json().id;
  if (!kind || kind === 'favorite') conversation.favorite = (await api.post(`${at}/favorites.json`)).json().id;
  if (!kind || kind === 'block')
    conversation.block = (await api.post(`${at}/blocking.json`, { blocked: '2' })).json().id;
}

/** An attachment of item 1 for the paths that name one: JSON, as every success of the API is. */
async function addAttachment(): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob(['{"passed": 12, "failed": 0}'], { type: 'application/json' }), 'report.json');
  const multipart = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  const attached = await t.app.inject({
    method: 'POST',
    url: `/api/products/${productId}/items/1/attachments.json`,
    headers: { authorization: owner.auth, 'content-type': multipart.headers.get('content-type')! },
    payload: Buffer.from(await multipart.arrayBuffer()),
  });
  assert.equal(attached.statusCode, 200, attached.body);
  attachmentId = attached.json().id;
}

before(async () => {
  // Rate limits far above what the run sends, so that every case reaches the route; /metrics on.
  t = await makeApp({
    onRoute: noteRoute,
    env: { RATE_LIMIT_PER_KEY: '1000000000', RATE_LIMIT_PER_ADDRESS: '1000000000', METRICS_TOKEN },
  });
  // As a server that has started: its readiness check passes.
  t.app.lifecycle.ready();
  const users: TestUser[] = [];
  for (let i = 0; i < 5; i++) users.push(await makeUser(t.db));
  [owner, member, outsider, web, webOutsider] = users;
  productId = (await makeProduct(t.db, owner, [member])).id;
  // The page user is an admin: the webhook pages are for admins only.
  await t.db
    .transaction()
    .execute((trx) => insertMembership(trx, productId, web.user.id, true, '2026-01-01T00:00:00+00:00'));
  otherProductId = (await makeProduct(t.db, outsider, [webOutsider], 'Not yours')).id;

  // A small product: a story with sub-items, items of every type and status, tags, assignees, an
  // archived one, a deploy.
  const story = await makeItem(t.app, owner, productId, {
    type: 'story',
    who: 'user',
    what: 'to fuzz',
    why: 'nothing breaks',
    tags: 'a,b',
  });
  await makeItem(t.app, owner, productId, { title: 'Sub-item', parent: story.number, assigned_to: member.user.id });
  await makeItem(t.app, owner, productId, { type: 'defect', title: 'A defect', status: 'in-progress', tags: 'b' });
  await makeItem(t.app, owner, productId, {
    type: 'test',
    title: 'A test',
    status: 'completed',
    close_reason: 'invalid',
  });
  await makeItem(t.app, owner, productId, {
    type: 'story',
    who: 'admin',
    what: 'more',
    why: 'why not',
    status: 'accepted',
  });
  for (let i = 0; i < 4; i++)
    await makeItem(t.app, owner, productId, {
      title: `Task ${i}`,
      assigned_to: i % 2 ? web.user.id : undefined,
      parent: i < 2 ? story.number : undefined,
    });
  const archived = await makeItem(t.app, owner, productId, { title: 'Archived' });
  assert.equal(
    (await client(t.app, owner).delete(`/api/products/${productId}/items/${archived.number}.json`)).statusCode,
    200,
  );
  numbers = Array.from({ length: archived.number }, (_, i) => i + 1);
  const deploy = await client(t.app, owner).post(`/api/products/${productId}/deploys.json`, {
    environment: 'production',
    numbers: '1,2,3',
    version: 'v1',
  });
  assert.equal(deploy.statusCode, 200, deploy.body);
  deployId = deploy.json().id;
  await addWebhook();
  await addAttachment();
  await addConversation();

  // Tokens that work, so that bodies sent with them reach the code behind the token check.
  const unsubscribe = (await deliveredMail(t))
    .map((m) => /\/unsubscribe\/([A-Za-z0-9_.-]+)>/.exec(m.headers.get('list-unsubscribe') ?? '')?.[1])
    .find(Boolean);
  assert.ok(unsubscribe, 'no unsubscribe link in the deploy mail');
  tokens.unsubscribe = unsubscribe;
  const invitee = `invitee-${process.pid}@example.com`;
  assert.equal(
    (await client(t.app, owner).post(`/api/products/${productId}/people.json`, { email: invitee })).statusCode,
    200,
  );
  tokens.invitation = (await invitationPath(t, invitee)).split('/').pop()!;
  tokens.signIn = (await signInPath(t, web)).split('/').pop()!;

  for (const user of [web, webOutsider]) sessions.set(user.email, await pageSession(t, user));
});
after(() => t.close());

type ApiCaller = 'owner' | 'member' | 'outsider' | 'nobody' | 'wrong key' | 'garbage';
type PageCaller = 'web' | 'web outsider' | 'nobody' | 'forged cookie' | 'garbage cookie';

/** A request as generated: everything literal but who sends it (resolved when it is sent). */
interface FuzzRequest {
  method: string;
  url: string;
  /** The product id of the path, if it has one, as sent. */
  product?: string;
  as: ApiCaller | PageCaller;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

/** Values a parameter of this name takes when well used, so that requests get past the first check. */
function plausible(name: string): fc.Arbitrary<string> {
  const someNumber = () => fc.constantFrom(...numbers.map(String));
  const someUser = () => fc.constantFrom(...[owner, member, outsider, web].map((u) => String(u.user.id)));
  switch (name) {
    case 'type':
      return fc.constantFrom('story', 'task', 'defect', 'test', 'Task', ' task ', 'story,task', 'epic');
    case 'status':
      return fc.constantFrom(
        'backlog',
        'in-progress',
        'completed',
        'accepted',
        'someday',
        'backlog,completed',
        'done',
        ' accepted ',
      );
    case 'score':
      return fc.constantFrom('~', 'S', 'M', 'L', 'XL', 'xl', 'XXL');
    case 'close_reason':
      return fc.constantFrom('fixed', 'invalid', 'duplicate', 'incomplete', 'wont-fix', 'works-for-me', 'nope');
    case 'order_by':
      return fc.constantFrom(
        'priority',
        'favorites',
        'oldest',
        'newest',
        'recent',
        'stale',
        'active',
        'abandoned',
        'random',
      );
    case 'children':
    case 'admin':
    case 'mine':
    case 'follow':
      return fc.constantFrom('true', 'false', '1', '0', 'yes', 'N', 'maybe', '');
    case 'offset':
    case 'limit':
      return fc.oneof(
        fc.constantFrom(
          '0',
          '1',
          '20',
          '100',
          '101',
          '500',
          '501',
          '1000',
          '1001',
          '10000',
          '10001',
          '100000',
          '100001',
        ),
        numberText,
      );
    case 'assigned_to':
    case 'created_by':
    case 'assignee':
    case 'creator':
      return fc.oneof(someUser(), fc.constant(''), numberText);
    case 'parent':
    case 'before':
    case 'after':
    case 'above':
    case 'below':
      return fc.oneof(someNumber(), numberText);
    case 'numbers':
      return fc.oneof(
        fc.array(someNumber(), { minLength: 1, maxLength: 4 }).map((ns) => ns.join(',')),
        fc.constantFrom(
          '1,,2',
          ' 3 , 4 ',
          '99999',
          '1,abc',
          '0',
          Array.from({ length: 1001 }, (_, i) => i + 1).join(','),
        ),
      );
    case 'tags':
      return fc.constantFrom(
        'a',
        'a,b',
        ' a , a ',
        ',',
        'x'.repeat(65),
        Array.from({ length: 101 }, (_, i) => `t${i}`).join(','),
      );
    case 'email':
      return fc.constantFrom(
        'someone@example.com',
        'SOMEONE@EXAMPLE.COM',
        member.email,
        outsider.email,
        'not an email',
        'a@b',
        '@example.com',
      );
    case 'csrf':
      return fc.constantFrom(CSRF, CSRF, CSRF, '', 'x'.repeat(43));
    case 'to':
      return fc.constantFrom('up', 'down', 'top', 'status', 'place', 'sideways');
    case 'back':
      return fc.constantFrom('type=task&tags=a', 'mine=1', 'status=done', '%%%');
    case 'next':
      return fc.constantFrom(
        '/app/products',
        `/app/products/${productId}/board?type=task`,
        '//evil.example/',
        'http://evil.example/',
        '/app/sign-in',
        '/app/\\evil',
        '/api/user/whoami.json',
      );
    case 'environment':
    case 'deployed_to':
    case 'not_deployed_to':
      return fc.constantFrom('production', 'staging', 'https://example.com/deploy?id=1', ' ', 'production,staging');
    case 'environments':
    case 'other':
      return fc.constantFrom('production', 'production,staging', '', ' , ', 'x'.repeat(256));
    case 'choice':
      return fc.constantFrom('all', 'some', 'none');
    case 'saved':
    case 'dry_run':
    case 'rollback':
    case 'enabled':
      return fc.constantFrom('true', 'false', '1', '0', 'yes', 'maybe', '');
    case 'url':
      return fc.constantFrom(
        WEBHOOK_URL,
        'http://127.0.0.1/hook',
        'http://10.0.0.1/x',
        'http://[::1]/x',
        'ftp://example.com/x',
        'not a url',
        'https://',
        'http://169.254.169.254/latest',
      );
    case 'events':
      return fc.constantFrom(
        'deploy.created',
        'item.created,item.updated',
        'deploy.rolled_back,item.status_changed',
        '',
        'nope',
      );
    case 'format':
      return fc.constantFrom('shiplog', 'slack', 'xml');
    case 'secret':
      return fc.constantFrom('s3cret-s3cret-s3cret', 'short', '');
    case 'version':
    case 'notes':
    case 'title':
    case 'who':
    case 'what':
    case 'why':
    case 'description':
    case 'name':
    case 'first_name':
    case 'last_name':
      return fc.constantFrom('A plain value', 'user', 'Ünïcödé 😀', '**Markdown** <b>html</b>');
    default:
      return fc.constant('1');
  }
}

/** A value for a parameter: a plausible one, odd text, or a malformed number. */
const valueFor = (name: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: plausible(name) },
    { weight: 2, arbitrary: oddText },
    { weight: 1, arbitrary: numberText },
  );

/** A key naming a parameter: as is mostly, else bracketed, nested, or another spelling. */
const keyFor = (name: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(name) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        `${name}[]`,
        `${name}[id]`,
        `${name}[number]`,
        `${name}[a][b]`,
        `${name}[`,
        `${name}]`,
        name.toUpperCase(),
        `${name}%00`,
        ` ${name}`,
      ),
    },
  );

/** One `key=value` of form or query text: a parameter the route reads (repeats allowed), or anything else. */
function pairFor(names: string[]): fc.Arbitrary<string> {
  const unknown = fc.tuple(oddText.chain(formComponent), oddText.chain(formComponent)).map(([k, v]) => `${k}=${v}`);
  if (names.length === 0) return unknown;
  const named = fc
    .constantFrom(...names)
    .chain((name) => fc.tuple(keyFor(name), valueFor(name).chain(formComponent), fc.boolean()))
    .map(([key, value, bare]) => (bare && value === '' ? key : `${key}=${value}`));
  return fc.oneof({ weight: 5, arbitrary: named }, { weight: 1, arbitrary: unknown });
}

/**
 * Random `key=value` pairs, or (when the route has one) its example, perhaps with pairs dropped,
 * and a few added, which win.
 */
function formText(names: string[], example?: Record<string, string>): fc.Arbitrary<string> {
  const random = fc
    .tuple(fc.array(pairFor(names), { maxLength: 6 }), fc.constantFrom('&', '&', '&', '&&', ';'))
    .map(([pairs, sep]) => pairs.join(sep));
  if (!example) return random;
  const base = Object.entries(example).map(([k, v]) => `${k}=${encodeLoosely(v)}`);
  const changed = fc
    .tuple(
      fc.oneof({ weight: 3, arbitrary: fc.constant(base) }, fc.subarray(base)),
      fc.array(pairFor(names), { maxLength: 2 }),
    )
    .map(([kept, added]) => [...kept, ...added].join('&'));
  return fc.oneof({ weight: 1, arbitrary: random }, { weight: 2, arbitrary: changed });
}

/**
 * A JSON object of the route's parameters and others, with values of any JSON type; or the
 * example's, changed as form text is.
 */
function jsonObjectText(names: string[], example?: Record<string, string>): fc.Arbitrary<string> {
  const known = names.length
    ? fc.constantFrom(...names).chain((name) => fc.tuple(fc.constant(name), jsonText(valueFor(name))))
    : undefined;
  const other = fc.tuple(oddText, jsonText(oddText));
  const entry = known ? fc.oneof({ weight: 5, arbitrary: known }, { weight: 1, arbitrary: other }) : other;
  const base = Object.entries(example ?? {}).map(([k, v]): [string, string] => [k, JSON.stringify(v)]);
  const entries = fc.oneof(
    { weight: example ? 1 : 3, arbitrary: fc.array(entry, { maxLength: 6 }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof({ weight: 3, arbitrary: fc.constant(base) }, fc.subarray(base)),
          fc.array(entry, { maxLength: 2 }),
        )
        .map(([kept, added]) => [...kept, ...added]),
    },
  );
  // Keys may repeat: the last one counts, as JSON.parse reads it.
  return entries.map((list) => `{${list.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
}

/** A request body: form text, a JSON object, or anything else a client might send. */
function bodyFor(
  names: string[],
  example?: Record<string, string>,
): fc.Arbitrary<{ type?: string; payload?: string | Buffer }> {
  const formTypes = fc.constantFrom(
    'application/x-www-form-urlencoded',
    'application/x-www-form-urlencoded; charset=UTF-8',
    'Application/X-WWW-Form-Urlencoded; charset=latin1',
  );
  const jsonTypes = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=utf-16',
    'application/vnd.api+json',
  );
  const anyType = fc.constantFrom(
    undefined,
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=xyz',
    'application/octet-stream',
    'image/png',
    ';;;',
    'application/json',
    'application/x-www-form-urlencoded',
  );
  return fc.oneof(
    { weight: 24, arbitrary: fc.record({ type: formTypes, payload: formText(names, example) }) },
    { weight: 24, arbitrary: fc.record({ type: jsonTypes, payload: jsonObjectText(names, example) }) },
    { weight: 4, arbitrary: fc.record({ type: jsonTypes, payload: jsonText(oddText) }) },
    {
      weight: 4,
      arbitrary: fc.record({
        type: jsonTypes,
        payload: fc.constantFrom(
          '{',
          '{"a":}',
          "{'a':1}",
          '{"a":1,}',
          'undefined',
          '\u0000',
          '{"a":1}garbage',
          '\ufeff{}',
        ),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({ type: anyType, payload: fc.oneof(formText(names), jsonObjectText(names), oddText) }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        type: fc.oneof(formTypes, jsonTypes, anyType),
        payload: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      }),
    },
    { weight: 4, arbitrary: fc.record({ type: fc.oneof(formTypes, jsonTypes, anyType), payload: fc.constant('') }) },
    { weight: 4, arbitrary: fc.record({ type: anyType }) },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.oneof(formTypes, jsonTypes),
        payload: fc.constant(`name=${'x'.repeat(1024 * 1024)}`),
      }),
    },
  );
}

/** Path parameters: mostly ones that name something, else malformed, huge, negative or not text at all. */
function pathValue(name: string, url: string): fc.Arbitrary<string> {
  // The rest of a path (files served under it): names that exist, and ways out of the folder.
  if (name === '*') {
    return fc.oneof(
      fc.constantFrom(
        'swagger-ui.css',
        'index.html',
        'swagger-ui-bundle.js',
        '../../package.json',
        '%2e%2e/%2e%2e/package.json',
        '..%2f..%2f..%2fpackage.json',
        '....//....//etc/passwd',
        '%00',
        '',
      ),
      oddText.map(encodeLoosely),
    );
  }
  const bad = fc.constantFrom(
    '0',
    '-1',
    '1.5',
    '1e3',
    'abc',
    '%F0%9F%98%80',
    '%00',
    '%FF',
    '%20',
    '%2E%2E',
    '1%2F2',
    '%D9%A3',
    '2147483648',
    '99999999999999999999999999',
    'x'.repeat(300),
  );
  const good =
    name === 'product_id'
      ? fc.oneof({ weight: 9, arbitrary: fc.constant(String(productId)) }, fc.constant(String(otherProductId)))
      : name === 'item_number'
        ? fc.constantFrom(...['1', ...numbers.map(String)])
        : name === 'deploy_id'
          ? fc.constant(String(deployId))
          : name === 'webhook_id'
            ? fc.constant(null).map(() => String(webhookId))
            : name === 'attachment_id'
              ? fc.constant(null).map(() => String(attachmentId))
              : name === 'comment_id' || name === 'favorite_id' || name === 'block_id'
                ? fc.constant(null).map(() => String(conversation[name.slice(0, -3) as keyof typeof conversation]))
                : fc.constant(
                    url.startsWith('/invitations')
                      ? tokens.invitation
                      : url.startsWith('/unsubscribe')
                        ? tokens.unsubscribe
                        : tokens.signIn,
                  );
  return fc.oneof(
    { weight: 16, arbitrary: good },
    { weight: 1, arbitrary: bad },
    { weight: 1, arbitrary: oddText.map(encodeLoosely) },
  );
}

function requestFor(route: string, spec: RouteSpec): fc.Arbitrary<FuzzRequest> {
  const [method, template] = route.split(' ');
  const names = [...spec.params, ...(spec.query ?? [])];
  const inPath: string[] = template.match(/:\w+|\*/g) ?? [];
  const path = fc.tuple(...inPath.map((p) => pathValue(p.replace(/^:/, ''), template))).map((values) => ({
    path: values.reduce((url: string, value) => url.replace(/:\w+|\*/, value), template),
    product: values[inPath.indexOf(':product_id')],
  }));
  const callers: fc.Arbitrary<FuzzRequest['as']> =
    spec.access === 'api'
      ? fc.oneof(
          { weight: 14, arbitrary: fc.constant<ApiCaller>('owner') },
          { weight: 2, arbitrary: fc.constant<ApiCaller>('member') },
          fc.constantFrom<ApiCaller>('outsider', 'nobody', 'wrong key', 'garbage'),
        )
      : spec.access === 'page'
        ? fc.oneof(
            { weight: 14, arbitrary: fc.constant<PageCaller>('web') },
            fc.constantFrom<PageCaller>('web outsider', 'nobody', 'forged cookie', 'garbage cookie'),
          )
        : fc.constant<PageCaller>('nobody');
  const methods =
    method === 'GET'
      ? fc.constantFrom('GET', 'GET', 'GET', 'GET', 'HEAD')
      : fc.oneof(
          { weight: 15, arbitrary: fc.constant(method) },
          { weight: 1, arbitrary: fc.constantFrom('PUT', 'PATCH', 'OPTIONS') },
        );
  const rarely = (values: string[]) =>
    fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...values) });
  const headers = fc.record({
    accept: fc.constantFrom(
      '',
      'application/json',
      'text/html',
      'text/html,application/xhtml+xml,*/*;q=0.8',
      '*/*',
      'image/png',
      'application/json;q=0, text/html',
    ),
    origin: rarely(['http://shiplog.test', 'http://evil.example', 'null']),
    'sec-fetch-site': rarely(['same-origin', 'cross-site', 'none']),
    'idempotency-key': spec.headers?.includes('idempotency-key')
      ? fc.oneof(fc.constantFrom('key-1', 'key-2', '', 'k'.repeat(256)), oddText)
      : fc.constant(''),
    'if-match': spec.headers?.includes('if-match')
      ? fc.oneof(fc.constantFrom('*', '"1-1"', '"1-2", "2-1"', 'W/"1-1"', '', ',', '1-1'), oddText)
      : fc.constant(''),
    authorization: spec.headers?.includes('authorization')
      ? fc.constantFrom(
          `Bearer ${METRICS_TOKEN}`,
          `Bearer ${METRICS_TOKEN}`,
          'Bearer wrong',
          `Basic ${METRICS_TOKEN}`,
          '',
        )
      : fc.constant(''),
  });
  const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight: number) =>
    fc.oneof({ weight: 10 - weight, arbitrary: fc.constant(undefined) }, { weight, arbitrary });
  // A GET with a body now and then; a POST with (some of) its parameters in the query string.
  const body = method === 'GET' ? sometimes(bodyFor(names), 1) : bodyFor(names, spec.example);
  const query = method === 'GET' ? formText(names, spec.example) : sometimes(formText(names), 3);
  return fc
    .record({ method: methods, path, query, as: callers, headers, body })
    .map(({ method, path, query, as, headers, body }) => {
      const all: Record<string, string> = Object.fromEntries(
        Object.entries(headers).filter(
          ([name, value]) =>
            value !== '' &&
            !((name === 'idempotency-key' || name === 'if-match') && /[^\t\x20-\x7e\x80-\xff]/.test(value)),
        ),
      );
      if (body?.type !== undefined) all['content-type'] = body.type;
      return {
        method,
        url: query === undefined ? path.path : `${path.path}?${query}`,
        product: path.product,
        as,
        headers: all,
        payload: body?.payload,
      };
    });
}

/** The headers that make the request come from its caller, and its form token put in. */
function sent(request: FuzzRequest): {
  headers: Record<string, string>;
  url: string;
  payload?: string | Buffer;
  session?: string;
} {
  const headers = { ...request.headers };
  const bySession = { web: web.email, 'web outsider': webOutsider.email } as Record<string, string | undefined>;
  const sessionOf = bySession[request.as];
  const session = sessionOf ? sessions.get(sessionOf)! : undefined;
  const csrf = session?.csrf ?? 'no-session';
  switch (request.as) {
    case 'owner':
    case 'member':
    case 'outsider':
      headers.authorization = { owner, member, outsider }[request.as].auth;
      break;
    case 'wrong key':
      headers.authorization = `Basic ${Buffer.from(`${owner.email}:${'0'.repeat(32)}`).toString('base64')}`;
      break;
    case 'garbage':
      headers.authorization = 'Bearer ../../\u00ff';
      break;
    case 'forged cookie':
      headers.cookie = `${sessions.get(web.email)!.cookie.replace(/\.[^.]*$/, '')}.AAAA`;
      break;
    case 'garbage cookie':
      headers.cookie = 'shiplog_session=%FF%FE; shiplog_session=; =;;';
      break;
    default:
      if (session) headers.cookie = session.cookie;
  }
  const payload = typeof request.payload === 'string' ? request.payload.replaceAll(CSRF, csrf) : request.payload;
  return { headers, url: request.url.replaceAll(CSRF, csrf), payload, session: sessionOf };
}

const STACK_TRACE = /\bat .+:\d+:\d+|node_modules|\.ts:\d+/;

/**
 * An error page: HTML, no stack trace, and the message: a page of /app/ says it in an error
 * paragraph or next to a field, a page of a mailed link (an invitation, an unsubscribe link) in
 * its heading.
 */
function assertErrorPage(res: LightMyRequestResponse, label: string, ofPages: boolean): void {
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', label);
  assert.doesNotMatch(res.body, STACK_TRACE, `${label}: stack trace in the page`);
  const message = ofPages
    ? /<p class="error">[^<]+|class="field-error"[^>]*>[^<]+|<p>There is no page here/
    : /<h1[^>]*>[^<]+<\/h1>/;
  assert.match(res.body, message, `${label}: no message on the page`);
  assert.doesNotMatch(res.body, /Something went wrong/, label);
}

/** What every answer must be: no 5xx; a 4xx in the error shape of its kind of route. */
function assertAnswer(request: FuzzRequest, url: string, res: LightMyRequestResponse, label: string): void {
  assert.ok(res.statusCode < 500, `${label}: a server error`);
  if (request.method === 'HEAD') return;
  const page = url.startsWith('/app');
  const linkPage = url.startsWith('/invitations/') || url.startsWith('/unsubscribe/');
  if (res.statusCode >= 400) {
    const html = String(res.headers['content-type']).startsWith('text/html');
    const wantsJson = /^application\/json\b/.test(request.headers.accept ?? '');
    if (page && !wantsJson) assert.ok(html, `${label}: a page's error is a page`);
    if (!page && !linkPage) assert.ok(!html, `${label}: an API error is JSON`);
    if (html) assertErrorPage(res, label, page);
    else assertError(res, res.statusCode, { label });
  } else if (res.statusCode < 300 && url.startsWith('/api/')) {
    assert.doesNotThrow(() => JSON.parse(res.body), label);
  }
  // No answer is a file from outside what is served.
  assert.doesNotMatch(
    res.body,
    /root:x:0:0|"name": "shiplog"|"name": "fast-check"/,
    `${label}: a file served from outside its folder`,
  );
}

/** Answers by status, per route: what the run reached, shown with each route's result. */
const statuses = new Map<string, Map<number, number>>();

/**
 * The checks that come before any parameter is read, in the order docs/INTERFACE.md §2 gives:
 * credentials (403), the product (404: checked here for ids with no digit at all), membership (403).
 * Pages: another site's form (403), then the session (a redirect to sign in), then the same.
 */
function assertCheckOrder(
  route: string,
  spec: RouteSpec,
  request: FuzzRequest,
  res: LightMyRequestResponse,
  label: string,
): void {
  // Routing comes first: a URL that cannot be read, another method, or a path the router cannot
  // place (a line break in a parameter, `%2E%2E`) is answered before any of these checks.
  const unrouted =
    /The request URL could not be read\.|No such endpoint|There is no page here/.test(res.body) ||
    request.method !== route.split(' ')[0];
  if (unrouted || spec.access === 'open') return;
  const product = request.product === undefined ? undefined : decodeURIComponent(request.product);
  // A dot segment (`%2E%2E`) is resolved away: the request is for another path, maybe none.
  if (product === '.' || product === '..') return;
  const expect = (status: number, message: RegExp | undefined, why: string) => {
    assert.equal(res.statusCode, status, `${label}\n  expected ${status}: ${why}`);
    if (message && request.method !== 'HEAD') assert.match(res.body, message, label);
  };
  if (spec.access === 'api') {
    if (!['owner', 'member', 'outsider'].includes(request.as)) {
      expect(403, /Invalid or unknown user/, 'bad credentials come first');
      return;
    }
    if (product === undefined) return;
    // An id the router cannot place (a line break in it) names no endpoint: a 404 all the same.
    if (!/\d/.test(product)) {
      expect(404, /No product with that id|No such endpoint/, 'a product id that is no number');
      return;
    }
    const member = request.as === 'outsider' ? product === String(otherProductId) : product === String(productId);
    if (product === String(productId) || product === String(otherProductId)) {
      if (!member) expect(403, /not a member/, 'the caller is not a member');
      else if (res.statusCode === 403)
        assert.doesNotMatch(res.body, /not a member|Invalid or unknown user/, `${label}\n  a member refused as none`);
    }
    return;
  }
  const foreign =
    (request.headers.origin !== undefined && request.headers.origin !== 'http://shiplog.test') ||
    request.headers['sec-fetch-site'] === 'cross-site';
  if (request.method !== 'GET' && request.method !== 'HEAD' && foreign) {
    expect(403, /another site/, 'a form from another site is refused first');
    return;
  }
  if (product === undefined) return;
  if (!['web', 'web outsider'].includes(request.as)) {
    expect(303, undefined, 'no session: sign in first');
    assert.match(String(res.headers.location), /^\/app\/sign-in\b/, label);
    return;
  }
  if (!/\d/.test(product)) {
    expect(404, /No product with that id|There is no page here/, 'a product id that is no number');
    return;
  }
  if (product === String(productId) && request.as === 'web outsider') {
    expect(403, /not a member/, 'the person is not a member');
    return;
  }
  if (product === String(otherProductId) && request.as === 'web')
    expect(403, /not a member/, 'the person is not a member');
}

/** The state before the next case, when the last case left it known (a failing case leaves it unknown). */
let known: Snapshot | undefined;

async function runCase(route: string, request: FuzzRequest): Promise<void> {
  const before = known ?? (await snapshot(t.db));
  known = undefined;
  const { headers, url, payload, session } = sent(request);
  const res = await t.app.inject({ method: request.method as 'GET', url, headers, payload });
  const shown =
    typeof payload === 'string'
      ? JSON.stringify(payload.slice(0, 300))
      : payload
        ? `<${payload.length} bytes>`
        : '(none)';
  const { authorization: _a, cookie: _c, ...shownHeaders } = headers;
  const label =
    `${request.method} ${url.slice(0, 300)} as ${request.as} ${JSON.stringify(shownHeaders)} body ${shown}\n` +
    `  -> ${res.statusCode} ${res.body.slice(0, 300)}`;
  const counts = statuses.get(route) ?? statuses.set(route, new Map()).get(route)!;
  counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
  if (process.env.FUZZ_DEBUG && route.includes(process.env.FUZZ_DEBUG)) console.error(label);
  assertAnswer(request, url, res, label);
  assertCheckOrder(route, ROUTES[route], request, res, label);
  const after = await snapshot(t.db);
  if (res.statusCode >= 400 || request.method === 'GET' || request.method === 'HEAD') {
    const changes = changesBetween(before, after);
    // A column that every request moves on purpose (a last-seen time) belongs in VOLATILE of test/fuzz.ts.
    assert.equal(changes, undefined, `${label}\n  changed the database:\n${changes}`);
  }
  // The webhook deleted: the next cases get another.
  if (/webhook/.test(route) && (request.method === 'DELETE' || route.endsWith('/delete')) && res.statusCode < 400) {
    await addWebhook();
    return;
  }
  if (/attachment/.test(route) && request.method === 'DELETE' && res.statusCode < 400) {
    await addAttachment();
    return;
  }
  const kind = /\/(comment|favorite|block)(s|ing)\/:/.exec(route)?.[1] as keyof typeof conversation | undefined;
  if (kind && request.method === 'DELETE' && res.statusCode < 400) {
    await addConversation(kind);
    return;
  }
  // Signed out (a new API key signs out everywhere too): the next requests of that person come with a new session.
  if (
    ['POST /app/sign-out', 'POST /app/settings/sign-out-everywhere', 'POST /app/settings/api-key'].includes(route) &&
    res.statusCode === 200 &&
    session
  ) {
    sessions.set(session, await pageSession(t, session === web.email ? web : webOutsider));
    return;
  }
  known = after;
}

describe('bad input never hurts', () => {
  test('every route of the app is fuzzed, with the parameters its schema declares', () => {
    const problems: string[] = [];
    for (const [route, declared] of registered) {
      const spec = ROUTES[route];
      if (!spec) {
        problems.push(
          `${route} is not fuzzed: add it to ROUTES in test/fuzz-input.test.ts with who may call it ` +
            `and the parameters it reads (its schema declares: ${declared.join(', ') || 'none'})`,
        );
      } else if ([...spec.params].sort().join() !== declared.join()) {
        problems.push(
          `${route}: ROUTES lists parameters ${[...spec.params].sort().join(', ') || 'none'}, ` +
            `its schema declares ${declared.join(', ') || 'none'}`,
        );
      }
    }
    for (const route of Object.keys(ROUTES))
      if (!registered.has(route))
        problems.push(`${route} is in ROUTES but the app has no such route: remove or rename it`);
    assert.ok(registered.size > 30, 'the routes were not collected');
    assert.deepEqual(problems, [], `\n${problems.join('\n')}`);
  });

  for (const [route, spec] of Object.entries(ROUTES)) {
    test(route, async (context) => {
      await fc.assert(
        fc.asyncProperty(requestFor(route, spec), (request) => runCase(route, request)),
        fuzzParameters(RUNS_PER_ROUTE),
      );
      const counts = [...(statuses.get(route) ?? [])].sort(([a], [b]) => a - b);
      context.diagnostic(`answers: ${counts.map(([status, n]) => `${n}x ${status}`).join(', ')}`);
    });
  }
});
