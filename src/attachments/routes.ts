import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { answeredNotModified } from '../http/conditional.js';
import { requestParams } from '../http/request.js';
import type { AttachmentRow } from '../db/schema.js';
import { parseAttachmentsPage, parseUpload, pathAttachmentId, pathItemNumber, Upload } from './input.js';
import { presentAttachments } from './present.js';
import {
  ATTACHMENT_COUNT,
  deleteAttachmentSchema,
  getAttachmentFileSchema,
  getAttachmentSchema,
  listAttachmentsSchema,
  uploadAttachmentSchema,
} from './schema.js';
import {
  addAttachment,
  attachmentFile,
  attachmentLimits,
  getAttachment,
  listAttachments,
  removeAttachment,
  type Attached,
} from './service.js';

/** What a multipart body may take beyond the file itself: its boundaries, part headers and fields. */
const MULTIPART_ALLOWANCE = 64 * 1024;

/**
 * An item's attachments under `/api/products/{id}/items/{n}/` (docs/INTERFACE.md §12): the list,
 * one, its file, an upload and a delete; members only, as every route of a product.
 */
export async function attachmentRoutes(app: FastifyInstance): Promise<void> {
  const limits = attachmentLimits(app.config);
  const list = '/api/products/:product_id/items/:item_number/attachments.json';
  const one = '/api/products/:product_id/items/:item_number/attachments/:attachment_id.json';
  registerUploadParsers(app);

  const answer = async (request: FastifyRequest, attached: Attached) =>
    (await presentAttachments(app.db, request.scope, app.config, attached.item, [attached.row]))[0];

  app.get(list, { schema: listAttachmentsSchema }, async (request, reply) => {
    const page = parseAttachmentsPage(requestParams(request));
    const { item, rows, total } = await listAttachments(app.db, request.scope, pathItemNumber(request), page);
    reply.header(ATTACHMENT_COUNT, String(total));
    return presentAttachments(app.db, request.scope, app.config, item, rows);
  });

  app.post(
    list,
    { schema: uploadAttachmentSchema, bodyLimit: limits.fileBytes + MULTIPART_ALLOWANCE },
    async (request) => {
      const number = pathItemNumber(request);
      const file = await parseUpload(request.body, request.query as Record<string, unknown>);
      const attached = await app.db
        .transaction()
        .execute((trx) => addAttachment(trx, request.scope, number, file, limits));
      return answer(request, attached);
    },
  );

  app.get(one, { schema: getAttachmentSchema }, async (request) =>
    answer(request, await getAttachment(app.db, request.scope, pathItemNumber(request), pathAttachmentId(request))),
  );

  app.delete(one, { schema: deleteAttachmentSchema }, async (request) => {
    const [number, id] = [pathItemNumber(request), pathAttachmentId(request)];
    return answer(
      request,
      await app.db.transaction().execute((trx) => removeAttachment(trx, request.scope, number, id)),
    );
  });

  app.get(
    '/api/products/:product_id/items/:item_number/attachments/:attachment_id/file',
    { schema: getAttachmentFileSchema },
    async (request, reply) => {
      const file = await attachmentFile(app.db, request.scope, pathItemNumber(request), pathAttachmentId(request));
      return sendAttachmentFile(request, reply, file);
    },
  );
}

/**
 * Bodies of the upload: multipart/form-data, and any type the app reads no parameters from (the
 * file itself), each kept as bytes and read by the route (a multipart body is read there, so that
 * one that cannot be read is the route's 400, not a parser's). Form and JSON
 * bodies are still read as parameters everywhere, so that they get a 400 naming the file.
 */
function registerUploadParsers(app: FastifyInstance): void {
  app.removeContentTypeParser('*');
  for (const type of ['multipart/form-data', '*'])
    app.addContentTypeParser(type, { parseAs: 'buffer' }, (request, body, done) =>
      done(null, new Upload(body as Buffer, request.headers['content-type'])),
    );
}

/** Types a browser shows without running anything of them. SVG and HTML are not among them. */
const INLINE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'application/pdf',
  'text/plain',
  'application/json',
]);

/** A Content-Disposition naming the file: its name in ASCII for old clients, and in UTF-8 (RFC 6266). */
function disposition(kind: 'inline' | 'attachment', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const utf8 = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${utf8}`;
}

/**
 * An attachment's bytes: inline only for the types in INLINE, as stored; everything else as
 * application/octet-stream to be saved, never rendered. No sniffing, and a policy that runs
 * nothing even if a browser did render it. Its ETag is its id: a file never changes, and ids are
 * never used again. The caller may keep it (private) but asks again before using it, since
 * membership can end.
 */
export function sendAttachmentFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: AttachmentRow & { bytes: Buffer },
): FastifyReply {
  const essence = file.content_type.split(';')[0];
  const inline = INLINE.has(essence);
  reply
    .header('content-disposition', disposition(inline ? 'inline' : 'attachment', file.name))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .type(inline ? file.content_type : 'application/octet-stream');
  if (answeredNotModified(request, reply, `"attachment-${file.id}"`)) return reply.send();
  return reply.send(file.bytes);
}
