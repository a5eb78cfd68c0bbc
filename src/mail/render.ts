import type { Db } from '../db/connection.js';
import type { OutboxRow } from '../db/schema.js';

export type MessageBody = { text: string; html: string };

/**
 * Renders a batch of messages of one kind: loads what they are about (the feature that queued
 * them knows where that lives) and feeds it to a pure template. A message whose subject matter
 * is gone maps to null, and is given up.
 */
export type MessageRenderer = (db: Db, messages: OutboxRow[]) => Promise<Map<number, MessageBody | null>>;

/** The renderer of each kind of message (`deploy`, `invitation`), given by the features that queue them. */
export type MessageRenderers = Readonly<Record<string, MessageRenderer>>;

/** The bodies of claimed messages, each by the renderer of its kind; unknown kinds map to null. */
export async function renderMessages(db: Db, messages: OutboxRow[], renderers: MessageRenderers): Promise<Map<number, MessageBody | null>> {
  const rendered = new Map<number, MessageBody | null>(messages.map((m) => [m.id, null]));
  const kinds = new Set(messages.map((m) => m.kind));
  for (const kind of kinds) {
    const render = renderers[kind];
    if (!render) continue;
    for (const [id, body] of await render(db, messages.filter((m) => m.kind === kind))) rendered.set(id, body);
  }
  return rendered;
}
