import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';
import { renderDeployMessages } from './deploy-email.js';
import { renderInvitationMessages } from './invitation-email.js';
import type { UnsubscribeLinks } from './unsubscribe.js';

/**
 * The bodies of claimed messages, each by the renderer of its kind, a batch at a time. A message
 * whose subject matter is gone, or of a kind this version does not know, maps to null (given up).
 */
export async function renderMessages(
  db: Db,
  messages: OutboxRow[],
  publicUrl: string,
  links: UnsubscribeLinks,
): Promise<Map<number, { text: string; html: string } | null>> {
  const deploys = messages.filter((m) => m.kind === 'deploy');
  const invitations = messages.filter((m) => m.kind === 'invitation');
  const rendered = new Map<number, { text: string; html: string } | null>(messages.map((m) => [m.id, null]));
  if (deploys.length) for (const [id, body] of await renderDeployMessages(db, deploys, publicUrl, links)) rendered.set(id, body);
  if (invitations.length) for (const [id, body] of await renderInvitationMessages(db, invitations, links)) rendered.set(id, body);
  return rendered;
}
