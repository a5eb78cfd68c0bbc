import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ref } from './http/documentation.js';
import { prefersHtml } from './http/negotiate.js';

/** The answer of `GET /` to a program: where the rest of the service is. */
export const RootSchema = Type.Object(
  {
    name: Type.String(),
    links: Type.Object(
      {
        api: Type.String({ description: 'The API: the products of the caller, the way into every other endpoint.' }),
        openapi: Type.String({ description: 'The API described as an OpenAPI 3.1 document.' }),
        docs: Type.String({ description: 'The reference page of the API, for people.' }),
        health: Type.String({ description: 'The health of the service, for load balancers and operators.' }),
        pages: Type.String({ description: 'The pages, for people in a browser.' }),
      },
      { description: 'Paths relative to the address of the service.' },
    ),
  },
  { $id: 'Root' },
);

/**
 * `GET /`: whoever opens the service's address finds the way in. A browser (Accept preferring
 * HTML) is sent to the pages, which show its products or the sign-in page; a program gets the index.
 */
export async function rootRoutes(app: FastifyInstance, options: { pages: string }): Promise<void> {
  const schema = {
    summary: 'Index',
    description:
      'A JSON index of the service for programs; a browser (Accept preferring text/html) is redirected to ' +
      'the pages: its products when signed in, else the sign-in page.',
    operationId: 'index',
    tags: ['service'],
    response: {
      200: ref(RootSchema, { description: 'Where the API, its description and the health check are.' }),
      303: {
        type: 'null',
        description: 'A browser asking for HTML goes to the pages.',
        headers: {
          Location: { type: 'string', description: 'The pages: they show the products, or the sign-in page.' },
        },
      },
    },
  };
  const index = {
    name: 'Shiplog',
    links: {
      api: '/api/products.json',
      openapi: '/openapi.json',
      docs: '/docs',
      health: '/health',
      pages: `${options.pages}/`,
    },
  };
  app.get('/', { schema }, async (request, reply) => {
    if (prefersHtml(request.headers.accept)) return reply.redirect(`${options.pages}/`, 303);
    return index;
  });
}
