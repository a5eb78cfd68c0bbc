import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  addAttachment,
  attachmentLimits,
  getAttachment,
  parseUploadForm,
  pathAttachmentId,
  removeAttachment,
  Upload,
} from '../../attachments/index.js';
import { classifyError } from '../../http/errors.js';
import { params, Param } from '../../http/params.js';
import { checkToken, productOf, sessionOf, viewerOf } from '../pages.js';
import { sendPage } from '../session.js';
import { confirmPage } from '../views/conversation.js';
import { html } from '../views/html.js';
import { itemHref } from '../views/parts.js';
import { ItemPath, numberOf } from './common.js';
import { renderItem } from './item.js';
import { backToItem, refused } from './item-conversation.js';

/** What an upload's form may take beyond the file itself: its boundaries, part headers and the form token. */
const MULTIPART_ALLOWANCE = 64 * 1024;

const AttachmentPath = {
  params: {
    type: 'object',
    properties: { product_id: { type: 'string' }, item_number: { type: 'string' }, attachment_id: { type: 'string' } },
  },
} as const;

/**
 * Attaching a file from an item's page (a multipart form, read as the API reads one, through
 * addAttachment and its limits), and deleting one after a confirmation. Multipart bodies are read
 * in this scope only: no other page takes a file.
 */
export async function itemAttachmentRoutes(app: FastifyInstance): Promise<void> {
  const limits = attachmentLimits(app.config);
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, (request, body, done) =>
    done(null, new Upload(body as Buffer, request.headers['content-type'])),
  );

  /** A file past the form's size is refused before it is read: said next to the field, as the service's limit is. */
  const tooLarge = async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (classifyError(error, request).code !== 'body_too_large') throw error;
    const mib = limits.fileBytes / (1024 * 1024);
    const errors = { file: `is larger than ${mib} MiB, the most one attachment may be` };
    const forms = { attachment: { values: {}, errors } };
    return renderItem(app, { request, reply, number: numberOf(request), status: 413, forms });
  };

  app.post(
    '/items/:item_number/attachments',
    { schema: ItemPath, bodyLimit: limits.fileBytes + MULTIPART_ALLOWANCE, errorHandler: tooLarge },
    async (request, reply) => {
      const number = numberOf(request);
      const again = (err: unknown) =>
        refused(app, { request, reply, number, err }, (r) => ({ attachment: { values: {}, ...r } }));
      // A form sent without a file is read as a form: its token is checked first, as every form's is.
      if (!(request.body instanceof Upload)) checkToken(request);
      let form: Awaited<ReturnType<typeof parseUploadForm>>;
      try {
        form = await parseUploadForm(request.body);
      } catch (err) {
        return again(err);
      }
      checkToken(request, form.fields);
      try {
        await app.db.transaction().execute((trx) => addAttachment(trx, request.scope, number, form.file, limits));
      } catch (err) {
        return again(err);
      }
      return backToItem(request, reply, number, 'attached', 'attachments-heading');
    },
  );
  await app.register(deleteRoutes);
}

/** Deleting a file: a confirmation first, then the uploader or an admin deletes it (as removeAttachment decides). */
async function deleteRoutes(app: FastifyInstance): Promise<void> {
  const path = '/items/:item_number/attachments/:attachment_id/delete';
  app.get(path, { schema: AttachmentPath }, async (request, reply) => {
    const number = numberOf(request);
    const { row } = await getAttachment(app.db, request.scope, number, pathAttachmentId(request));
    const page = confirmPage({
      product: productOf(request.scope),
      number,
      viewer: viewerOf(sessionOf(request)),
      what: 'this attachment',
      shown: html`<p><strong>${row.name}</strong></p>`,
      action: `${itemHref(request.scope.product.id, number)}/attachments/${row.id}/delete`,
    });
    return sendPage(reply, 200, `Delete an attachment of #${number}`, page, sessionOf(request));
  });

  app.post(path, { schema: { ...AttachmentPath, body: params({ csrf: Param }) } }, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    const id = pathAttachmentId(request);
    try {
      await app.db.transaction().execute((trx) => removeAttachment(trx, request.scope, number, id));
    } catch (err) {
      return refused(app, { request, reply, number, err }, (r) => ({
        attachment: { values: {}, errors: {}, message: r.message ?? Object.values(r.errors)[0] },
      }));
    }
    return backToItem(request, reply, number, 'detached', 'attachments-heading');
  });
}
