import type { InboundRefusalRow } from '../db/schema.js';
import { escapeHtml } from '../http/html.js';
import type { MessageBody, MessageRenderer } from '../mail/index.js';
import type { RefusalReason } from './model.js';
import { findRefusalsByIds } from './repository.js';

/** What each refusal means to its sender, in a sentence before the detail. */
const WHY: Partial<Record<RefusalReason, string>> = {
  unknown_address: 'Shiplog does not know the address you wrote to.',
  not_member: 'Shiplog takes mail to an item only from members of its product.',
  empty: 'There was nothing in it to add.',
  too_long: 'It was too long to be a comment.',
  file_refused: 'One of its files could not be kept.',
};

/** The explanation of a refused message: what was refused, why, and what to do instead. A pure function. */
export function renderRefusalEmail(refusal: InboundRefusalRow, publicUrl: string): { text: string; html: string } {
  const why = WHY[refusal.reason as RefusalReason] ?? 'It could not be added.';
  const subject = refusal.subject ? ` ("${refusal.subject}")` : '';
  const lines = [
    `Your message to ${refusal.recipient}${subject} was not added to Shiplog, and nothing was changed.`,
    '',
    `${why} ${refusal.detail ?? ''}`.trim(),
    '',
    `Members of the product can comment and attach files on the item's page: ${publicUrl}/app/`,
    '',
    '-- ',
    'This is an automatic answer; Shiplog sends at most one an hour to an address, and none to automatic mail.',
  ];
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>Not added to Shiplog</title></head>
<body style="font-family:sans-serif;line-height:1.4">
<p>Your message to ${escapeHtml(refusal.recipient)}${escapeHtml(subject)} was not added to Shiplog, and nothing was
changed.</p>
<p>${escapeHtml(`${why} ${refusal.detail ?? ''}`.trim())}</p>
<p>Members of the product can comment and attach files on
<a href="${escapeHtml(`${publicUrl}/app/`)}">the item's page</a>.</p>
<p style="color:#595959;font-size:small">This is an automatic answer; Shiplog sends at most one an hour to an address,
and none to automatic mail.</p>
</body></html>
`;
  return { text: `${lines.join('\n')}\n`, html };
}

/**
 * Explanations of refused inbound mail, rendered when sent: each answers the refused message
 * (In-Reply-To) and says it is an automatic answer (`Auto-Submitted: auto-replied`, RFC 3834), so
 * that the sender's own automation never answers it and no loop can begin.
 */
export function refusalMessageRenderer(publicUrl: string): MessageRenderer {
  return async (db, messages) => {
    const ids = messages.flatMap((m) => (m.refusal_id === null ? [] : [m.refusal_id]));
    const refusals = new Map((await findRefusalsByIds(db, ids)).map((r) => [r.id, r]));
    const rendered = new Map<number, MessageBody | null>();
    for (const message of messages) {
      const refusal = message.refusal_id === null ? undefined : refusals.get(message.refusal_id);
      if (!refusal) {
        rendered.set(message.id, null);
        continue;
      }
      const thread: Record<string, string> = refusal.in_reply_to
        ? { 'In-Reply-To': refusal.in_reply_to, References: refusal.in_reply_to }
        : {};
      rendered.set(message.id, {
        ...renderRefusalEmail(refusal, publicUrl),
        headers: { ...thread, 'Auto-Submitted': 'auto-replied', 'X-Auto-Response-Suppress': 'All' },
      });
    }
    return rendered;
  };
}
