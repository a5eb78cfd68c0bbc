import type { FastifyInstance } from 'fastify';
import { attachmentFile, pathAttachmentId, sendAttachmentFile } from '../../attachments/index.js';
import { numberOf } from './common.js';

const AttachmentPath = {
  params: {
    type: 'object',
    properties: { product_id: { type: 'string' }, item_number: { type: 'string' }, attachment_id: { type: 'string' } },
  },
} as const;

/**
 * An attachment's file for a signed-in member, as the API serves it to API keys (same checks, same
 * headers): what the item page links to, since a browser has a session and no key.
 */
export async function attachmentFileRoutes(app: FastifyInstance): Promise<void> {
  app.get('/items/:item_number/attachments/:attachment_id/file', { schema: AttachmentPath }, async (request, reply) => {
    const file = await attachmentFile(app.db, request.scope, numberOf(request), pathAttachmentId(request));
    return sendAttachmentFile(request, reply, file);
  });
}
