import { Type } from '@sinclair/typebox';
import { conditionalHeaders, notModifiedAnswer } from '../http/conditional.js';
import { BODY_ERRORS, doc, documentAs, errorAnswers, ref } from '../http/documentation.js';
import { params } from '../http/params.js';
import { ItemParams } from '../http/schemas.js';
import { ATTACHMENTS_PAGE, MAX_NAME_LENGTH } from './input.js';
import { AttachmentSchema } from './present.js';

const tags = ['attachments'];
/** The total of an item's attachments, before paging. */
export const ATTACHMENT_COUNT = 'X-Sprintly-Attachment-Count';

const AttachmentParams = documentAs(
  Type.Object({ product_id: Type.String(), item_number: Type.String(), attachment_id: Type.String() }),
  Type.Object({
    product_id: doc.integer("The product's id."),
    item_number: doc.integer("The item's number within the product."),
    attachment_id: doc.integer("The attachment's id."),
  }),
);

const ITEM_MISSING = { 404: 'No item with that number in the product.' };
const ATTACHMENT_MISSING = {
  404: 'No item with that number in the product, or no attachment with that id on that item.',
};
const ONE = (description: string) => ({ 200: ref(AttachmentSchema, { description }) });

export const listAttachmentsSchema = {
  summary: "List an item's attachments",
  description: 'Oldest first, a page at a time.',
  operationId: 'listAttachments',
  tags,
  params: ItemParams,
  querystring: params({
    offset: doc.integer('Entries to skip; 0 by default.'),
    limit: doc.integer(`Page size: ${ATTACHMENTS_PAGE.default} by default, at most ${ATTACHMENTS_PAGE.max}.`, 1),
  }),
  response: {
    200: Type.Array(ref(AttachmentSchema), {
      description: 'The page of attachments.',
      headers: {
        [ATTACHMENT_COUNT]: { type: 'integer', description: 'How many attachments the item has, before paging.' },
      },
    }),
  },
  errors: errorAnswers([{ 400: 'A malformed offset or limit.' }, ITEM_MISSING]),
};

export const uploadAttachmentSchema = {
  summary: 'Attach a file to an item',
  description:
    "Shiplog's addition (Sprint.ly took files by mail and on its pages only), for tools that attach build " +
    'logs and screenshots. Send multipart/form-data with one file part (`curl -F file=@build.log`), named ' +
    'by its file name or a `name` field; or the file as the body itself, of its own type, with `name` in ' +
    'the query string (`curl --data-binary @build.log -H "Content-Type: text/plain" "...?name=build.log"`).',
  operationId: 'uploadAttachment',
  tags,
  params: ItemParams,
  querystring: params({
    name: doc.text(
      `The file's name (for a body that is the file itself). Any path is dropped, control characters ` +
        `removed, and names cut to ${MAX_NAME_LENGTH} characters.`,
    ),
  }),
  // Read by the route itself (multipart, or the bytes as they are); documented as a form.
  body: documentAs(
    Type.Any(),
    Type.Object({
      file: Type.String({ format: 'binary', description: 'The file.' }),
      name: Type.Optional(Type.String({ description: "The file's name, if not the part's file name." })),
    }),
  ),
  // The other way in, the file as the body itself, is in the description: the document gives one
  // schema to every type a route consumes, and such a body is no form.
  consumes: ['multipart/form-data'],
  response: ONE('The attachment as stored.'),
  errors: errorAnswers([
    {
      400:
        'No file (a form or JSON body, a form without a file part, or more than one file), no name for a ' +
        'body that is the file itself, or a multipart body that cannot be read.',
      413:
        'The file is larger than ATTACHMENT_MAX_MB (10 MiB by default), or would take the ' +
        "product's attachments past ATTACHMENTS_PER_PRODUCT_MB (1 GiB by default); nothing is stored.",
    },
    ITEM_MISSING,
    { 400: BODY_ERRORS[400]! },
  ]),
};

export const getAttachmentSchema = {
  summary: 'Get an attachment',
  operationId: 'getAttachment',
  tags,
  params: AttachmentParams,
  response: ONE('The attachment.'),
  errors: errorAnswers([ATTACHMENT_MISSING]),
};

export const deleteAttachmentSchema = {
  summary: 'Delete an attachment',
  description: 'Whoever attached the file, or an admin of the product, may delete it.',
  operationId: 'deleteAttachment',
  tags,
  params: AttachmentParams,
  response: ONE('The attachment as it was.'),
  errors: errorAnswers([
    { 403: 'The caller neither attached the file nor is an admin of the product.' },
    ATTACHMENT_MISSING,
  ]),
};

export const getAttachmentFileSchema = {
  summary: "Download an attachment's file",
  description:
    'The bytes as stored. Images (but SVG), PDF, plain text and JSON are shown inline; every other type is ' +
    'served as application/octet-stream with `Content-Disposition: attachment`, so that no browser runs ' +
    'what was uploaded (no HTML, no SVG, nothing sniffed).',
  operationId: 'getAttachmentFile',
  tags,
  params: AttachmentParams,
  response: {
    200: {
      description: 'The file.',
      headers: {
        'Content-Disposition': {
          type: 'string',
          description: '`inline` or `attachment`, with the file name (`filename*` in UTF-8).',
        },
        'Content-Length': { type: 'integer', description: 'The size of the file in bytes.' },
        ...conditionalHeaders('A strong entity tag of the file: it never changes.'),
      },
      content: { '*/*': { schema: Type.String({ format: 'binary' }) } },
    },
    304: notModifiedAnswer,
  },
  errors: errorAnswers([ATTACHMENT_MISSING]),
};
