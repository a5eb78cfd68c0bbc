import { Type, type SchemaOptions, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * The error answers of a route (`errorAnswers`), for the document only: the one error handler
     * writes every error body, so no route compiles a serialiser for them.
     */
    errors?: Record<string, object>;
  }
}

/**
 * What the API's description (`GET /openapi.json`) is made of, besides the route schemas:
 * parameter meanings, the shared error answer, security, and the errors a scope's hooks add.
 *
 * Route schemas validate parameters loosely (each is a `Param`: text, a number, a list, ...), since
 * the interface reads values leniently and checks them by hand with its own messages. What a
 * parameter means (a comma-separated list of statuses, an item number) is declared beside the
 * schema with `documentAs` and shown in the document in its place; validation never sees it.
 */
const meanings = new WeakMap<object, TSchema>();

/** Declares what a route's `params`, `querystring`, `body` or `headers` schema means, for the document only. */
export function documentAs<T extends object>(schema: T, meaning: TSchema): T {
  meanings.set(schema, meaning);
  return schema;
}

export const meaningOf = (schema: unknown): TSchema | undefined =>
  schema !== null && typeof schema === 'object' ? meanings.get(schema) : undefined;

const requiredMeanings = new WeakSet<TSchema>();

/**
 * The parameters of one source as the document shows them: each optional unless marked with
 * `doc.required` (the interface answers a missing one itself, with its own status).
 */
export function parameterMeanings(props: Record<string, TSchema>) {
  return Type.Object(
    Object.fromEntries(Object.entries(props).map(([k, s]) => [k, requiredMeanings.has(s) ? s : Type.Optional(s)])),
  );
}

/** A schema registered with `app.addSchema` (it has an `$id`), referenced rather than copied. */
export const ref = <T extends TSchema>(schema: T, options?: SchemaOptions) =>
  Type.Unsafe<Static<T>>(Type.Ref(schema.$id!, options));

/** How parameters read (docs/INTERFACE.md §1), for the descriptions of parameters. */
export const doc = {
  text: (description: string, maxLength?: number) => Type.String({ description, ...(maxLength ? { maxLength } : {}) }),
  choice: (values: readonly string[], description: string) => Type.String({ enum: [...values], description }),
  integer: (description: string, minimum = 0) => Type.Integer({ minimum, description }),
  flag: (description: string) =>
    Type.Boolean({
      description: `${description} \`true\` or \`false\` (\`1\`/\`0\`, \`yes\`/\`no\` and \`y\`/\`n\` read the same).`,
    }),
  /** A flag where a typo must not pass for false (a dry run): only these four values. */
  strictFlag: (description: string) =>
    Type.Boolean({
      description: `${description} \`true\` or \`false\` (\`1\`/\`0\`), in any case; anything else is a 400.`,
    }),
  /** A list: comma-separated text (`a,b`), a repeated form key, or a JSON array (of `entry`, or of these values). */
  list: (description: string, entry: readonly string[] | TSchema = Type.String()) => {
    const values = Array.isArray(entry) ? (entry as readonly string[]) : undefined;
    const of = values ? `; of ${values.join(', ')}` : '';
    return Type.Union([Type.String(), Type.Array(values ? Type.String({ enum: [...values] }) : (entry as TSchema))], {
      description: `${description} Comma-separated (\`a,b\`), a repeated form key or a JSON array${of}.`,
    });
  },
  /** A number naming something, or empty/null to clear it; an embedded object posted back is read by its `key`. */
  reference: (description: string, key: 'id' | 'number') =>
    Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: `${description} An object with its \`${key}\` (as in an item posted back whole) is read the same.`,
    }),
  required: <T extends TSchema>(schema: T): T => {
    requiredMeanings.add(schema);
    return schema;
  },
};

export const ErrorSchema = Type.Object(
  {
    code: Type.Integer({ description: 'The HTTP status, again.' }),
    message: Type.String({ description: 'One sentence a person can act on.' }),
    errors: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: Type.String(),
          description: 'On validation errors: each offending parameter, and what is wrong with it.',
        },
      ),
    ),
  },
  {
    $id: 'Error',
    description: 'Every error of the interface has this shape (docs/INTERFACE.md §3).',
    examples: [
      {
        code: 400,
        message: 'Invalid parameter status: must be one of backlog, in-progress, completed, accepted.',
        errors: { status: 'must be one of backlog, in-progress, completed, accepted' },
      },
    ],
  },
);

/** The security requirement of the API: HTTP Basic (email and API key) or a Bearer API key. */
export const API_KEY_SECURITY: Array<Record<string, string[]>> = [{ basicAuth: [] }, { bearerAuth: [] }];
export const METRICS_SECURITY = 'metricsToken';
export const SECURITY_SCHEMES = {
  basicAuth: {
    type: 'http',
    scheme: 'basic',
    description: "The user's email as the user name, the API key as the password.",
  },
  bearerAuth: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer <API key>`.' },
  [METRICS_SECURITY]: {
    type: 'http',
    scheme: 'bearer',
    description: "`Authorization: Bearer <METRICS_TOKEN>`, the operator's scraper's: not an API key.",
  },
} as const;

export type ErrorStatus = 400 | 401 | 403 | 404 | 410 | 412 | 413 | 422 | 429 | 503;
export type Explained = Partial<Record<ErrorStatus, string>>;

const RETRY_AFTER = { 'Retry-After': { type: 'integer', description: 'Seconds to wait before trying again.' } };
const HEADERS: Partial<Record<ErrorStatus, object>> = { 429: RETRY_AFTER, 503: RETRY_AFTER };

/** What any route that reads the database can answer. */
export const UNAVAILABLE: Explained = {
  503: 'The database cannot be reached right now, or cannot store a change (out of space, or read-only).',
};

export const TOO_LARGE = 'The body is larger than 1 MiB.';
/** What any route that reads a body can answer, besides its own errors (docs/INTERFACE.md §3). */
export const BODY_ERRORS: Explained = {
  400:
    'The body is not valid form data or JSON, is not UTF-8, has too many name=value pairs or JSON keys, ' +
    'or is of another content type.',
  413: TOO_LARGE,
};

/** A 200 that is JSON for programs and an HTML page for a browser (Accept: text/html), as links in mail answer. */
export function jsonOrPage(schema: TSchema, description: string, headers?: object) {
  return {
    description,
    ...(headers ? { headers } : {}),
    content: { 'application/json': { schema }, 'text/html': { schema: Type.String() } },
  };
}

/**
 * Error answers of a route, each the shared Error schema with a description of when it is given.
 * Several sets may explain one status: their sentences are joined. With `html`, the answer is an
 * HTML page for a browser (Accept: text/html) and the error JSON otherwise.
 */
export function errorAnswers(
  sets: Explained[],
  options: { html?: readonly ErrorStatus[] } = {},
): Record<string, object> {
  const joined = new Map<ErrorStatus, string[]>();
  for (const set of sets) {
    for (const [status, text] of Object.entries(set) as [string, string][]) {
      const key = Number(status) as ErrorStatus;
      joined.set(key, [...(joined.get(key) ?? []), text]);
    }
  }
  const answers: Record<string, object> = {};
  for (const [status, texts] of [...joined].sort(([a], [b]) => a - b)) {
    const [description, headers] = [texts.join(' '), HEADERS[status]];
    answers[status] = options.html?.includes(status)
      ? jsonOrPage(ref(ErrorSchema), description, headers)
      : ref(ErrorSchema, { description, ...(headers ? { headers } : {}) });
  }
  return answers;
}

/** What the hooks of a scope add to each of its routes: a security requirement, and error answers. */
export interface ScopeDocumentation {
  security?: typeof API_KEY_SECURITY;
  errors: Explained;
  /** Response headers of those errors (`WWW-Authenticate`). */
  headers?: Partial<Record<ErrorStatus, object>>;
  /** Routes the hooks let through untouched (a probe the rate limiter leaves alone): nothing is added to them. */
  exempt?: (route: RouteOptions) => boolean;
}

/** On an answer that scopes added to: the route's own description, and the scopes' sentences (outermost first). */
const EXPLAINED = Symbol('explained');
type Answer = { description?: string; headers?: object; [EXPLAINED]?: { own?: string; scopes: string[] } };

/**
 * Adds `what` to the schema of every route registered in `scope` from now on, so that an error
 * that a hook of the scope answers (credentials, membership) is described where the hook is added,
 * once, and on every route it guards. The sentences read in the order the checks run: outer
 * scopes' hooks first, the route's own last.
 */
export function documentScope(scope: FastifyInstance, what: ScopeDocumentation): void {
  scope.addHook('onRoute', (route) => {
    if (what.exempt?.(route)) return;
    const schema: FastifySchema = { ...route.schema };
    const errors = { ...(schema.errors as Record<string, Answer> | undefined) };
    for (const [status, text] of Object.entries(what.errors) as [string, string][]) {
      const previous: Answer = errors[status] ?? errorAnswers([{ [status]: text }])[status];
      const explained = previous[EXPLAINED] ?? { own: errors[status]?.description, scopes: [] };
      const scopes = [...explained.scopes, text];
      const headers = { ...previous.headers, ...what.headers?.[Number(status) as ErrorStatus] };
      errors[status] = {
        ...previous,
        description: [...scopes, explained.own].filter(Boolean).join(' '),
        ...(Object.keys(headers).length ? { headers } : {}),
        [EXPLAINED]: { own: explained.own, scopes },
      };
    }
    route.schema = { ...schema, errors, ...(what.security ? { security: what.security } : {}) };
  });
}
