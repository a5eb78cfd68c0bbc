import { ref } from '../http/documentation.js';
import { UserSchema } from './present.js';

export const whoamiSchema = {
  summary: 'Who am I',
  operationId: 'whoami',
  tags: ['people'],
  response: { 200: ref(UserSchema, { description: 'The caller.' }) },
};
