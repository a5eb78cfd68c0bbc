import type { FastifyRequest } from 'fastify';
import { attachmentNotFound, BadRequestError, itemNotFound, ValidationError } from '../errors.js';
import { asPage, digitsToId, type ParamValue } from '../http/params.js';
import { storableId } from '../db/schema.js';

/** The longest name kept, in characters: as long as a file's name may be on common file systems. */
export const MAX_NAME_LENGTH = 255;
/** A page of an item's attachments. */
export const ATTACHMENTS_PAGE = { default: 100, max: 500 } as const;
/** What a name is when nothing of it is left after sanitizing. */
const FALLBACK_NAME = 'attachment';
/** The longest extension kept whole when a long name is cut. */
const MAX_EXTENSION = 16;

/** What is to be attached: from an upload, or a part of a mail. */
export interface NewAttachment {
  name: string;
  /** As sent; made into a plain media type (sanitizeContentType). */
  contentType: string | undefined;
  bytes: Buffer;
}

// Control characters (C0, DEL, C1), and the format characters that reorder or hide text
// (bidirectional overrides and isolates, zero-width ones): "invoice\u202Efdp.exe" shows as
// "invoiceexe.pdf".
const UNSEEN = /[\p{Cc}\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/gu;

/**
 * A file's name as it is kept and shown: the last part of any path (`/` or `\`), without control
 * or direction characters, trimmed, in NFC, and at most 255 characters (a long name keeps its
 * extension). Nothing left, or only dots, gives `attachment`.
 */
export function sanitizeName(raw: string): string {
  const base = raw.split(/[/\\]/).pop() ?? '';
  const name = base.replace(UNSEEN, '').normalize('NFC').trim();
  if (/^\.*$/.test(name)) return FALLBACK_NAME;
  const chars = [...name];
  if (chars.length <= MAX_NAME_LENGTH) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? [...name.slice(dot)] : [];
  if (extension.length < 2 || extension.length > MAX_EXTENSION) return chars.slice(0, MAX_NAME_LENGTH).join('');
  return [...chars.slice(0, MAX_NAME_LENGTH - extension.length), ...extension].join('').trim();
}

const TOKEN = "[!#$%&'*+.^_`|~0-9a-z-]+";
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})$`);
const CHARSET = new RegExp(`(?:^|;)\\s*charset\\s*=\\s*"?(${TOKEN})"?\\s*(?:;|$)`);

/**
 * A sent Content-Type as it is kept: `type/subtype` in lower case, with its charset if it gave
 * one; anything that does not read as a media type is application/octet-stream.
 */
export function sanitizeContentType(raw: string | undefined): string {
  const value = (raw ?? '').toLowerCase();
  const [essence, ...rest] = value.split(';');
  const match = MEDIA_TYPE.exec(essence.trim());
  if (!match || essence.length > 127) return 'application/octet-stream';
  const charset = CHARSET.exec(`;${rest.join(';')}`)?.[1];
  return charset && charset.length <= 40 ? `${match[0]}; charset=${charset}` : match[0];
}

/** The attachment id of a path; anything but digits, or past what can be stored, names none. */
export function pathAttachmentId(request: FastifyRequest): number {
  const id = digitsToId((request.params as { attachment_id: string }).attachment_id);
  if (id === undefined || !storableId(id)) throw attachmentNotFound();
  return id;
}

/** The item number of a path; anything but digits names none. */
export function pathItemNumber(request: FastifyRequest): number {
  const raw = (request.params as { item_number: string }).item_number;
  const number = digitsToId(raw);
  if (number === undefined) throw itemNotFound(raw);
  return number;
}

export const parseAttachmentsPage = (p: Record<string, ParamValue>) => asPage(p, ATTACHMENTS_PAGE);

/**
 * A body the upload route received, unread: its bytes and its Content-Type. A class, so that no
 * JSON or form body passes for one.
 */
export class Upload {
  constructor(
    readonly bytes: Buffer,
    readonly contentType: string | undefined,
  ) {}
}

const MULTIPART = /^multipart\/form-data\s*(;|$)/i;

/**
 * What an upload attaches: the one file of a multipart/form-data body (named by its `name` field,
 * else `name` in the query string, else the part's file name), or a body of any other type but
 * form and JSON, named by `name` in the query string, its type the request's Content-Type. A
 * form or JSON body carries no file (400).
 */
export async function parseUpload(body: unknown, query: Record<string, unknown>): Promise<NewAttachment> {
  const given = typeof query.name === 'string' ? query.name : undefined;
  if (!(body instanceof Upload)) {
    throw new ValidationError(
      { file: 'is required' },
      'Send the file as multipart/form-data (a part named file), ' +
        'or as the body itself (any type but form or JSON) with name in the query string.',
    );
  }
  if (!MULTIPART.test(body.contentType ?? ''))
    return { name: requiredName(given), contentType: body.contentType, bytes: body.bytes };
  const { file, fields } = await readMultipart(body.bytes, body.contentType!);
  return { ...file, name: requiredName(firstGiven(fields.name, given, file.name)) };
}

/**
 * The upload form of a page: its one file, named as parseUpload names it (the form's `name`, else
 * the file's own), and its text fields (the form token among them). A browser sends a file input
 * left empty as a part with no name and no bytes: that is no file.
 */
export async function parseUploadForm(body: unknown): Promise<{ file: NewAttachment; fields: Record<string, string> }> {
  if (!(body instanceof Upload) || !MULTIPART.test(body.contentType ?? ''))
    throw new ValidationError({ file: 'is required: send the form as multipart/form-data' });
  const { file, fields } = await readMultipart(body.bytes, body.contentType!);
  if (file.name === '' && file.bytes.length === 0) throw new ValidationError({ file: 'is required: choose a file' });
  return { file: { ...file, name: requiredName(firstGiven(fields.name, file.name)) }, fields };
}

const firstGiven = (...names: (string | undefined)[]) => names.find((n) => n !== undefined && n.trim() !== '');

function requiredName(name: string | undefined): string {
  if (name === undefined || name.trim() === '') throw new ValidationError({ name: 'is required: the file name' });
  return name;
}

/** multipart/form-data: its one file, and its text fields; a second file, or none, is a 400. */
async function readMultipart(
  body: Buffer,
  contentType: string,
): Promise<{ file: NewAttachment; fields: Record<string, string> }> {
  let form: FormData;
  try {
    // The platform's own reader of form data (undici's, as fetch uses).
    form = await new Response(
      new Uint8Array(body.buffer, body.byteOffset, body.byteLength) as Uint8Array<ArrayBuffer>,
      { headers: { 'content-type': contentType } },
    ).formData();
  } catch {
    throw new BadRequestError('The multipart/form-data body could not be read.');
  }
  const fields: Record<string, string> = {};
  const files: File[] = [];
  for (const [key, value] of form) {
    if (typeof value === 'string') fields[key] ??= value;
    else files.push(value);
  }
  if (files.length === 0) throw new ValidationError({ file: 'is required: a part with a file' });
  if (files.length > 1) throw new ValidationError({ file: 'one file per request' });
  const [file] = files;
  const bytes = Buffer.from(await file.arrayBuffer());
  return { file: { name: file.name, contentType: file.type || undefined, bytes }, fields };
}
