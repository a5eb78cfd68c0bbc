import type { FastifyInstance } from 'fastify';
import { ref } from '../http/documentation.js';
import { presentUser, UserSchema } from './present.js';

export async function userRoutes(app: FastifyInstance): Promise<void> {
  const schema = {
    summary: 'Who am I',
    operationId: 'whoami',
    tags: ['people'],
    response: { 200: ref(UserSchema, { description: 'The caller.' }) },
  };
  app.get('/api/user/whoami.json', { schema }, async (request) => presentUser(request.user, request.user.id));
}
