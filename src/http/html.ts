import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { classifyError } from './errors.js';
import { escapeHtml } from './escape.js';
import { prefersHtml } from './negotiate.js';

/** The one escaper, which mail and the pages of links import with the rest of this. */
export { escapeHtml };

/** The pages' one stylesheet (web/views/style.ts, served under the pages' prefix), which these pages share. */
const STYLESHEET_PATH = '/app/style.css';

/** A small page of its own (a link followed from a message): a title and a body of HTML. */
export function page(title: string, body: string): string {
  const head =
    '<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<link rel="stylesheet" href="${STYLESHEET_PATH}">`;
  return `<!doctype html>
<html lang="en"><head>${head}<title>${escapeHtml(title)} \u00b7 Shiplog</title></head>
<body><header><span class="brand">Shiplog</span></header>
<main class="link-page"><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>
`;
}

/** The policy of those pages: the JSON one (http/security-headers.ts), with the pages' stylesheet and own forms. */
const PAGE_POLICY = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'";

/**
 * People click links in mail, programs call them: HTML for browsers, the usual JSON otherwise. The
 * JSON is sent as built: the route's response schemas describe it, and the serialiser, which
 * writes optional fields last, would reorder it.
 */
export function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  title: string,
  html: string,
  json: object,
) {
  reply.code(status);
  if (prefersHtml(request.headers.accept)) {
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', PAGE_POLICY)
      .send(page(title, html));
  }
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(json));
}

/**
 * An error of ours as `answer` gives it, without the parameters it names; anything else goes on
 * to the error handler.
 */
export function failure(request: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (!(err instanceof AppError)) throw err;
  const { status, message, headers } = classifyError(err, request);
  reply.headers(headers);
  return answer(request, reply, status, message, '', { code: status, message });
}
