import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { DOCS_PREFIX, OPENAPI_PATH } from '../src/http/openapi.js';
import { WEB_PREFIX } from '../src/web/index.js';
import {
  deliveredMail,
  invitationPath,
  makeApp,
  makeItem,
  makeProduct,
  makeUser,
  tempDir,
  type TestContext,
  type TestUser,
} from './helpers.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, Response>;
};
type Response = {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: object }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, object> };
};

/** `/api/products/:product_id.json` as the document writes it: `/api/products/{product_id}.json`. */
const templateOf = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

/**
 * Checks answers against the document: the operation, the status, the media type and the body's
 * schema must all be documented (named components resolved), and so must the headers a success
 * (and a 429 or 503) carries. Remembers which operations answered with success.
 */
class Conformance {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true });
  private readonly validators = new Map<object, ValidateFunction>();
  readonly succeeded = new Set<string>();

  constructor(private readonly doc: Document) {
    for (const [name, schema] of Object.entries(doc.components.schemas)) this.ajv.addSchema(this.strict(schema), name);
  }

  /**
   * A schema as the check reads it: references by component name, and objects closed, so that a
   * field an answer carries but the document does not name fails too.
   */
  private strict<T>(schema: T): T {
    return JSON.parse(JSON.stringify(schema), (key, value) => {
      if (key === '$ref' && typeof value === 'string') return value.replace('#/components/schemas/', '');
      if (
        value &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        value.type === 'object' &&
        value.properties &&
        !('additionalProperties' in value)
      ) {
        return { ...value, additionalProperties: false };
      }
      return value;
    });
  }

  private validatorFor(schema: object): ValidateFunction {
    let validate = this.validators.get(schema);
    if (!validate) {
      validate = this.ajv.compile(this.strict(schema));
      this.validators.set(schema, validate);
    }
    return validate;
  }

  operationFor(method: string, pathname: string): [string, Operation] {
    for (const [template, operations] of Object.entries(this.doc.paths)) {
      const pattern = new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`);
      if (pattern.test(pathname) && operations[method.toLowerCase()])
        return [template, operations[method.toLowerCase()]];
    }
    assert.fail(`${method} ${pathname} matches no operation of the document`);
  }

  check(method: string, url: string, res: LightMyRequestResponse): void {
    const [template, operation] = this.operationFor(method, url.split('?')[0]);
    const label = `${method} ${template} answered ${res.statusCode}`;
    const documented = operation.responses[String(res.statusCode)];
    assert.ok(
      documented,
      `${label}, which the document does not list (it lists ${Object.keys(operation.responses).join(', ')}): ` +
        res.body.slice(0, 200),
    );
    // A header documented with `x-present-when` is given only then (a next page's offset).
    const headers = Object.entries(documented.headers ?? {})
      .filter(([, header]) => (header as { schema?: Record<string, unknown> }).schema?.['x-present-when'] === undefined)
      .map(([name]) => name);
    // Other errors' headers depend on the request (WWW-Authenticate only without credentials).
    const expected =
      res.statusCode < 400 ? headers : headers.filter((h) => h === 'Retry-After' || h.startsWith('RateLimit-'));
    for (const header of expected)
      assert.ok(res.headers[header.toLowerCase()] !== undefined, `${label} without its documented header ${header}`);
    if (!documented.content) {
      assert.equal(res.body, '', `${label} with a body the document does not describe`);
    } else {
      const mediaType = String(res.headers['content-type']).split(';')[0];
      // A file is served as its own type: documented as the range `*/*`.
      const media = documented.content[mediaType] ?? documented.content['*/*'];
      assert.ok(media, `${label} as ${mediaType}, which the document does not list`);
      if (mediaType === 'application/json') {
        const validate = this.validatorFor(media.schema);
        assert.ok(
          validate(JSON.parse(res.body)),
          `${label}: the body does not match its schema: ${this.ajv.errorsText(validate.errors)}\n` +
            res.body.slice(0, 500),
        );
      } else if (mediaType === 'text/html') {
        assert.match(res.body, /^<!doctype html>/i, label);
      } else {
        assert.ok(res.body.length > 0, `${label}: an empty ${mediaType} body`);
      }
    }
    if (res.statusCode < 400) this.succeeded.add(`${method} ${template}`);
  }
}

/** /metrics exists only with a token: this app has one, so that it is documented and checked too. */
const METRICS_TOKEN = 'metrics-token-for-the-test';
/**
 * Limits high enough never to be met, so that the document has the limiter's 429s; and webhooks
 * may name this machine, where nothing listens and nothing is sent: no worker runs here.
 */
const APP_ENV = {
  METRICS_TOKEN,
  RATE_LIMIT_PER_KEY: '100000',
  RATE_LIMIT_PER_ADDRESS: '100000',
  WEBHOOKS_ALLOW_PRIVATE: '1',
};
const HOOK_TARGET = 'http://127.0.0.1:9/shiplog';
const LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'];

let t: TestContext;
let doc: Document;
/** Every route the app registered, as Fastify's onRoute saw it. */
const routes: Array<{ method: string; url: string }> = [];

before(async () => {
  const collect = (message: unknown) =>
    (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url });
    });
  diagnostics.subscribe('fastify.initialization', collect);
  try {
    t = await makeApp({ env: APP_ENV });
  } finally {
    diagnostics.unsubscribe('fastify.initialization', collect);
  }
  const res = await t.app.inject({ method: 'GET', url: OPENAPI_PATH });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  doc = res.json();
});
after(() => t.close());

describe('the API description', () => {
  test('documents every route of the app, except the pages and the reference page', () => {
    const kept = routes.filter(
      (r) =>
        r.method !== 'HEAD' &&
        !r.url.startsWith(`${WEB_PREFIX}/`) &&
        r.url !== WEB_PREFIX &&
        !r.url.startsWith(DOCS_PREFIX),
    );
    assert.ok(kept.length > 20, `only ${kept.length} routes seen`);
    // A route without a schema is listed all the same, with nothing but a "Default Response".
    const problems = kept.flatMap((r) => {
      const op = doc.paths[templateOf(r.url)]?.[r.method.toLowerCase()];
      const route = `${r.method} ${r.url}`;
      if (!op) return [`${route} is missing`];
      if (!op.summary || !op.tags?.length || !op.operationId) return [`${route} has no summary, tags or operationId`];
      if (Object.values(op.responses).some((res) => res.description === 'Default Response'))
        return [`${route} documents no answer`];
      return [];
    });
    assert.deepEqual(
      problems,
      [],
      `${OPENAPI_PATH} is incomplete (give each route a schema: summary, tags, operationId, response, errors): ` +
        problems.join('; '),
    );

    const registered = new Set(kept.map((r) => `${r.method.toLowerCase()} ${templateOf(r.url)}`));
    for (const [template, operations] of Object.entries(doc.paths)) {
      assert.ok(
        !template.startsWith(WEB_PREFIX) && !template.startsWith(DOCS_PREFIX),
        `${template} is a page, not part of the API`,
      );
      for (const method of Object.keys(operations))
        assert.ok(registered.has(`${method} ${template}`), `${method} ${template} is documented but not a route`);
    }
  });

  test('is valid OpenAPI 3.1, and the validator notices a broken one', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as never);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 1));
    assert.equal(validator.version, '3.1');

    const broken = structuredClone(doc);
    delete (broken.paths['/api/user/whoami.json'].get.responses['200'] as Partial<Response>).description;
    assert.equal((await new Validator().validate(broken as never)).valid, false);
  });

  test('names its schemas, says who may call what, and describes each operation', () => {
    for (const name of [
      'Error',
      'User',
      'Product',
      'Member',
      'Item',
      'ParentItem',
      'Deployment',
      'Deploy',
      'InviteAnswer',
      'Webhook',
      'CreatedWebhook',
      'WebhookDelivery',
      'Health',
    ]) {
      assert.ok(doc.components.schemas[name], `components.schemas.${name}`);
    }
    const text = JSON.stringify(doc);
    for (const match of text.matchAll(/"\$ref":"([^"]+)"/g)) {
      assert.ok(
        match[1].startsWith('#/components/schemas/') && doc.components.schemas[match[1].split('/').pop()!],
        `dangling reference ${match[1]}`,
      );
    }
    assert.doesNotMatch(text, /def-\d+/, 'every shared schema keeps its name');
    const schemes = (
      doc as unknown as { components: { securitySchemes: Record<string, { type: string; scheme: string }> } }
    ).components.securitySchemes;
    assert.deepEqual(
      [schemes.basicAuth.scheme, schemes.bearerAuth.scheme, schemes.metricsToken.scheme],
      ['basic', 'bearer', 'bearer'],
    );

    const ids = new Set<string>();
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const label = `${method} ${template}`;
        assert.ok(op.summary && op.tags?.length && op.operationId, `${label}: summary, tags and operationId`);
        assert.ok(!ids.has(op.operationId!), `${label}: operationId ${op.operationId} used twice`);
        ids.add(op.operationId!);
        if (template.startsWith('/api/')) {
          assert.deepEqual(op.security, [{ basicAuth: [] }, { bearerAuth: [] }], `${label} needs credentials`);
          assert.ok(
            op.responses['403'] && op.responses['503'],
            `${label} documents the 403 of credentials and the 503 of the database`,
          );
        } else if (template === '/metrics') {
          assert.deepEqual(op.security, [{ metricsToken: [] }], `${label} needs the metrics token`);
        } else {
          assert.equal(op.security, undefined, `${label} needs no credentials`);
        }
        if (template.startsWith('/api/products/{product_id}'))
          assert.match(op.responses['404']?.description ?? '', /No product with that id/, label);
        if (template.startsWith('/api/products/{product_id}/webhooks')) {
          assert.match(
            op.responses['403'].description,
            /not a member of the product\. The caller is not an admin/,
            `${label}: admins only`,
          );
        }
        // The limiter counts every request but the probe's.
        if (template.startsWith('/health')) {
          assert.equal(op.responses['429'], undefined, `${label} is never limited`);
        } else {
          assert.match(
            op.responses['429']?.description ?? '',
            /More than 100000 from one user, or 100000 from one client address in 60 s/,
            `${label} documents the limit`,
          );
          assert.deepEqual(
            Object.keys(op.responses['429'].headers ?? {}).sort(),
            LIMIT_HEADERS.sort(),
            `${label}: the 429's headers`,
          );
        }
        if (label === 'post /api/products/{product_id}/people.json') {
          assert.match(
            op.responses['429'].description,
            /^More than .* in 60 s;.* The inviter sent 20 invitations/,
            'the limiter, then the route',
          );
        }
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400 || template.startsWith('/health')) continue;
          const schemas = Object.values(response.content ?? {}).map((m) => JSON.stringify(m.schema));
          assert.ok(
            schemas.includes('{"$ref":"#/components/schemas/Error"}'),
            `${label} ${status} is the shared Error`,
          );
        }
      }
    }
  });
});

describe('every documented endpoint answers as the document says', () => {
  test('successes and errors, one request after another', async () => {
    const conformance = new Conformance(doc);
    /** A request, checked against the document. */
    const call = async (options: InjectOptions & { url: string; method: string }): Promise<LightMyRequestResponse> => {
      const res = await t.app.inject(options);
      conformance.check(options.method, options.url, res);
      return res;
    };
    const as = (user: TestUser | undefined, extra: Record<string, string> = {}) => ({
      ...(user ? { authorization: user.auth } : {}),
      ...extra,
    });
    const get = (url: string, user?: TestUser, headers: Record<string, string> = {}) =>
      call({ method: 'GET', url, headers: as(user, headers) });
    const form = (
      method: 'POST' | 'DELETE',
      url: string,
      user: TestUser | undefined,
      params: Record<string, string> = {},
      headers: Record<string, string> = {},
    ) =>
      call({
        method,
        url,
        headers: as(user, { 'content-type': 'application/x-www-form-urlencoded', ...headers }),
        payload: new URLSearchParams(params).toString(),
      });
    const json = (url: string, user: TestUser, body: unknown) =>
      call({
        method: 'POST',
        url,
        headers: as(user, { 'content-type': 'application/json' }),
        payload: JSON.stringify(body),
      });

    const owner = await makeUser(t.db);
    const member = await makeUser(t.db);
    const stranger = await makeUser(t.db);
    const product = await makeProduct(t.db, owner, [member]);
    const p = `/api/products/${product.id}`;

    await get('/health');
    await get('/health/live');
    await get('/health/ready');
    t.app.lifecycle.ready();
    await get('/health/ready');
    await get('/');
    await get('/', undefined, { accept: 'text/html' });
    await get(OPENAPI_PATH);
    await get('/metrics', undefined, { authorization: `Bearer ${METRICS_TOKEN}` });
    await get('/metrics');

    await get('/api/user/whoami.json', owner);
    await get('/api/user/whoami.json');
    await get('/api/products.json', owner);
    await get('/api/items/search.json?q=task&facets=true', owner);
    await get('/api/items/search.json?q=tsak', owner);
    await get('/api/items/search.json?q=colour:red', owner);
    await get(`/api/items/search.json?products=${999_999}`, owner);
    await form('POST', '/api/products.json', owner, { name: 'Another' });
    await form('POST', '/api/products.json', owner, { name: '' });
    await get(`${p}.json`, owner);
    await get(`${p}.json`, stranger);
    await get('/api/products/999999.json', owner);
    await get(`${p}/people.json`, member);

    // Webhooks before the changes below, so that those queue deliveries for the log to show.
    const hooks = `${p}/webhooks`;
    const hook = (
      await form('POST', `${hooks}.json`, owner, {
        url: HOOK_TARGET,
        events: 'item.created,item.status_changed,deploy.created',
      })
    ).json();
    await json(`${hooks}.json`, owner, {
      url: HOOK_TARGET,
      events: ['deploy.rolled_back'],
      format: 'slack',
      secret: 'the-receivers-own-secret-0123',
    });
    await form('POST', `${hooks}.json`, owner, { url: 'ftp://example.com/', events: 'item.moved', secret: 'short' });
    await form('POST', `${hooks}.json`, member, { url: HOOK_TARGET, events: 'item.created' });
    await get(`${hooks}.json`, owner);
    await get(`${hooks}.json`, member);
    await get(`${hooks}.json`, stranger);

    const story = (
      await json(`${p}/items.json`, owner, {
        type: 'story',
        who: 'user',
        what: 'a board',
        why: 'I see the work',
        tags: ['ui', 'board'],
      })
    ).json();
    const task = (
      await form('POST', `${p}/items.json`, owner, {
        type: 'task',
        title: 'Draw it',
        parent: String(story.number),
        assigned_to: String(member.user.id),
      })
    ).json();
    const other = (
      await form('POST', `${p}/items.json`, member, {
        type: 'defect',
        title: 'Broken',
        status: 'completed',
        close_reason: 'invalid',
      })
    ).json();
    const last = (await form('POST', `${p}/items.json`, member, { type: 'test', title: 'Check it' })).json();
    await form('POST', `${p}/items.json`, owner, { type: 'epic' });
    await form('POST', `${p}/items.json`, owner, { type: 'task', title: 'x', assigned_to: String(stranger.user.id) });
    await call({
      method: 'POST',
      url: `${p}/items.json`,
      headers: as(owner, { 'content-type': 'application/json' }),
      payload: '{"type": ',
    });
    await call({
      method: 'POST',
      url: `${p}/items.json`,
      headers: as(owner, { 'content-type': 'application/json' }),
      payload: JSON.stringify({ title: 'x'.repeat(1_100_000) }),
    });

    await get(`${p}/items.json?children=true&status=backlog,completed`, member);
    await get(`${p}/items.json?limit=0`, member);
    await get(`${p}/items.json?assigned_to=999999`, member);
    await get(`${p}/items.json`, stranger);
    await get(`${p}/items/${task.number}.json`, member);
    await get(`${p}/items/999.json`, member);
    await form('POST', `${p}/items/${task.number}.json`, owner, { status: 'in-progress', tags: 'a,b' });
    await form('POST', `${p}/items/${task.number}.json`, owner, { title: '' });
    await get(`${p}/items/${story.number}/children.json`, member);
    await get(`${p}/items/${task.number}/children.json`, member);
    await form('POST', `${p}/items/${last.number}/resort.json`, owner, { before: String(story.number) });
    await form('POST', `${p}/items/${last.number}/resort.json`, owner);
    await form('POST', `${p}/items/${other.number}/follow.json`, owner);
    await form('DELETE', `${p}/items/${other.number}/follow.json`, owner);

    const numbers = [story.number, task.number, other.number].join(',');
    const deploy = { environment: 'production', numbers, version: '1.4.2', notes: 'First release' };
    await form('POST', `${p}/deploys.json`, owner, deploy, { 'idempotency-key': 'release-1.4.2' });
    await form('POST', `${p}/deploys.json`, owner, deploy, { 'idempotency-key': 'release-1.4.2' });
    await form(
      'POST',
      `${p}/deploys.json`,
      owner,
      { ...deploy, version: '1.4.3' },
      { 'idempotency-key': 'release-1.4.2' },
    );
    await form('POST', `${p}/deploys.json`, owner, { numbers });
    await form('POST', `${p}/deploys.json`, owner, { environment: 'production', numbers: 'x' });
    await form('POST', `${p}/deploys.json`, owner, {
      environment: 'production',
      numbers,
      version: '1.5.0',
      dry_run: 'true',
    });
    await form('POST', `${p}/deploys.json`, owner, {
      environment: 'production',
      numbers: `${last.number},999`,
      version: '1.5.0',
    });
    await form('POST', `${p}/deploys.json`, owner, { environment: 'production', version: '1.4.2', rollback: 'true' });
    await form('POST', `${p}/deploys.json`, owner, { environment: 'production', version: '0.1', rollback: 'true' });
    await form('POST', `${p}/deploys.json`, owner, { environment: 'production', numbers, dry_run: 'maybe' });
    await get(`${p}/items.json?deployed_to=production&not_deployed_to=staging`, member);
    await get(`${p}/deploys.json?order_by=newest`, member);
    await get(`${p}/deploys.json?order_by=sideways`, member);
    await get(`${p}/items/${task.number}/deployed_to.json`, member);
    await get(`${p}/items/${task.number}/deployed_to.json?limit=0`, member);
    await form('DELETE', `${p}/items/${other.number}.json`, member);
    await get(`${p}/items/${task.number}/activities.json?limit=2`, member);
    await get(`${p}/items/${task.number}/activities.json?offset=x`, member);
    await get(`${p}/items/999/activities.json`, member);
    await get(`${p}/activities.json`, member);
    await get(`${p}/activities.json`, stranger);

    await get(`${hooks}/${hook.id}.json`, owner);
    await get(`${hooks}/999999.json`, owner);
    await get(`${hooks}/x.json`, owner);
    await get(`${hooks}/${hook.id}.json`, member);
    const log = await get(`${hooks}/${hook.id}/deliveries.json?limit=3`, owner);
    assert.deepEqual([log.json().length, log.json()[0].status], [3, 'pending'], 'the changes above queued deliveries');
    await get(`${hooks}/${hook.id}/deliveries.json?limit=0`, owner);
    await get(`${hooks}/999999/deliveries.json`, owner);
    await form('POST', `${hooks}/${hook.id}.json`, owner, { enabled: 'false', events: 'item.updated,deploy.created' });
    // Disabling gave up the waiting deliveries: the log now shows failures, with their reason.
    assert.equal((await get(`${hooks}/${hook.id}/deliveries.json`, owner)).json()[0].status, 'failed');
    await form('POST', `${hooks}/${hook.id}.json`, owner, { enabled: 'perhaps', url: 'not a url' });
    await form('POST', `${hooks}/999999.json`, owner, { enabled: 'true' });
    let full: LightMyRequestResponse | undefined;
    for (let i = 0; i < 20 && full?.statusCode !== 422; i++)
      full = await form('POST', `${hooks}.json`, owner, { url: `${HOOK_TARGET}/${i}`, events: 'item.created' });
    assert.equal(full?.statusCode, 422, 'a product has at most 20 webhooks');
    await form('DELETE', `${hooks}/${hook.id}.json`, owner);
    await form('DELETE', `${hooks}/${hook.id}.json`, owner);

    const talk = `${p}/items/${task.number}`;
    const comment = (await form('POST', `${talk}/comments.json`, member, { body: 'A **comment**' })).json();
    await json(`${talk}/comments.json`, owner, { body: 'Another' });
    await form('POST', `${talk}/comments.json`, member, {});
    await get(`${talk}/comments.json?limit=1`, member);
    await get(`${talk}/comments/${comment.id}.json`, member);
    await form('DELETE', `${talk}/comments/${comment.id}.json`, owner);
    await form('DELETE', `${talk}/comments/${comment.id}.json`, member);
    await get(`${talk}/comments/${comment.id}.json`, member);
    const favorite = (await form('POST', `${talk}/favorites.json`, member)).json();
    await get(`${talk}/favorites.json`, member);
    await get(`${talk}/favorites/${favorite.id}.json`, owner);
    await form('DELETE', `${talk}/favorites/${favorite.id}.json`, owner);
    await form('DELETE', `${talk}/favorites/${favorite.id}.json`, member);
    const blocked = await makeItem(t.app, owner, product.id, { title: 'Waits' });
    const block = (await form('POST', `${talk}/blocking.json`, member, { blocked: String(blocked.number) })).json();
    await form('POST', `${talk}/blocking.json`, member, { blocked: String(task.number) });
    await form('POST', `${talk}/blocking.json`, member, { blocked: '999999' });
    await get(`${talk}/blocking.json`, owner);
    await get(`${p}/items/${blocked.number}/blocked_by.json`, owner);
    await get(`${talk}/blocking/${block.id}.json`, owner);
    await form('DELETE', `${talk}/blocking/${block.id}.json`, owner);
    await form('DELETE', `${talk}/blocking/${block.id}.json`, member);
    await form('POST', `${talk}/annotations.json`, owner, { label: 'CI', action: 'passed', body: 'green' });
    await form('POST', `${talk}/annotations.json`, owner, { label: 'CI' });
    await get(`${talk}/annotations.json`, member);
    await form('POST', `${p}/notifications.json`, member, { comments: 'false' });
    await form('POST', `${p}/notifications.json`, member, { comments: 'sometimes' });

    await get(`${p}/notifications.json`, member);
    await json(`${p}/notifications.json`, member, { environments: ['production', 'staging'] });
    await form('POST', `${p}/notifications.json`, member, { environments: 'all' });
    await form('POST', `${p}/notifications.json`, member, { environments: '' });

    const files = `${p}/items/${task.number}/attachments`;
    const attached = await call({
      method: 'POST',
      url: `${files}.json?name=build.log`,
      headers: as(member, { 'content-type': 'text/plain' }),
      payload: 'build ok\n',
    });
    const parts = new FormData();
    parts.append('file', new Blob(['<svg/>'], { type: 'image/svg+xml' }), 'logo.svg');
    const multipart = new Request('http://127.0.0.1/', { method: 'POST', body: parts });
    await call({
      method: 'POST',
      url: `${files}.json`,
      headers: as(owner, { 'content-type': multipart.headers.get('content-type')! }),
      payload: Buffer.from(await multipart.arrayBuffer()),
    });
    await form('POST', `${files}.json`, member, { name: 'no file' });
    await form('POST', `${p}/items/999/attachments.json`, member, { name: 'no item' });
    await get(`${files}.json`, member);
    await get(`${files}.json?limit=x`, member);
    await get(`${files}/${attached.json().id}.json`, owner);
    await get(`${files}/999999.json`, owner);
    const file = await get(`${files}/${attached.json().id}/file`, owner);
    await get(`${files}/${attached.json().id}/file`, owner, { 'if-none-match': String(file.headers.etag) });
    await get(`${files}/999999/file`, owner);
    await form('DELETE', `${files}/${attached.json().id}.json`, stranger);
    await form('DELETE', `${files}/${attached.json().id}.json`, member);
    await form('DELETE', `${files}/${attached.json().id}.json`, member);

    await get(`/i/${product.id}/${task.number}/`);
    await get(`/i/${product.id}/${task.number}/`, undefined, { accept: 'text/html' });
    await get(`/i/x/${task.number}/`);

    // The deploy mailed the assignee of the task; its List-Unsubscribe link is the one to follow.
    const mail = (await deliveredMail(t)).filter((m) => (m.headers.get('to') ?? '').includes(member.email));
    const unsubscribe = /<https?:\/\/[^/>]+(\/unsubscribe\/[^>]+)>/.exec(
      mail.at(-1)?.headers.get('list-unsubscribe') ?? '',
    )?.[1];
    assert.ok(unsubscribe, 'a deploy email with a List-Unsubscribe link');
    await get(unsubscribe);
    await get(unsubscribe, undefined, { accept: 'text/html' });
    await form('POST', unsubscribe, undefined, { 'List-Unsubscribe': 'One-Click' });
    await form('POST', unsubscribe, undefined);
    await get('/unsubscribe/not-a.link');
    await get('/unsubscribe/not-a.link', undefined, { accept: 'text/html' });

    await form('POST', `${p}/people.json`, owner, {
      email: 'newcomer@example.com',
      first_name: 'New',
      last_name: 'Comer',
    });
    await form('POST', `${p}/people.json`, member, { email: 'friend@example.com' });
    await form('POST', `${p}/people.json`, owner, { email: 'not an address' });
    const link = await invitationPath(t, 'newcomer@example.com');
    await get(link);
    await get(link, undefined, { accept: 'text/html' });
    await form('POST', link, undefined, {});
    await form('POST', link, undefined, {});
    await get('/invitations/not-a.link');
    await form('POST', `${p}/people.json`, owner, { email: 'waiting@example.com' });
    const [waiting] = (await get(`${p}/invitations.json`, owner)).json();
    await get(`${p}/invitations.json`, member);
    const pending = `${p}/invitations/${waiting.id}`;
    await form('POST', `${pending}/resend.json`, owner);
    await t.db
      .updateTable('invitations')
      .set({ sent_at: '2026-01-01T00:00:00+00:00' })
      .where('id', '=', waiting.id)
      .execute();
    await form('POST', `${pending}/resend.json`, owner);
    await form('DELETE', `${pending}.json`, owner);
    await form('DELETE', `${pending}.json`, owner);
    let limited: LightMyRequestResponse | undefined;
    for (let i = 0; i < 25 && limited?.statusCode !== 429; i++) {
      limited = await form('POST', `${p}/people.json`, owner, { email: `invitee${i}@example.com` });
    }
    assert.equal(limited?.statusCode, 429, 'an inviter is limited to 20 invitations an hour');

    const operations = Object.entries(doc.paths).flatMap(([template, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${template}`),
    );
    const untried = operations.filter((op) => !conformance.succeeded.has(op));
    assert.deepEqual(untried, [], `documented endpoints never answered with success here: ${untried.join(', ')}`);
  });

  test("the limiter's 429 is of the documented shape, on the API and elsewhere", async () => {
    const limited = await makeApp({ env: { ...APP_ENV, RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_PER_ADDRESS: '1' } });
    try {
      const owner = await makeUser(limited.db);
      const product = await makeProduct(limited.db, owner);
      // Its own document, fetched from an address of its own: this app's limits are the ones described.
      const described = await limited.app.inject({ method: 'GET', url: OPENAPI_PATH, remoteAddress: '10.70.0.1' });
      const conformance = new Conformance(described.json());
      const send = async (method: string, url: string, remoteAddress: string, authorization?: string) => {
        const res = await limited.app.inject({
          method,
          url,
          remoteAddress,
          headers: authorization ? { authorization } : {},
        });
        conformance.check(method, url, res);
        return res;
      };
      const webhooks = `/api/products/${product.id}/webhooks.json`;
      // A key's first request counts against its address; once proven, the key counts as its user.
      assert.equal((await send('GET', webhooks, '10.70.0.2', owner.auth)).statusCode, 200);
      assert.equal((await send('GET', webhooks, '10.70.0.3', owner.auth)).statusCode, 200);
      const over: Array<[string, string, string, string | undefined]> = [
        ['POST', webhooks, '10.70.0.3', owner.auth],
        ['GET', '/api/user/whoami.json', '10.70.0.4', owner.auth],
        ['GET', OPENAPI_PATH, '10.70.0.2', undefined],
      ];
      for (const [method, url, address, authorization] of over) {
        const res = await send(method, url, address, authorization);
        assert.equal(res.statusCode, 429, `${method} ${url}: ${res.body}`);
        assert.match(res.json().message, /too many requests/i);
        assert.equal(res.headers['ratelimit-remaining'], '0');
      }
      assert.equal((await send('GET', '/health', '10.70.0.2')).statusCode, 200, 'the probe is never limited');
    } finally {
      await limited.close();
    }
  });

  test('a stalled /health is a 503 of the documented shape', async () => {
    const stalled = await makeApp({ env: { MAIL_STALL_SECONDS: '1' } });
    try {
      const owner = await makeUser(stalled.db);
      const product = await makeProduct(stalled.db, owner);
      const invited = await stalled.app.inject({
        method: 'POST',
        url: `/api/products/${product.id}/people.json`,
        headers: { authorization: owner.auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'email=someone@example.com',
      });
      assert.equal(invited.statusCode, 200, invited.body);
      // The invitation has waited a day, and nothing was ever delivered.
      await stalled.db.updateTable('outbox').set({ next_attempt_at: '2020-01-01T00:00:00+00:00' }).execute();
      const res = await stalled.app.inject({ method: 'GET', url: '/health' });
      assert.equal(res.statusCode, 503, res.body);
      new Conformance(doc).check('GET', '/health', res);
      assert.equal(res.json().status, 'stalled');
    } finally {
      await stalled.close();
    }
  });
});

describe('a client generated from the description', () => {
  test('creates an item and lists items against the running server', async () => {
    const owner = await makeUser(t.db);
    const product = await makeProduct(t.db, owner, [], 'Generated client');
    const dir = tempDir('shiplog-client-');
    fs.writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(doc));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));

    // The command the README shows.
    await run(bin('openapi-typescript'), ['openapi.json', '-o', 'shiplog-api.d.ts'], { cwd: dir });
    fs.writeFileSync(path.join(dir, 'client.ts'), CLIENT);
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['client.ts'],
      }),
    );
    // Typed against the document: a wrong type, or a parameter the document lacks, fails here.
    await run(bin('tsc'), ['-p', 'tsconfig.json'], { cwd: dir }).catch((err) =>
      assert.fail(`the client does not type-check:\n${err.stdout}${err.stderr}`),
    );

    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const env = { ...process.env, SHIPLOG_URL: address, SHIPLOG_API_KEY: owner.apiKey, PRODUCT_ID: String(product.id) };
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'client.ts'], { cwd: dir, env });
    const result = JSON.parse(stdout);
    assert.equal(result.created.title, 'Made by a generated client');
    assert.deepEqual(result.created.tags, ['generated']);
    assert.deepEqual(result.listed, [result.created.number]);
    assert.equal(result.total, '1');
  });
});

/** The typed script the generated types are used by (openapi-fetch). */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './shiplog-api.js';

const client = createClient<paths>({
  baseUrl: process.env.SHIPLOG_URL,
  headers: { Authorization: \`Bearer \${process.env.SHIPLOG_API_KEY}\` },
});
const product_id = Number(process.env.PRODUCT_ID);

const created = await client.POST('/api/products/{product_id}/items.json', {
  params: { path: { product_id } },
  body: { type: 'task', title: 'Made by a generated client', tags: ['generated'] },
});
if (!created.data) throw new Error(\`create: \${created.response.status} \${JSON.stringify(created.error)}\`);
const number: number = created.data.number;

const listed = await client.GET('/api/products/{product_id}/items.json', {
  params: { path: { product_id }, query: { status: ['backlog'], tags: 'generated' } },
});
if (!listed.data) throw new Error(\`list: \${listed.response.status}\`);

// Never called: the types refuse what the document does not allow.
export function refused() {
  const params = { path: { product_id } };
  // @ts-expect-error an item type the document does not list
  void client.POST('/api/products/{product_id}/items.json', { params, body: { type: 'epic' } });
}

console.log(JSON.stringify({
  created: { number, title: created.data.title, tags: created.data.tags },
  listed: listed.data.map((item) => item.number),
  total: listed.response.headers.get('x-sprintly-item-count'),
}));
`;

describe('the reference page', () => {
  test('is served from the installed package and loads nothing from elsewhere', async () => {
    const page = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/` });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'self'/);
    assert.doesNotMatch(csp, /https?:|\*|validator\.swagger\.io/, 'no other origin may be loaded');

    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(assets.length >= 4, page.body);
    for (const asset of assets) {
      assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} comes from elsewhere`);
      const res = await t.app.inject({
        method: 'GET',
        url: new URL(asset, `http://shiplog.test${DOCS_PREFIX}/`).pathname,
      });
      assert.equal(res.statusCode, 200, asset);
    }
    const init = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/static/swagger-initializer.js` });
    assert.match(init.body, /validatorUrl: null/, 'no validator badge from validator.swagger.io');
    const spec = await t.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/json` });
    assert.deepEqual(spec.json().paths, doc.paths);
  });
});
