import type { FastifyInstance } from 'fastify';
import { presentUser } from './present.js';
import { whoamiSchema } from './schema.js';

/** `/api/user/whoami.json`: the caller, as the API key or the Basic credentials name them. */
export async function userRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/user/whoami.json', { schema: whoamiSchema }, async (request) =>
    presentUser(request.user, request.user.id),
  );
}
