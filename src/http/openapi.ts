import fs from 'node:fs';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifySchema } from 'fastify';
import { ErrorSchema, meaningOf, SECURITY_SCHEMES } from './documentation.js';
import { Param } from './params.js';

/** Where the description is served, and the reference page that reads it. */
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';

/**
 * The service's version, from the nearest package.json above this module: two folders up from its
 * source and its build, one from a bundle one folder deep (the tests').
 */
function packageVersion(): string {
  for (const up of ['../../package.json', '../package.json']) {
    const file = new URL(up, import.meta.url);
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  }
  throw new Error('package.json not found above the service');
}
const version = packageVersion();

const DESCRIPTION = [
  'Shiplog speaks the HTTP/JSON interface of the Sprint.ly item tracker; docs/INTERFACE.md is the full contract.',
  '',
  '- **Parameters** of a GET come from the query string; a POST reads the body (form-encoded or JSON) ' +
    'and the query string, the body winning. Unknown parameters are ignored, so a whole item can be ' +
    'posted back.',
  '- **Lists** are comma-separated (`status=backlog,in-progress`), a repeated form key, or a JSON ' +
    'array. **Booleans** are `true`/`false`, `1`/`0`, `yes`/`no`, `y`/`n`. **Integers** are decimal ' +
    'digits.',
  '- **Credentials**: HTTP Basic with the email and the API key, or `Authorization: Bearer <API key>`. ' +
    'Bad or missing credentials are a 403, as Sprint.ly clients expect (only `/metrics`, with a token of ' +
    'its own, answers 401).',
  '- **Errors** all have one shape (the Error schema). Before a route is reached, a request may also ' +
    'get 408 (too slow), 413, 417 or 431 in that shape, and an unknown path a 404.',
  '- **Rate limits**, where the operator sets them: requests count per user, or per client address ' +
    'until credentials have proven who the user is. Every counted answer carries `RateLimit-Limit`, ' +
    '`RateLimit-Remaining` and `RateLimit-Reset`; over the limit the answer is 429 with `Retry-After`. ' +
    '`/health` is never limited.',
  '- Success is always 200, creations included. Timestamps are ISO 8601 in UTC to the second ' +
    '(`2026-11-22T10:04:05+00:00`).',
].join('\n');

const TAGS = [
  { name: 'items', description: 'Numbered work in a product: stories, tasks, defects and tests.' },
  { name: 'deploys', description: 'Items that went to an environment; each deploy mails the followers of its items.' },
  { name: 'products', description: 'The products the caller belongs to.' },
  { name: 'people', description: 'The caller, the members of a product, and invitations.' },
  {
    name: 'webhooks',
    description: "Addresses a product's changes are posted to, and their deliveries; for the product's admins.",
  },
  { name: 'notifications', description: 'Which deploy environments email the caller, per product.' },
  { name: 'attachments', description: 'Files attached to items, and the files themselves.' },
  {
    name: 'links',
    description:
      'Addresses sent in mail and shown in items; the token or the address is the credential, ' +
      'and pages answer browsers in HTML.',
  },
  { name: 'service', description: 'For operators and tools.' },
];

// The reference page loads only its own files: no CDN, no validator badge, nothing from elsewhere.
const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; connect-src 'self'; font-src 'self' data:; " +
  "form-action 'self'; frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; " +
  "script-src 'self'; script-src-attr 'none'; style-src 'self' 'unsafe-inline'";

/**
 * The route schema as the document shows it: each part that declares a meaning (`documentAs`) in
 * its place, and the error answers among the responses.
 */
function documented({ errors, ...schema }: FastifySchema): FastifySchema {
  const shown: FastifySchema = { ...schema };
  const responses = Object.entries({ ...(schema.response as object | undefined), ...errors });
  if (responses.length) shown.response = Object.fromEntries(responses.sort(([a], [b]) => a.localeCompare(b)));
  for (const part of ['params', 'querystring', 'body', 'headers'] as const) {
    const meaning = meaningOf(schema[part]);
    if (meaning) shown[part] = meaning;
  }
  // Bodies are read as JSON or as a form; JSON first, as generated clients send it. A route that
  // reads a body of its own (a file) says which types it takes.
  if (schema.body) shown.consumes = schema.consumes ?? ['application/json', 'application/x-www-form-urlencoded'];
  return shown;
}

/**
 * The API's description, OpenAPI 3.1, generated from the route schemas of every route registered
 * after this (so it is registered before them): `GET /openapi.json`, and a reference page at
 * `/docs` whose files come from the installed package. Schemas in `schemas` (each with an `$id`)
 * are shared by the routes, which reference them, and become the document's named components.
 * Routes under `hidden` prefixes (the pages) are left out.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  options: { schemas: TSchema[]; hidden: string[] },
): Promise<void> {
  for (const schema of [ErrorSchema, ...options.schemas]) app.addSchema(schema);
  const hidden = (url: string) => options.hidden.some((prefix) => url === prefix || url.startsWith(`${prefix}/`));
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Shiplog', version, description: DESCRIPTION },
      tags: TAGS,
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // Components keep their own names (User, Item, Deploy ...) instead of def-0, def-1 ...
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url }) => ({ schema: hidden(url) || !schema ? { hide: true } : documented(schema), url }),
    // Param only validates; the document shows what each parameter means in its place.
    transformObject: (document) => {
      const { openapiObject } = document as Extract<typeof document, { openapiObject: unknown }>;
      delete openapiObject.components?.schemas?.[Param.$id!];
      return openapiObject;
    },
  });

  let text: string | undefined;
  app.get(
    OPENAPI_PATH,
    {
      schema: {
        summary: "This API's description",
        description: 'OpenAPI 3.1. The reference page at /docs shows it.',
        operationId: 'openapi',
        tags: ['service'],
        response: {
          200: Type.Object(
            { openapi: Type.String() },
            { additionalProperties: true, description: 'The OpenAPI document.' },
          ),
        },
      },
    },
    // Sent as text, made once: the serialiser would walk the whole document on every request.
    async (_request, reply) => {
      text ??= JSON.stringify(app.swagger());
      return reply.type('application/json; charset=utf-8').send(text);
    },
  );

  await app.register(docsPage);
}

/** The reference page, in its own scope, so that the hook that gives it a viewport sees only its answers. */
async function docsPage(docs: FastifyInstance): Promise<void> {
  docs.addHook('onSend', async (_request, reply, payload) => withViewport(reply, payload));
  await docs.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    // BaseLayout: the page without the top bar (the plugin's logo and a box to load other documents).
    uiConfig: { layout: 'BaseLayout', deepLinking: true, docExpansion: 'list', defaultModelsExpandDepth: 0 },
    theme: { title: 'Shiplog API', css: [{ filename: 'shiplog.css', content: DOCS_THEME }] },
  });
}

/** The reference page's HTML, which the package writes without a viewport: phones would show it zoomed out. */
function withViewport(reply: FastifyReply, payload: unknown): unknown {
  if (typeof payload !== 'string' || !String(reply.getHeader('content-type')).startsWith('text/html')) return payload;
  return payload.replace(
    '<meta charset="UTF-8">',
    '<meta charset="UTF-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
  );
}

/**
 * Colours of the reference page where Swagger UI's own fall short of 4.5:1 against their background
 * (grey text on white, white on light method colours), and a focus ring like the pages'.
 */
const DOCS_THEME = `
.swagger-ui .opblock .opblock-summary-method { color: #fff; text-shadow: none; }
.swagger-ui .opblock.opblock-get .opblock-summary-method { background: #0b5cad; }
.swagger-ui .opblock.opblock-post .opblock-summary-method { background: #1b6e3a; }
.swagger-ui .opblock.opblock-put .opblock-summary-method { background: #8a4b00; }
.swagger-ui .opblock.opblock-delete .opblock-summary-method { background: #b32d2e; }
.swagger-ui .opblock.opblock-patch .opblock-summary-method { background: #186b63; }
.swagger-ui .info a { color: #0b5cad; }
.swagger-ui .btn.authorize { color: #1b6e3a; border-color: #1b6e3a; }
.swagger-ui .btn.authorize svg { color: #1b6e3a; fill: #1b6e3a; }
.swagger-ui .info .title small { background: #50575e; }
.swagger-ui .info .title small.version-stamp { background: #2e6b0f; }
.swagger-ui :focus-visible { outline: 3px solid #0b5cad; outline-offset: 2px; }
`;
