/**
 * Attachments: files on an item, kept in the database (every instance sees the same ones), bounded
 * per file and per product. Uploads through the API and the pages, and mail to an item's files
 * address, all go through addAttachment.
 */
export {
  parseUploadForm,
  pathAttachmentId,
  sanitizeContentType,
  sanitizeName,
  Upload,
  type NewAttachment,
} from './input.js';
export { ATTACHMENT_SCHEMAS, AttachmentSchema, presentAttachments, type AttachmentJson } from './present.js';
export { attachmentRoutes, sendAttachmentFile } from './routes.js';
export {
  addAttachment,
  attachmentFile,
  attachmentsOfItem,
  attachmentLimits,
  getAttachment,
  removeAttachment,
  type Attached,
  type AttachmentLimits,
} from './service.js';
