import type { FastifyInstance } from 'fastify';
import { presentUser, UserSchema } from './present.js';

export async function userRoutes(app: FastifyInstance): Promise<void> {
  app.get('/api/user/whoami.json', { schema: { response: { 200: UserSchema } } }, async (request) => presentUser(request.user, request.user.id));
}
